import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { createConnection } from 'node:net';

import { freePort } from './free-port';

/** A redis-server this code started and therefore may stop (and, in tests, flush). */
export interface LocalRedis {
  /** `redis://127.0.0.1:<port>`, without the password. */
  readonly url: string;
  /** The `requirepass` it was started with, if any. */
  readonly password?: string;
  readonly port: number;
  readonly pid: number;
  /**
   * Stops it and resolves once it has exited. SIGTERM lets Redis finish writing its AOF; SIGKILL
   * (for fault tests) stops it dead, keeping on disk only what was fsynced.
   */
  stop(signal?: 'SIGTERM' | 'SIGKILL'): Promise<void>;
}

export interface LocalRedisOptions {
  /** 0 picks a free loopback port. */
  port?: number;
  /** With a directory, data is kept there with AOF on; without, nothing is written to disk. */
  dataDir?: string;
  /**
   * With `dataDir`: when the AOF is fsynced. `always` acknowledges a write only once it is on disk,
   * so a Redis killed with SIGKILL keeps every write it answered; Redis's default is `everysec`.
   */
  appendfsync?: 'always' | 'everysec' | 'no';
  /** Extra redis-server arguments, e.g. ['--maxmemory', '2mb']. */
  extraArgs?: string[];
  /**
   * Clients must authenticate with it (`requirepass`; on a cluster node `masterauth` too). It is
   * on the command line, so for tests and private servers only.
   */
  password?: string;
  /** Redis writes its pid there once it runs, and removes the file when it stops cleanly. */
  pidFile?: string;
}

export function redisServerOnPath(): boolean {
  return spawnSync('redis-server', ['--version'], { stdio: 'ignore' }).status === 0;
}

/** One RESP array command, so a password with spaces or quotes is sent as it is. */
function respCommand(...args: string[]): string {
  return `*${args.length}\r\n${args.map((arg) => `$${Buffer.byteLength(arg)}\r\n${arg}\r\n`).join('')}`;
}

/**
 * True when something at host:port answers a Redis PING within `timeoutMs` (authenticating first
 * with `password`, if given: a Redis that wants one answers NOAUTH to a bare PING).
 */
export async function redisAnswers(
  port: number,
  host = '127.0.0.1',
  timeoutMs = 500,
  password?: string,
): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ port, host });
    let received = '';
    const done = (answer: boolean) => {
      socket.destroy();
      resolve(answer);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.on('error', () => done(false));
    socket.on('connect', () =>
      socket.write(password === undefined ? 'PING\r\n' : respCommand('AUTH', password) + 'PING\r\n'),
    );
    socket.on('data', (data) => {
      received += data.toString();
      if (password === undefined) return done(received.startsWith('+PONG'));
      if (received.startsWith('-')) return done(false);
      if (received.startsWith('+OK\r\n') && received.length > 5) done(received.slice(5).startsWith('+PONG'));
    });
  });
}

async function waitUntilAnswering(
  port: number,
  child: ChildProcess,
  timeoutMs: number,
  password: string | undefined,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`redis-server exited with code ${child.exitCode}`);
    if (await redisAnswers(port, '127.0.0.1', 500, password)) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`redis-server did not answer on port ${port} within ${timeoutMs} ms`);
}

/** Starts a private redis-server on loopback and resolves once it answers PING. */
export async function startLocalRedis(options: LocalRedisOptions = {}): Promise<LocalRedis> {
  const port = options.port || (await freePort());
  const persistence = options.dataDir
    ? [
        '--dir',
        options.dataDir,
        '--appendonly',
        'yes',
        '--save',
        '',
        ...(options.appendfsync ? ['--appendfsync', options.appendfsync] : []),
      ]
    : ['--save', '', '--appendonly', 'no'];
  if (options.dataDir) mkdirSync(options.dataDir, { recursive: true });
  const child = spawn(
    'redis-server',
    [
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--maxmemory-policy',
      'noeviction',
      ...persistence,
      ...(options.password === undefined ? [] : ['--requirepass', options.password]),
      ...(options.pidFile === undefined ? [] : ['--pidfile', options.pidFile]),
      ...(options.extraArgs ?? []),
    ],
    // Its own process group: a Ctrl-C in the terminal must not stop Redis before the service has drained.
    { stdio: 'ignore', detached: true },
  );
  child.unref();
  await waitUntilAnswering(port, child, 10_000, options.password);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    url: `redis://127.0.0.1:${port}`,
    ...(options.password === undefined ? {} : { password: options.password }),
    port,
    pid: child.pid ?? 0,
    async stop(signal = 'SIGTERM') {
      if (child.exitCode !== null || child.signalCode !== null) return;
      // Referenced again while we wait: an unref'd child alone does not keep the event loop alive,
      // so the process could end before its exit is seen, and the caller's await would never return
      // (jest's global teardown did exactly that and lost the run's exit code).
      child.ref();
      child.kill(signal);
      const forced = setTimeout(() => child.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(forced);
    },
  };
}
