/**
 * `npm start` uses only the Redis it was given, and stops whichever of its processes is signalled
 * (ADR 0027). These run the compiled supervisor, as `npm start` does, with a private Redis under a
 * temporary data folder; the Redis on 127.0.0.1:6379, if this machine runs one, is only read.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';

import { freePort } from '../../scripts/lib/free-port';
import { redisAnswers } from '../../scripts/lib/redis-server';
import {
  MEMORY_SETTING_WARNING,
  RECOMMENDED_REDIS_MEMORY_SETTINGS,
} from '../../workers/redis-memory-settings';
import { eventually, PROJECT_ROOT } from '../helpers/processes';

/** `npm run build`, without blocking this process's event loop. */
function build(): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn('npm', ['run', 'build'], { cwd: PROJECT_ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.once('exit', (code) => resolve({ code, output }));
  });
}

/** Sends one command to a Redis and resolves with its raw answer (read-only commands only). */
function ask(port: number, ...args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port });
    let answer = '';
    socket.setTimeout(3_000, () => socket.destroy(new Error(`no answer from port ${port}`)));
    socket.on('error', reject);
    socket.on('connect', () =>
      socket.write(
        `*${args.length}\r\n${args.map((arg) => `$${Buffer.byteLength(arg)}\r\n${arg}\r\n`).join('')}`,
      ),
    );
    socket.on('data', (data) => {
      answer += data.toString();
      // A bulk string is complete once its announced length has arrived, an array of n bulk strings
      // (CONFIG GET) at its 1 + 2n line ends, an integer at its first.
      const bulk = /^\$(\d+)\r\n/.exec(answer);
      const array = /^\*(\d+)\r\n/.exec(answer);
      const complete = bulk
        ? Buffer.byteLength(answer) >= bulk[0].length + Number(bulk[1]) + 2
        : array
          ? answer.split('\r\n').length - 1 >= 1 + 2 * Number(array[1])
          : answer.endsWith('\r\n');
      if (complete) {
        socket.end();
        resolve(answer);
      }
    });
  });
}

/** Whether `pid` runs: a zombie no reaper collected has stopped too. */
function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    return !/^\d+ \(.*\) Z /.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

function childrenOf(pid: number): number[] {
  try {
    return execFileSync('ps', ['-o', 'pid=', '--ppid', String(pid)], { encoding: 'utf8' })
      .split('\n')
      .map((line) => Number(line.trim()))
      .filter((child) => child > 0);
  } catch {
    return [];
  }
}

/** The parent of `pid` (the supervisor, for its private Redis). */
function parentOf(pid: number): number {
  return Number(/^\d+ \(.*\) \S (\d+)/.exec(readFileSync(`/proc/${pid}/stat`, 'utf8'))?.[1]);
}

