import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';

import { SANDBOX_BANNER_TITLE } from '../../ingress/auth/sandbox-admin';
import { testRedisEnv, uniquePrefix } from './app-fixture';
import {
  eventually,
  type IngressProcess,
  PROJECT_ROOT,
  type ServiceProcess,
  startIngressProcess,
  startServiceProcess,
} from './processes';

/**
 * What an integrator's machine does, for the tests that follow the integrators guide outside this
 * repository: its shell, the client packed as `npm run client:pack` packs it, and the sandbox of
 * `npm start` with the password its first start prints.
 */

/** Generous bounds: packing builds the client, npm installs, tsx compiles both processes, on a loaded machine. */
export const INTEGRATOR_SLOW_MS = 300_000;

export interface Ran {
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

/** Runs a program in `cwd` as that shell would, with `env` added; killed past INTEGRATOR_SLOW_MS. */
export function runInShell(
  cwd: string,
  command: string,
  args: readonly string[],
  env: Record<string, string> = {},
): Promise<Ran> {
  return new Promise<Ran>((resolve, reject) => {
    const child = spawn(command, args, { cwd, env: { ...SHELL_ENV, NO_COLOR: '1', ...env } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), INTEGRATOR_SLOW_MS);
    child.once('error', reject);
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** `npm install <packages>` in `project`, as the guide says, from npm's cache when it can. */
export function npmInstall(project: string, packages: readonly string[]): Promise<Ran> {
  return runInShell(project, 'npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', ...packages]);
}

export const CLIENT_ROOT = path.join(PROJECT_ROOT, 'clients', 'typescript');

/** `npm run client:pack` into `destination` (its prepack builds the client); the tarball's path. */
export async function packClient(destination: string): Promise<string> {
  const packed = await runInShell(PROJECT_ROOT, 'npm', [
    'run',
    'client:pack',
    '--',
    '--pack-destination',
    destination,
  ]);
  if (packed.code !== 0) throw new Error(`npm run client:pack failed: ${packed.stderr}`);
  const { version } = JSON.parse(readFileSync(path.join(CLIENT_ROOT, 'package.json'), 'utf8')) as {
    version: string;
  };
  return path.join(destination, `fantasy-team-service-client-${version}.tgz`);
}

/** The sandbox as `npm start` makes it: its processes, and what the guide's walk-throughs read. */
export interface Sandbox {
  readonly ingress: IngressProcess;
  readonly worker: ServiceProcess;
  /** SERVICE_URL and SANDBOX_ADMIN_PASSWORD, as the guide says to export them. */
  readonly env: Record<string, string>;
}

/**
 * A development start on loopback with no ADMIN_EMAIL, an ingress and a worker: the sandbox, as
 * `npm start` makes it, ready once the ingress printed its banner and the worker is ready. `started`
 * gets the processes as soon as they exist, so that a failed start is still stopped.
 */
export async function startSandbox(
  jwtSecret: string,
  started: (processes: { ingress?: Promise<IngressProcess>; worker: ServiceProcess }) => void,
): Promise<Sandbox> {
  const env = {
    ...testRedisEnv(),
    REDIS_KEY_PREFIX: uniquePrefix(),
    NODE_ENV: 'development',
    HOST: '127.0.0.1',
    METRICS_PORT: '0',
    ADMIN_EMAIL: '',
    ADMIN_PASSWORD: '',
    JWT_SECRET: jwtSecret,
  };
  const worker = startServiceProcess('workers/main.ts', env);
  const starting = startIngressProcess(env, INTEGRATOR_SLOW_MS);
  started({ ingress: starting, worker });
  const ingress = await starting;
  await ingress.process.waitForOutput(SANDBOX_BANNER_TITLE, INTEGRATOR_SLOW_MS);
  await eventually(() => /password: +\S+/.test(ingress.process.stdout()), 10_000);
  await worker.waitForOutput('worker ready', INTEGRATOR_SLOW_MS);
  return {
    ingress,
    worker,
    env: { SERVICE_URL: ingress.baseUrl, SANDBOX_ADMIN_PASSWORD: bannerPassword(ingress.process.stdout()) },
  };
}

/** The password the sandbox's banner prints on its first start. */
function bannerPassword(output: string): string {
  const password = /password: +(\S+)/.exec(output.slice(output.indexOf(SANDBOX_BANNER_TITLE)))?.[1];
  if (!password) throw new Error(`no password in the sandbox banner: ${output}`);
  return password;
}
