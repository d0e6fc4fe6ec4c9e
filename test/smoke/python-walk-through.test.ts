import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

import { INTEGRATOR_SLOW_MS, runInShell, startSandbox } from '../helpers/integrator-machine';
import { INTEGRATORS_GUIDE } from '../helpers/integrators-guide';
import { type IngressProcess, killAll, type ServiceProcess } from '../helpers/processes';

/**
 * The contract outside TypeScript: the integrators guide's Python walk-through ("The walk-through in
 * Python", standard library only), saved as a file in a folder of its own and run with `python3`
 * against a real ingress and worker on the sandbox, with the password its first start prints, twice.
 */

/** The guide's one `python` block. */
function pythonWalkThrough(): string {
  const block = /```python\n([\s\S]*?)```/.exec(INTEGRATORS_GUIDE)?.[1];
  if (!block) throw new Error('docs/integrators.md: no python block');
  return block;
}

describe("The integrators guide's walk-through in Python", () => {
  let folder: string;
  let ingress: Promise<IngressProcess> | undefined;
  let worker: ServiceProcess | undefined;
  let serviceEnv: Record<string, string>;

  beforeAll(async () => {
    folder = mkdtempSync(path.join(tmpdir(), 'python-walk-through-'));
    const sandbox = await startSandbox('python-walk-through-secret-of-32-characters', (processes) => {
      ingress = processes.ingress;
      worker = processes.worker;
    });
    serviceEnv = sandbox.env;
  }, 2 * INTEGRATOR_SLOW_MS);

  afterAll(async () => {
    await killAll((await ingress?.catch(() => undefined))?.process, worker);
    if (folder) rmSync(folder, { recursive: true, force: true });
  });

  it(
    'When the Python block runs with python3 against the sandbox, then it completes, and again on the same sandbox',
    async () => {
      writeFileSync(path.join(folder, 'walk_through.py'), pythonWalkThrough());
      for (const attempt of ['first', 'second']) {
        const walked = await runInShell(folder, 'python3', ['walk_through.py'], serviceEnv);
        expect({ attempt, ...walked }).toMatchObject({ attempt, code: 0, stderr: '' });
        expect(walked.stdout).toContain('UserSeeding Completed');
        expect(walked.stdout).toContain('PlayerSeeding Completed');
        expect(walked.stdout).toContain("rating input ['7001', '7002']");
        expect(walked.stdout).toContain('mapped players 7001 7002');
      }
    },
    INTEGRATOR_SLOW_MS,
  );
});
