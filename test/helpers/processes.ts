import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

import { signalEach } from '../../scripts/lib/run-stop';

export const PROJECT_ROOT = path.resolve(__dirname, '..', '..');

/** A service process started from its TypeScript entry point, with its output collected. */
export interface ServiceProcess {
  readonly child: ChildProcess;
  stdout(): string;
  stderr(): string;
  /** Resolves with the exit code (or null when killed by a signal). */
  exited: Promise<number | null>;
  /** Waits until a stdout line contains `text`. */
  waitForOutput(text: string, timeoutMs?: number): Promise<void>;
}

/**
 * Runs e.g. `ingress/main.ts` through tsx, as `npm start` runs its compiled twin; a `.js` entry
 * (`dist/ingress/main.js`, after `npm run build`) runs as `npm start` runs it, on plain node.
 */
export function startServiceProcess(entry: string, env: Record<string, string>): ServiceProcess {
  const runner = entry.endsWith('.js') ? [] : ['--import', 'tsx'];
  const child = spawn(process.execPath, [...runner, path.join(PROJECT_ROOT, entry)], {
    cwd: PROJECT_ROOT,
    env: { ...process.env, LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return watchedProcess(child);
}

/**
 * A started child (stdout and stderr piped) as a ServiceProcess: its output collected, its exit
 * awaited; `what` names it in a timeout's message, `defaultWaitMs` bounds waitForOutput.
 */
export function watchedProcess(
  child: ChildProcess,
  what = 'process',
  defaultWaitMs = 15_000,
): ServiceProcess {
  let out = '';
  let err = '';
  child.stdout?.on('data', (chunk: Buffer) => (out += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (err += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return {
    child,
    stdout: () => out,
    stderr: () => err,
    exited,
    async waitForOutput(text: string, timeoutMs = defaultWaitMs) {
      const deadline = Date.now() + timeoutMs;
      while (!out.includes(text)) {
        if (child.exitCode !== null) throw new Error(`${what} exited (${child.exitCode}): ${err || out}`);
        if (Date.now() > deadline) throw new Error(`timed out waiting for "${text}"; output: ${out}${err}`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    },
  };
}

/** Polls `probe` until it returns true or the time runs out. */
export async function eventually(
  probe: () => boolean | Promise<boolean>,
  timeoutMs = 10_000,
  everyMs = 100,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}

/** A real ingress process and the base URL it listens on. */
export interface IngressProcess {
  readonly process: ServiceProcess;
  readonly baseUrl: string;
}

/**
 * Starts `ingress/main.ts` on a free loopback port and resolves once it listens (tsx compiles it
 * first: on a loaded machine that takes longer than `timeoutMs`' default).
 */
export async function startIngressProcess(
  env: Record<string, string>,
  timeoutMs = 30_000,
): Promise<IngressProcess> {
  const ingress = startServiceProcess('ingress/main.ts', { PORT: '0', HOST: '127.0.0.1', ...env });
  try {
    await ingress.waitForOutput('"message":"ingress listening"', timeoutMs);
  } catch (error) {
    ingress.child.kill('SIGKILL');
    throw error;
  }
  const line = ingress
    .stdout()
    .split('\n')
    .find((text) => text.includes('"message":"ingress listening"'));
  const { port } = JSON.parse(line ?? '{}') as { port: number };
  return { process: ingress, baseUrl: `http://127.0.0.1:${port}` };
}

/** POSTs `body` as JSON to a running ingress: its status and its parsed JSON answer. */
export async function postJsonTo(
  ingress: IngressProcess,
  path: string,
  body: object,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(`${ingress.baseUrl}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

/** Whether a process started by a test is still running (neither exited nor killed). */
export function isAlive(service: ServiceProcess): boolean {
  return service.child.exitCode === null && service.child.signalCode === null;
}

/** SIGKILLs `services` that still run and waits for each to exit: for afterEach and finally blocks. */
export async function killAll(...services: (ServiceProcess | undefined)[]): Promise<void> {
  await Promise.all(
    services.map(async (service) => {
      if (!service) return;
      if (isAlive(service)) service.child.kill('SIGKILL');
      await service.exited;
    }),
  );
}

/**
 * For tests that start process trees: a scratch folder per test, and after each test every
 * process it started (`started`) or found below them (`found`) is killed, so that a failed
 * assertion leaves nothing running.
 */
export function processTreeFixture(prefix: string): {
  readonly scratch: string;
  readonly started: ChildProcess[];
  readonly found: number[];
} {
  const tree = { scratch: '', started: [] as ChildProcess[], found: [] as number[] };
  beforeEach(() => {
    tree.scratch = mkdtempSync(path.join(tmpdir(), prefix));
  });
  afterEach(() => {
    const pids = [...tree.started.splice(0).map((child) => child.pid ?? 0), ...tree.found.splice(0)];
    signalEach(
      pids.filter((pid) => pid > 0),
      'SIGKILL',
    );
    rmSync(tree.scratch, { recursive: true, force: true });
  });
  return tree;
}
