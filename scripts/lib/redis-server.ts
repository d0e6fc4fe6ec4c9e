import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { createServer, createConnection } from 'node:net';

/** A redis-server this code started and therefore may stop (and, in tests, flush). */
export interface LocalRedis {
  readonly url: string;
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
  /** Extra redis-server arguments, e.g. ['--appendfsync', 'always']. */
  extraArgs?: string[];
}

export function redisServerOnPath(): boolean {
  return spawnSync('redis-server', ['--version'], { stdio: 'ignore' }).status === 0;
}

/** Asks the OS for a free loopback port. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/** True when something at host:port answers a Redis PING within `timeoutMs`. */
export async function redisAnswers(port: number, host = '127.0.0.1', timeoutMs = 500): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ port, host });
    const done = (answer: boolean) => {
      socket.destroy();
      resolve(answer);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.on('error', () => done(false));
    socket.on('connect', () => socket.write('PING\r\n'));
    socket.on('data', (data) => done(data.toString().startsWith('+PONG')));
  });
}

async function waitUntilAnswering(port: number, child: ChildProcess, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`redis-server exited with code ${child.exitCode}`);
    if (await redisAnswers(port)) return;
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
      ...(options.extraArgs ?? []),
    ],
    // Its own process group: a Ctrl-C in the terminal must not stop Redis before the service has drained.
    { stdio: 'ignore', detached: true },
  );
  child.unref();
  await waitUntilAnswering(port, child, 10_000);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    url: `redis://127.0.0.1:${port}`,
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
