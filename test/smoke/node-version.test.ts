/**
 * `npm start`, `npm run dev` and `npm test` stop at once on a Node older than package.json's
 * `engines.node`, with one line (scripts/check-node.cjs). An older Node is faked by a `node` first
 * on PATH that runs this one with `process.version` replaced; the Node this machine has in
 * /usr/bin, when it is older, is tried as it is.
 */
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

import { PROJECT_ROOT } from '../helpers/processes';

const CHECK = path.join(PROJECT_ROOT, 'scripts', 'check-node.cjs');
const required = Number(
  /\d+/.exec(
    (
      JSON.parse(readFileSync(path.join(PROJECT_ROOT, 'package.json'), 'utf8')) as {
        engines: { node: string };
      }
    ).engines.node,
  )?.[0],
);
const refusal = (version: string) =>
  `This service needs Node ${required} or newer, and this is Node ${version}: install Node ${required} (https://nodejs.org/en/download, or \`nvm install ${required}\`) and run it again.`;

function run(
  file: string,
  args: string[],
  env: NodeJS.ProcessEnv,
): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(file, args, { cwd: PROJECT_ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.once('exit', (code) => resolve({ code, output }));
  });
}

describe('On a Node older than engines.node, the service refuses to start or test in one line', () => {
  const oldVersion = `v${required - 4}.1.0`;
  let fakeBin: string;

  beforeAll(() => {
    fakeBin = mkdtempSync(path.join(tmpdir(), 'fts-old-node-'));
    const shim = path.join(fakeBin, 'old-version.cjs');
    writeFileSync(shim, `Object.defineProperty(process, 'version', { value: '${oldVersion}' });\n`);
    writeFileSync(path.join(fakeBin, 'node'), `#!/bin/sh\nexec '${process.execPath}' -r '${shim}' "$@"\n`);
    chmodSync(path.join(fakeBin, 'node'), 0o755);
  });

  afterAll(() => rmSync(fakeBin, { recursive: true, force: true }));

  const oldNodeEnv = (): NodeJS.ProcessEnv => ({
    ...process.env,
    PATH: `${fakeBin}:${process.env.PATH ?? ''}`,
  });

  it('When the check runs on an older Node, then it prints one line naming the version needed and exits 1', async () => {
    const { code, output } = await run('node', [CHECK], oldNodeEnv());
    expect(code).toBe(1);
    expect(output).toBe(`${refusal(oldVersion)}\n`);
  });

  it('When the check runs on this Node, then it says nothing and exits 0', async () => {
    expect(await run(process.execPath, [CHECK], process.env)).toEqual({ code: 0, output: '' });
  });

  it.each([['start'], ['test'], ['run dev']])(
    'When `npm %s` runs on an older Node, then it stops at once with that one line and runs nothing else',
    async (command) => {
      const { code, output } = await run('npm', [...command.split(' '), '--silent'], oldNodeEnv());
      expect(code).not.toBe(0);
      expect(output.split('\n').filter((line) => line.trim() !== '')).toEqual([refusal(oldVersion)]);
    },
    60_000,
  );

  const systemNode = '/usr/bin/node';
  const systemVersion = spawnSync(systemNode, ['--version'], { encoding: 'utf8' }).stdout?.trim() ?? '';
  const systemIsOlder =
    /^v\d+/.test(systemVersion) && Number(systemVersion.slice(1).split('.')[0]) < required;
  (systemIsOlder ? it : it.skip)(
    `When the check runs on this machine's ${systemNode} (${systemVersion || 'absent'}), then it refuses in one line`,
    async () => {
      const { code, output } = await run(systemNode, [CHECK], process.env);
      expect(code).toBe(1);
      expect(output).toBe(`${refusal(systemVersion)}\n`);
    },
  );
});
