import { spawn, spawnSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

import { freePort } from '../../scripts/lib/free-port';

/** The repository root: bench/lib/../.. */
export const REPO_ROOT = path.resolve(__dirname, '..', '..');

/** A server this bench started in its own process, so it never shares an event loop with the load generator. */
export interface ServerProcess {
  readonly name: string;
  readonly port: number;
  readonly pid: number;
  readonly baseUrl: string;
  /** Where the child's stdout and stderr go (a file, so reading its logs costs the bench nothing). */
  readonly logFile: string;
  /** SIGTERM, then SIGKILL if it has not exited within `graceMs`. Safe to call twice. */
  stop(graceMs?: number): Promise<void>;
}

export interface StartServerOptions {
  readonly name: string;
  /** Arguments after `node`, e.g. ['dist/ingress/main.js'] or ['--import', 'tsx', 'x.ts']. */
  readonly args: readonly string[];
  /** Added to a minimal environment (PATH, HOME), never to this process's own environment. */
  readonly env: Readonly<Record<string, string>>;
  /**
   * A GET path polled until the server answers it at all (any status: the baseline has no route
   * for it and answers 404). Both servers listen only once fully started, so an answer means ready.
   */
  readonly readyPath?: string;
  /**
   * Instead of `readyPath`, for a process that serves no HTTP (a worker): polled every 100 ms
   * until it resolves true, e.g. `logMentions('"worker ready"')`.
   */
  readonly ready?: (started: { readonly logFile: string; readonly baseUrl: string }) => Promise<boolean>;
  readonly startTimeoutMs?: number;
}

let logDirectory: string | undefined;

/**
 * Removes the scratch directory (the info-level ingress alone logs tens of MB a run) unless
 * BENCH_KEEP_FILES=1 or BENCH_CPU_PROF=1 asks to keep it. Returns the directory when kept.
 */
export function removeScratchDir(keep: boolean): string | undefined {
  if (!logDirectory) return undefined;
  if (keep || process.env.BENCH_KEEP_FILES === '1' || process.env.BENCH_CPU_PROF === '1') return logDirectory;
  rmSync(logDirectory, { recursive: true, force: true });
  logDirectory = undefined;
  return undefined;
}

/** A temporary directory for this bench process: child logs, CPU profiles. Left in place for inspection. */
export function scratchDir(): string {
  logDirectory ??= mkdtempSync(path.join(tmpdir(), 'fts-bench-'));
  return logDirectory;
}

/** Everything started and not yet stopped, so an interrupt or a failure can stop it all. */
const live = new Set<{ stop(): Promise<void> }>();

/** Registers something to stop on `stopAll()` (a private Redis, a server); returns it. */
export function track<T extends { stop(): Promise<void> }>(resource: T): T {
  live.add(resource);
  return resource;
}

/** Stops every tracked resource, newest first (servers before the Redis they use). */
export async function stopAll(): Promise<void> {
  const resources = [...live].reverse();
  live.clear();
  // startLocalRedis unrefs its child: without a ref'd handle, node would exit while awaiting its exit.
  const keepAlive = setInterval(() => undefined, 1_000);
  try {
    for (const resource of resources) {
      try {
        await resource.stop();
      } catch (error) {
        process.stderr.write(`[bench] could not stop a process: ${String(error)}\n`);
      }
    }
  } finally {
    clearInterval(keepAlive);
  }
}

let interruptsInstalled = false;

/** On Ctrl-C or SIGTERM, stops every started process (their own process groups miss the signal) and exits. */
export function stopAllOnInterrupt(): void {
  if (interruptsInstalled) return;
  interruptsInstalled = true;
  const onSignal = (signal: NodeJS.Signals) => {
    process.stderr.write(`\n[bench] ${signal}: stopping the servers and Redis\n`);
    void stopAll().finally(() => process.exit(130));
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
}

let built = false;

/** `npm run build` once per bench process: the service is measured as production runs it, compiled. */
export function ensureBuilt(): void {
  if (built) return;
  process.stderr.write('[bench] npm run build (the service is measured compiled, from dist/)\n');
  const result = spawnSync('npm', ['run', '--silent', 'build'], { cwd: REPO_ROOT, stdio: 'inherit' });
  if (result.status !== 0) throw new Error(`npm run build failed (exit ${String(result.status)})`);
  built = true;
}

async function answers(url: string): Promise<boolean> {
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(1_000) });
    await response.arrayBuffer();
    return true;
  } catch {
    return false;
  }
}

/** A readiness check for `startServer`: the process's output contains `text` (a start-up log line). */
export function logMentions(text: string): (started: { readonly logFile: string }) => Promise<boolean> {
  return ({ logFile }) => {
    try {
      return Promise.resolve(readFileSync(logFile, 'utf8').includes(text));
    } catch {
      return Promise.resolve(false);
    }
  };
}

function tail(file: string, lines = 20): string {
  try {
    return readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '';
  }
}

/**
 * Starts `node <args>` on a free loopback port (PORT and HOST are set for it) and resolves once
 * it answers HTTP on `readyPath` (or once `ready` says so). The child gets its own process group, so a
 * terminal Ctrl-C reaches only the bench, which then sends each child one SIGTERM.
 */
export async function startServer(options: StartServerOptions): Promise<ServerProcess> {
  const { readyPath, ready } = options;
  if (readyPath === undefined && ready === undefined) throw new Error(`${options.name}: readyPath or ready`);
  const port = await freePort();
  const logFile = path.join(scratchDir(), `${options.name.replace(/[^A-Za-z0-9_-]+/g, '-')}-${port}.log`);
  const out = openSync(logFile, 'a');
  const child = spawn(process.execPath, [...options.args], {
    cwd: REPO_ROOT,
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '',
      ...options.env,
      PORT: String(port),
      HOST: '127.0.0.1',
    },
    stdio: ['ignore', out, out],
    detached: true,
  });
  closeSync(out);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const baseUrl = `http://127.0.0.1:${port}`;

  const server: ServerProcess = {
    name: options.name,
    port,
    pid: child.pid ?? 0,
    baseUrl,
    logFile,
    async stop(graceMs = 5_000) {
      live.delete(server);
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
      await exited;
      clearTimeout(timer);
    },
  };
  track(server);

  const deadline = Date.now() + (options.startTimeoutMs ?? 20_000);
  const isReady = () => (ready ? ready({ logFile, baseUrl }) : answers(baseUrl + (readyPath ?? '/')));
  while (!(await isReady())) {
    if (child.exitCode !== null || Date.now() > deadline) {
      await server.stop();
      throw new Error(
        `${options.name} did not become ready${ready ? '' : ` at ${baseUrl}${readyPath}`} ` +
          `(exit code ${String(child.exitCode)}); last output from ${logFile}:\n${tail(logFile)}`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return server;
}
