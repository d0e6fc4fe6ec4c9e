import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

import { guideTypeScriptSettings, guideWalkThrough } from '../helpers/integrators-guide';
import { PROJECT_ROOT } from '../helpers/processes';

/**
 * What an integrator who writes TypeScript meets (issue 42): a project made by `npm init -y` (a
 * CommonJS package, npm's default) and `tsc --init` (its defaults as each compiler writes them:
 * `"types": []`, `exactOptionalPropertyTypes`, `verbatimModuleSyntax`...), with TypeScript as npm
 * installs it today (7.x) and the 5.9 line, `@types/node` and the packed client. The guide's
 * walk-through, saved as `walk-through.mts` as the guide says, compiles there with only the settings the
 * guide names ("As TypeScript"), and its JavaScript is emitted to `dist/`, never over a `walk-through.mjs`
 * beside it.
 */

const CLIENT_ROOT = path.join(PROJECT_ROOT, 'clients', 'typescript');
const SLOW_MS = 300_000;

/** What a new shell of the integrator's has (see typed-client-package.test.ts). */
const SHELL_ENV = Object.fromEntries(
  Object.entries(process.env).filter(
    (entry): entry is [string, string] =>
      entry[1] !== undefined &&
      /^(PATH|HOME|TMPDIR|npm_config_(cache|registry|cafile|ca)|(https?|no)_proxy|NODE_EXTRA_CA_CERTS|SSL_CERT_(FILE|DIR))$/i.test(
        entry[0],
      ),
  ),
);

function run(cwd: string, command: string, args: readonly string[]) {
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve, reject) => {
    const child = spawn(command, args, { cwd, env: { ...SHELL_ENV, NO_COLOR: '1' } });
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

describe('The walk-through as TypeScript, in projects made by npm init -y and tsc --init', () => {
  let packDir: string;
  let tarball: string;
  const projects: string[] = [];

  beforeAll(async () => {
    packDir = mkdtempSync(path.join(tmpdir(), 'client-pack-'));
    const packed = await run(PROJECT_ROOT, 'npm', [
      'run',
      'client:pack',
      '--',
      '--pack-destination',
      packDir,
    ]);
    expect(packed).toMatchObject({ code: 0 });
    const { version } = JSON.parse(readFileSync(path.join(CLIENT_ROOT, 'package.json'), 'utf8')) as {
      version: string;
    };
    tarball = path.join(packDir, `fantasy-team-service-client-${version}.tgz`);
  }, SLOW_MS);

  afterAll(() => {
    for (const dir of [packDir, ...projects]) if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it.each([
    ['7', /^Version 7\./],
    ['5.9', /^Version 5\.9\./],
  ])(
    'When TypeScript %s compiles the walk-through with the settings the guide names, then it has no error',
    async (typescript, versionLine) => {
      const project = mkdtempSync(path.join(tmpdir(), `ts${typescript}-project-`));
      projects.push(project);
      expect(await run(project, 'npm', ['init', '-y'])).toMatchObject({ code: 0 });
      const installed = await run(project, 'npm', [
        'install',
        '--prefer-offline',
        '--no-audit',
        '--no-fund',
        tarball,
        `typescript@${typescript}`,
        ...guideTypeScriptSettings().packages,
      ]);
      expect(installed).toMatchObject({ code: 0 });
      const tsc = path.join(project, 'node_modules', '.bin', 'tsc');
      expect((await run(project, tsc, ['--version'])).stdout).toMatch(versionLine);
      expect(await run(project, tsc, ['--init'])).toMatchObject({ code: 0 });

      // Only what the guide says to change in the tsconfig.json tsc --init wrote.
      const tsconfigPath = path.join(project, 'tsconfig.json');
      let tsconfig = readFileSync(tsconfigPath, 'utf8');
      for (const [from, to] of guideTypeScriptSettings().edits) {
        expect({ typescript, from, found: tsconfig.includes(from) }).toEqual({
          typescript,
          from,
          found: true,
        });
        tsconfig = tsconfig.replace(from, to);
      }
      writeFileSync(tsconfigPath, tsconfig);
      writeFileSync(path.join(project, 'walk-through.mts'), guideWalkThrough());
      writeFileSync(path.join(project, 'walk-through.mjs'), "// the guide's JavaScript, kept\n");

      const compiled = await run(project, tsc, []);
      expect({ typescript, ...compiled }).toEqual({ typescript, code: 0, stdout: '', stderr: '' });
      expect(readFileSync(path.join(project, 'walk-through.mjs'), 'utf8')).toBe(
        "// the guide's JavaScript, kept\n",
      );
      expect(readFileSync(path.join(project, 'dist', 'walk-through.mjs'), 'utf8')).toContain(
        'getTeamRatingInput',
      );
    },
    SLOW_MS,
  );
});
