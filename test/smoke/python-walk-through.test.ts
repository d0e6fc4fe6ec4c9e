import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

import { SANDBOX_BANNER_TITLE } from '../../ingress/auth/sandbox-admin';
import { testRedisEnv, uniquePrefix } from '../helpers/app-fixture';
import { INTEGRATORS_GUIDE } from '../helpers/integrators-guide';
import {
  eventually,
  type IngressProcess,
  killAll,
  type ServiceProcess,
  startIngressProcess,
  startServiceProcess,
} from '../helpers/processes';

/**
 * The contract outside TypeScript: the integrators guide's Python walk-through ("The walk-through in
 * Python", standard library only), saved as a file in a folder of its own and run with `python3`
 * against a real ingress and worker on the sandbox, with the password its first start prints, twice.
 */

const SLOW_MS = 180_000;

/** The guide's one `python` block. */
function pythonWalkThrough(): string {
  const block = /```python\n([\s\S]*?)```/.exec(INTEGRATORS_GUIDE)?.[1];
  if (!block) throw new Error('docs/integrators.md: no python block');
  return block;
}

function runPython(cwd: string, file: string, env: Record<string, string>) {
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve, reject) => {
    const child = spawn('python3', [file], {
      cwd,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), SLOW_MS);
    child.once('error', reject);
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

describe("The integrators guide's walk-through in Python", () => {
  let folder: string;
  let ingress: IngressProcess | undefined;
  let worker: ServiceProcess | undefined;
  let serviceEnv: Record<string, string>;

  beforeAll(async () => {
    folder = mkdtempSync(path.join(tmpdir(), 'python-walk-through-'));
    // A development start on loopback with no ADMIN_EMAIL: the sandbox, as `npm start` makes it.
    const env = {
      ...testRedisEnv(),
      REDIS_KEY_PREFIX: uniquePrefix(),
      NODE_ENV: 'development',
      HOST: '127.0.0.1',
      METRICS_PORT: '0',
      ADMIN_EMAIL: '',
      ADMIN_PASSWORD: '',
      JWT_SECRET: 'python-walk-through-secret-of-32-characters',
    };
    worker = startServiceProcess('workers/main.ts', env);
    ingress = await startIngressProcess(env, SLOW_MS);
    await ingress.process.waitForOutput(SANDBOX_BANNER_TITLE, SLOW_MS);
    await eventually(() => /password: +\S+/.test(ingress!.process.stdout()), 10_000);
    await worker.waitForOutput('worker ready', SLOW_MS);
    const output = ingress.process.stdout();
    const password = /password: +(\S+)/.exec(output.slice(output.indexOf(SANDBOX_BANNER_TITLE)))?.[1] ?? '';
    serviceEnv = { SERVICE_URL: ingress.baseUrl, SANDBOX_ADMIN_PASSWORD: password };
  }, 2 * SLOW_MS);

  afterAll(async () => {
    await killAll(ingress?.process, worker);
    if (folder) rmSync(folder, { recursive: true, force: true });
  });

  it(
    'When the Python block runs with python3 against the sandbox, then it completes, and again on the same sandbox',
    async () => {
      writeFileSync(path.join(folder, 'walk_through.py'), pythonWalkThrough());
      for (const attempt of ['first', 'second']) {
        const walked = await runPython(folder, 'walk_through.py', serviceEnv);
        expect({ attempt, ...walked }).toMatchObject({ attempt, code: 0, stderr: '' });
        expect(walked.stdout).toContain('UserSeeding Completed');
        expect(walked.stdout).toContain('PlayerSeeding Completed');
        expect(walked.stdout).toContain("rating input ['7001', '7002']");
        expect(walked.stdout).toContain('mapped players 7001 7002');
      }
    },
    SLOW_MS,
  );
});
