import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

import { SANDBOX_ADMIN_EMAIL, SANDBOX_BANNER_TITLE } from '../../ingress/auth/sandbox-admin';
import { CONTRACT_VERSION } from '../../ingress/openapi/openapi-document';
import { testRedisEnv, uniquePrefix } from '../helpers/app-fixture';
import { guideWalkThrough } from '../helpers/integrators-guide';
import {
  eventually,
  type IngressProcess,
  killAll,
  PROJECT_ROOT,
  type ServiceProcess,
  startIngressProcess,
  startServiceProcess,
} from '../helpers/processes';

/**
 * What an integrator does on a machine of their own: `npm run client:pack`, the tarball installed
 * into a project of its own outside this repository (its own package.json, no way to reach the
 * repository's node_modules), the integrators guide's walk-through saved as a file there and run
 * with plain `node` against a real ingress and worker, on the sandbox's own administrator and the
 * password its first start prints. The same project also `require`s the client, and compiles
 * against it under `tsc --init`'s defaults.
 */

const CLIENT_ROOT = path.join(PROJECT_ROOT, 'clients', 'typescript');
const TSC = path.join(PROJECT_ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
/** Generous bounds: packing builds the client, and tsx compiles both processes, on a loaded machine. */
const SLOW_MS = 180_000;

interface Ran {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * What a new shell of the integrator's has: the PATH, the home folder, npm's cache and registry, a
 * proxy and the certificate authorities its TLS trusts (a registry behind an inspecting proxy needs
 * them), nothing of this test run (no NODE_OPTIONS, no `npm_*` of the npm running the tests, whose
 * local prefix is this repository).
 */
const SHELL_ENV = Object.fromEntries(
  Object.entries(process.env).filter(
    (entry): entry is [string, string] =>
      entry[1] !== undefined &&
      /^(PATH|HOME|TMPDIR|npm_config_(cache|registry|cafile|ca)|(https?|no)_proxy|NODE_EXTRA_CA_CERTS|SSL_CERT_(FILE|DIR))$/i.test(
        entry[0],
      ),
  ),
);

/** Runs a program in `cwd` as that shell would, with `env` added. */
function run(cwd: string, command: string, args: readonly string[], env: Record<string, string> = {}) {
  return new Promise<Ran>((resolve, reject) => {
    const child = spawn(command, args, { cwd, env: { ...SHELL_ENV, NO_COLOR: '1', ...env } });
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

/** The password the sandbox's banner prints on its first start. */
function bannerPassword(output: string): string {
  const password = /password: +(\S+)/.exec(output.slice(output.indexOf(SANDBOX_BANNER_TITLE)))?.[1];
  if (!password) throw new Error(`no password in the sandbox banner: ${output}`);
  return password;
}

describe('The typed client, packed and installed into a project outside the repository', () => {
  let packDir: string;
  let project: string;
  let worker: ServiceProcess | undefined;
  let starting: Promise<IngressProcess | undefined> = Promise.resolve(undefined);
  let serviceEnv: Record<string, string>;

  beforeAll(async () => {
    packDir = mkdtempSync(path.join(tmpdir(), 'client-pack-'));
    project = mkdtempSync(path.join(tmpdir(), 'client-project-'));

    // A development start on loopback with no ADMIN_EMAIL: the sandbox, as `npm start` makes it.
    const env = {
      ...testRedisEnv(),
      REDIS_KEY_PREFIX: uniquePrefix(),
      NODE_ENV: 'development',
      HOST: '127.0.0.1',
      METRICS_PORT: '0',
      ADMIN_EMAIL: '',
      ADMIN_PASSWORD: '',
      JWT_SECRET: 'typed-client-package-secret-of-32-characters',
    };
    worker = startServiceProcess('workers/main.ts', env);
    const started = startIngressProcess(env, SLOW_MS);
    // Started while the client is packed and installed: its failure is reported where it is awaited.
    starting = started.catch(() => undefined);

    // The package, as `npm run client:pack` writes it (its prepack builds it), then installed from
    // the tarball, as the guide says; its dependency comes from the npm cache or the registry.
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
    const tarball = path.join(packDir, `fantasy-team-service-client-${version}.tgz`);
    writeFileSync(
      path.join(project, 'package.json'),
      JSON.stringify({ name: 'walk-through', private: true, type: 'module' }, null, 2),
    );
    const installed = await run(project, 'npm', [
      'install',
      '--prefer-offline',
      '--no-audit',
      '--no-fund',
      tarball,
    ]);
    expect(installed).toMatchObject({ code: 0 });

    const ingress = (await started).process;
    await ingress.waitForOutput(SANDBOX_BANNER_TITLE, SLOW_MS);
    await eventually(() => /password: +\S+/.test(ingress.stdout()), 10_000);
    await worker.waitForOutput('worker ready', SLOW_MS);
    serviceEnv = {
      SERVICE_URL: (await started).baseUrl,
      SANDBOX_ADMIN_PASSWORD: bannerPassword(ingress.stdout()),
    };
  }, 2 * SLOW_MS);

  afterAll(async () => {
    await killAll((await starting)?.process, worker);
    for (const dir of [packDir, project]) if (dir) rmSync(dir, { recursive: true, force: true });
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
});