function listens(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

interface Started {
  readonly root: ChildProcess;
  readonly dataDir: string;
  output(): string;
}

/** A start with no Redis setting, a private data folder and free ports. */
function start(command: 'npm' | 'supervisor', dataDir: string, overrides: NodeJS.ProcessEnv = {}): Started {
  const env = {
    ...process.env,
    NODE_ENV: 'development',
    REDIS_URL: '',
    REDIS_CLUSTER_NODES: '',
    REDIS_PASSWORD: '',
    PRIVATE_REDIS_DIR: dataDir,
    PORT: '0',
    HOST: '',
    METRICS_PORT: '',
    JWT_SECRET: '',
    ADMIN_EMAIL: '',
    ADMIN_PASSWORD: '',
    LOG_LEVEL: 'info',
    ...overrides,
  };
  // `--ignore-scripts` skips `prestart` (built once in beforeAll) and runs `start` as it is.
  const [file, args] =
    command === 'npm'
      ? ['npm', ['start', '--ignore-scripts', '--silent']]
      : [process.execPath, [path.join(PROJECT_ROOT, 'dist', 'scripts', 'start-all.js')]];
  const root = spawn(file, args, { cwd: PROJECT_ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  root.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  root.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  return { root, dataDir, output: () => output };
}

/** The port the ingress listens on and the private Redis's line, once both are there. */
async function ready(started: Started): Promise<{ httpPort: number; redisPort: number; redisPid: number }> {
  await eventually(() => started.output().includes('worker ready'), 90_000, 100);
  await eventually(() => started.output().includes('"message":"ingress listening"'), 90_000, 100);
  const lines = started.output().split('\n');
  const listening = lines.find((line) => line.includes('"message":"ingress listening"')) ?? '{}';
  const redisLine = lines.filter((line) => line.startsWith('[start] Redis:'));
  expect(redisLine).toHaveLength(1);
  const match =
    /private redis-server at redis:\/\/127\.0\.0\.1:(\d+), pid (\d+), data in (.+) \(set REDIS_URL/.exec(
      redisLine[0] ?? '',
    );
  expect(match?.[3]).toBe(started.dataDir);
  return {
    httpPort: (JSON.parse(listening) as { port: number }).port,
    redisPort: Number(match?.[1]),
    redisPid: Number(match?.[2]),
  };
}

describe('`npm start` uses only what it was given, and stops whichever process is signalled', () => {
  const cleanups: (() => void)[] = [];

  beforeAll(async () => {
    const { code, output } = await build();
    if (code !== 0) throw new Error(`npm run build failed (${code}):\n${output}`);
  }, 180_000);

  afterEach(() => {
    for (const cleanup of cleanups.splice(0)) cleanup();
  });

  /** Every process of a start, by pid, killed at the end whatever happened. */
  function track(started: Started, pids: () => number[]): void {
    cleanups.push(() => {
      for (const pid of [started.root.pid ?? 0, ...pids()])
        if (pid > 0 && isRunning(pid)) process.kill(pid, 'SIGKILL');
      rmSync(started.dataDir, { recursive: true, force: true });
    });
  }

  it('When it starts with no Redis setting, then it says so in one line and uses a private redis-server in its data folder, set as production asks so the worker warns of nothing, leaving 6379 alone', async () => {
    const foreign = await redisAnswers(6379);
    // Key counts only: INFO keyspace's avg_ttl moves on its own while keys with a TTL age.
    const keyCounts = async () =>
      [...(await ask(6379, 'INFO', 'keyspace')).matchAll(/^(db\d+):keys=(\d+)/gm)].map(
        (m) => `${m[1]}=${m[2]}`,
      );
    const keyspaceBefore = foreign ? await keyCounts() : [];
    const dataDir = mkdtempSync(path.join(tmpdir(), 'fts-start-'));
    const started = start('supervisor', dataDir);
    let redisPid = 0;
    track(started, () => [redisPid]);

    const service = await ready(started);
    redisPid = service.redisPid;
    expect(service.redisPort).not.toBe(6379);
    // The Redis on that port is the process the line names, with its data in that folder…
    expect(await ask(service.redisPort, 'INFO', 'server')).toContain(`process_id:${service.redisPid}\r\n`);
    expect(await ask(service.redisPort, 'CONFIG', 'GET', 'dir')).toContain(`\r\n${dataDir}\r\n`);
    // …and holds what the start wrote (the sandbox administrator, the generated JWT secret).
    expect(Number(/^:(\d+)/.exec(await ask(service.redisPort, 'DBSIZE'))?.[1])).toBeGreaterThan(0);
    // It runs as a production Redis is asked to (docs/operators.md), so the worker warns about none of it.
    expect(await ask(service.redisPort, 'CONFIG', 'GET', 'maxmemory-policy')).toContain('\r\nnoeviction\r\n');
    expect(await ask(service.redisPort, 'CONFIG', 'GET', 'appendonly')).toContain('\r\nyes\r\n');
    for (const { name, value } of RECOMMENDED_REDIS_MEMORY_SETTINGS)
      expect(await ask(service.redisPort, 'CONFIG', 'GET', name)).toContain(`\r\n${value}\r\n`);
    expect(started.output()).not.toContain(MEMORY_SETTING_WARNING);

    started.root.kill('SIGTERM');
    await eventually(() => started.root.exitCode !== null, 60_000);
    expect(started.root.exitCode).toBe(0);
    expect(isRunning(service.redisPid)).toBe(false);
    if (foreign) expect(await keyCounts()).toEqual(keyspaceBefore);
  }, 240_000);

  it.each([
    ['the `npm start` process', 'SIGTERM', 'npm'],
    ['the `npm start` process', 'SIGINT', 'npm'],
    ['the supervisor', 'SIGTERM', 'supervisor'],
    ['the supervisor', 'SIGINT', 'supervisor'],
    ['the `npm start` process', 'SIGKILL', 'npm'],
  ] as const)(
    'When %s gets %s, then the ingress, the worker and the private Redis stop and the port is free',
    async (_who, signal, command) => {
      const started = start(command, mkdtempSync(path.join(tmpdir(), 'fts-start-')));
      let processes: number[] = [];
      track(started, () => processes);
      const { httpPort, redisPid } = await ready(started);
      const supervisor = parentOf(redisPid);
      processes = [supervisor, ...childrenOf(supervisor)];
      // The supervisor, the ingress, the worker and the Redis.
      expect(processes).toHaveLength(4);
      expect(processes).toContain(redisPid);

      started.root.kill(signal);
      await eventually(async () => !(await listens(httpPort)), 60_000, 200);
      await eventually(() => processes.every((pid) => !isRunning(pid)), 60_000, 200);
    },
    240_000,
  );

  it('When the supervisor is killed outright, then the ingress and the worker stop by themselves, and the next start stops the Redis it left', async () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'fts-start-'));
    const first = start('supervisor', dataDir);
    let processes: number[] = [];
    track(first, () => processes);
    const { httpPort, redisPid } = await ready(first);
    const children = childrenOf(first.root.pid ?? 0).filter((pid) => pid !== redisPid);
    processes = [...children, redisPid];
    expect(children).toHaveLength(2);

    first.root.kill('SIGKILL');
    await eventually(async () => !(await listens(httpPort)), 60_000, 200);
    await eventually(() => children.every((pid) => !isRunning(pid)), 60_000, 200);
    expect(isRunning(redisPid)).toBe(true);

    const second = start('supervisor', dataDir);
    let secondProcesses: number[] = [];
    track(second, () => secondProcesses);
    await ready(second);
    secondProcesses = [second.root.pid ?? 0, ...childrenOf(second.root.pid ?? 0)];
    expect(second.output()).toContain(
      `[start] stopped the private redis-server (pid ${redisPid}) an earlier start left running`,
    );
    expect(isRunning(redisPid)).toBe(false);
    second.root.kill('SIGTERM');
    await eventually(() => second.root.exitCode !== null, 60_000);
  }, 300_000);

  it('When a second start runs in the same checkout with another PORT while the first runs, then it refuses in one line and the first keeps its Redis and keeps serving', async () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'fts-start-'));
    const first = start('npm', dataDir);
    let processes: number[] = [];
    track(first, () => processes);
    const { httpPort, redisPid, redisPort } = await ready(first);
    const supervisor = parentOf(redisPid);
    processes = [supervisor, ...childrenOf(supervisor)];

    const second = start('supervisor', dataDir, { PORT: String(await freePort()) });
    let secondProcesses: number[] = [];
    track(second, () => secondProcesses);
    await eventually(() => second.root.exitCode !== null, 60_000, 100);
    secondProcesses = childrenOf(second.root.pid ?? 0);
    expect(second.root.exitCode).toBe(1);
    const refusals = second
      .output()
      .split('\n')
      .filter((line) => line.startsWith('[start] another start'));
    expect(refusals).toEqual([
      `[start] another start (pid ${supervisor}) runs the private redis-server in ${dataDir}: stop that one first, or give this one its own PRIVATE_REDIS_DIR or a REDIS_URL`,
    ]);
    expect(isRunning(redisPid)).toBe(true);
    expect(await ask(redisPort, 'INFO', 'server')).toContain(`process_id:${redisPid}\r\n`);
    const health = await fetch(`http://127.0.0.1:${httpPort}/readyz`);
    expect(health.status).toBe(200);

    first.root.kill('SIGTERM');
    await eventually(() => processes.every((pid) => !isRunning(pid)), 60_000, 200);
  }, 300_000);
});
