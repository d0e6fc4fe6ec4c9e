import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

import { SANDBOX_ADMIN_EMAIL } from '../../ingress/auth/sandbox-admin';
import { CONTRACT_VERSION } from '../../ingress/openapi/openapi-document';
import {
  CLIENT_ROOT,
  INTEGRATOR_SLOW_MS as SLOW_MS,
  npmInstall,
  packClient,
  runInShell as run,
  startSandbox,
} from '../helpers/integrator-machine';
import { guideTypeScriptSettings, guideWalkThrough } from '../helpers/integrators-guide';
import { type IngressProcess, killAll, PROJECT_ROOT, type ServiceProcess } from '../helpers/processes';

/**
 * What an integrator does on a machine of their own: `npm run client:pack`, the tarball installed
 * into a project of its own outside this repository (its own package.json, no way to reach the
 * repository's node_modules), the integrators guide's walk-through saved as a file there and run
 * with plain `node` against a real ingress and worker, on the sandbox's own administrator and the
 * password its first start prints. The same project also `require`s the client, and compiles
 * against it under `tsc --init`'s defaults.
 */

const TSC = path.join(PROJECT_ROOT, 'node_modules', 'typescript', 'bin', 'tsc');

describe('The typed client, packed and installed into a project outside the repository', () => {
  let packDir: string;
  let tarball: string;
  let project: string;
  /** The projects of the TypeScript tests below, made by npm init -y. */
  const typescriptProjects: string[] = [];
  let ingress: Promise<IngressProcess> | undefined;
  let worker: ServiceProcess | undefined;
  let serviceEnv: Record<string, string>;

  beforeAll(async () => {
    packDir = mkdtempSync(path.join(tmpdir(), 'client-pack-'));
    project = mkdtempSync(path.join(tmpdir(), 'client-project-'));
    // Started while the client is packed and installed; awaited after.
    const sandbox = startSandbox('typed-client-package-secret-of-32-characters', (processes) => {
      ingress = processes.ingress;
      worker = processes.worker;
    });
    sandbox.catch(() => undefined);

    // The package, as `npm run client:pack` writes it, then installed from the tarball, as the guide
    // says; its dependency comes from the npm cache or the registry.
    tarball = await packClient(packDir);
    writeFileSync(
      path.join(project, 'package.json'),
      JSON.stringify({ name: 'walk-through', private: true, type: 'module' }, null, 2),
    );
    expect(await npmInstall(project, [tarball])).toMatchObject({ code: 0 });
    serviceEnv = (await sandbox).env;
  }, 2 * SLOW_MS);

  afterAll(async () => {
    await killAll((await ingress?.catch(() => undefined))?.process, worker);
    for (const dir of [packDir, project, ...typescriptProjects])
      if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('When the package is packed, then it ships JavaScript and declarations only, versioned as the contract', () => {
    const installed = path.join(project, 'node_modules', '@fantasy-team-service', 'client');
    const files = readdirSync(installed, { recursive: true, withFileTypes: true })
      .filter((entry) => entry.isFile())
      .map((entry) => path.relative(installed, path.join(entry.parentPath, entry.name)));
    expect(files.filter((file) => !/^package\.json$|^dist\/.*\.(js|mjs|d\.ts|d\.mts)$/.test(file))).toEqual(
      [],
    );
    expect(files).toContain('dist/esm/index.mjs');
    const manifest = JSON.parse(readFileSync(path.join(installed, 'package.json'), 'utf8')) as {
      version: string;
      exports: Record<string, unknown>;
    };
    expect(manifest.version).toBe(CONTRACT_VERSION);
    const own = JSON.parse(readFileSync(path.join(CLIENT_ROOT, 'package.json'), 'utf8')) as {
      version: string;
    };
    expect(own.version).toBe(CONTRACT_VERSION);
    expect(manifest.exports['.']).toEqual({
      import: { types: './dist/esm/index.d.mts', default: './dist/esm/index.mjs' },
      require: { types: './dist/cjs/index.d.ts', default: './dist/cjs/index.js' },
    });
  });

  it(
    "When the integrators guide's walk-through runs with plain node in that project, then it completes, and again on the same sandbox",
    async () => {
      writeFileSync(path.join(project, 'walk-through.mjs'), guideWalkThrough());

      for (const attempt of ['first', 'second']) {
        const walked = await run(project, process.execPath, ['walk-through.mjs'], serviceEnv);
        expect({ attempt, ...walked }).toMatchObject({ attempt, code: 0, stderr: '' });
        expect(walked.stdout).toContain('UserSeeding Completed');
        expect(walked.stdout).toContain('PlayerSeeding Completed');
        expect(walked.stdout).toMatch(/rating input \{[\s\S]*'7001'[\s\S]*'7002'/);
        expect(walked.stdout).toContain('mapped players 7001 7002');
      }
    },
    SLOW_MS,
  );

  it(
    'When the project requires the client (CommonJS), then it signs in, and a refusal is the same FantasyApiError class import gives',
    async () => {
      writeFileSync(
        path.join(project, 'require.cjs'),
        [
          "const { FantasyApiError, FantasyTeamClient } = require('@fantasy-team-service/client');",
          'const baseUrl = process.env.SERVICE_URL;',
          `const email = ${JSON.stringify(SANDBOX_ADMIN_EMAIL)};`,
          'const main = async () => {',
          '  const admin = new FantasyTeamClient({ baseUrl, credentials: { email, password: process.env.SANDBOX_ADMIN_PASSWORD } });',
          '  console.log((await admin.readModel.currentUser()).data[0].email);',
          "  const stranger = new FantasyTeamClient({ baseUrl, credentials: { email, password: 'not the password' } });",
          '  const refused = await stranger.readModel.currentUser().catch((error) => error);',
          "  const esm = await import('@fantasy-team-service/client');",
          '  console.log(refused instanceof FantasyApiError, refused instanceof esm.FantasyApiError, refused.status);',
          '};',
          'main().catch((error) => { console.error(error); process.exitCode = 1; });',
          '',
        ].join('\n'),
      );

      const required = await run(project, process.execPath, ['require.cjs'], serviceEnv);
      expect(required).toEqual({ code: 0, stdout: `${SANDBOX_ADMIN_EMAIL}\ntrue true 401\n`, stderr: '' });
    },
    SLOW_MS,
  );

  it(
    'When a project made by tsc --init compiles against the client, then it has no error and its output runs on node',
    async () => {
      const init = await run(project, process.execPath, [TSC, '--init']);
      expect(init.code).toBe(0);
      writeFileSync(
        path.join(project, 'typed.ts'),
        [
          "import { FantasyApiError, FantasyTeamClient, type QueryAnswer } from '@fantasy-team-service/client';",
          '',
          "const client = new FantasyTeamClient({ baseUrl: 'http://127.0.0.1:8080', retry: { maxRetries: 1 } });",
          "const answer: QueryAnswer<'CurrentUser'> | undefined = undefined;",
          "console.log(typeof client.readModel.currentUser, answer, new FantasyApiError('CurrentUser', 401, undefined).message);",
          '',
        ].join('\n'),
      );
      writeFileSync(
        path.join(project, 'legacy.cts'),
        [
          "import client = require('@fantasy-team-service/client');",
          '',
          "console.log(client.basicAuthorization('ana@example.com', 'Grüße'));",
          '',
        ].join('\n'),
      );

      const compiled = await run(project, process.execPath, [TSC]);
      expect(compiled).toEqual({ code: 0, stdout: '', stderr: '' });
      const typed = await run(project, process.execPath, ['typed.js']);
      expect(typed).toEqual({
        code: 0,
        stdout: 'function undefined CurrentUser answered 401 (no body)\n',
        stderr: '',
      });
      const legacy = await run(project, process.execPath, ['legacy.cjs']);
      expect(legacy).toMatchObject({ code: 0, stdout: 'Basic YW5hQGV4YW1wbGUuY29tOkdyw7zDn2U=\n' });
    },
    SLOW_MS,
  );

  /**
   * What an integrator who writes TypeScript meets (issue 42): a project made by `npm init -y` (a
   * CommonJS package, npm's default) and `tsc --init` (its defaults as each compiler writes them:
   * `"types": []`, `exactOptionalPropertyTypes`, `verbatimModuleSyntax`...), with TypeScript as npm
   * installs it today (7.x) and the 5.9 line, `@types/node` and the packed client. The guide's
   * walk-through, saved as `walk-through.mts` as the guide says, compiles there with only the settings the
   * guide names ("As TypeScript"), and its JavaScript is emitted to `dist/`, never over a `walk-through.mjs`
   * beside it.
   */
  it.each([
    ['7', /^Version 7\./],
    ['5.9', /^Version 5\.9\./],
  ])(
    'When TypeScript %s compiles the walk-through with the settings the guide names, then it has no error',
    async (typescript, versionLine) => {
      const project = mkdtempSync(path.join(tmpdir(), `ts${typescript}-project-`));
      typescriptProjects.push(project);
      expect(await run(project, 'npm', ['init', '-y'])).toMatchObject({ code: 0 });
      const installed = await npmInstall(project, [
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
