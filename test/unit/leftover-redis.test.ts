import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

import { runningSupervisorOf, stopLeftoverRedis, supervisorPidFile } from '../../scripts/lib/leftover-redis';
import { startLocalRedis } from '../../scripts/lib/redis-server';
import { eventually } from '../helpers/processes';

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('The leftover Redis an earlier start left behind', () => {
  const folders: string[] = [];
  const children: ChildProcess[] = [];
  const folder = () => {
    const made = mkdtempSync(path.join(tmpdir(), 'fts-leftover-'));
    folders.push(made);
    return made;
  };
  afterAll(() => {
    for (const child of children) child.kill('SIGKILL');
    for (const made of folders) rmSync(made, { recursive: true, force: true });
  });

  it('When the pidfile names the private redis-server of its folder, then it is stopped', async () => {
    const dataDir = folder();
    const pidFile = path.join(dataDir, 'redis-server.pid');
    const redis = await startLocalRedis({ dataDir, pidFile });
    try {
      expect(await stopLeftoverRedis(pidFile)).toBe(redis.pid);
      // Gone from /proc's view once it exits; this process, its parent here, reaps it a moment later.
      const reapedBy = Date.now() + 5_000;
      while (isRunning(redis.pid) && Date.now() < reapedBy)
        await new Promise((resolve) => setTimeout(resolve, 20));
      expect(isRunning(redis.pid)).toBe(false);
    } finally {
      await redis.stop().catch(() => undefined);
    }
  }, 30_000);

  it('When the pidfile names another process, even one whose command line says redis-server, then it is left alone', async () => {
    const dataDir = folder();
    const pidFile = path.join(dataDir, 'redis-server.pid');
    // A pid reused since the crash, or planted: `node ... redis-server` in another folder.
    const other = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60000)', 'redis-server'], {
      cwd: tmpdir(),
      stdio: 'ignore',
    });
    children.push(other);
    writeFileSync(pidFile, `${other.pid}\n`);
    expect(await stopLeftoverRedis(pidFile, 500)).toBeUndefined();
    expect(isRunning(other.pid!)).toBe(true);
  });

  it('When a redis-server of another folder holds the pid, then it is left alone', async () => {
    const theirs = folder();
    const redis = await startLocalRedis({ dataDir: theirs, pidFile: path.join(theirs, 'redis-server.pid') });
    try {
      const pidFile = path.join(folder(), 'redis-server.pid');
      writeFileSync(pidFile, `${redis.pid}\n`);
      expect(await stopLeftoverRedis(pidFile, 500)).toBeUndefined();
      expect(isRunning(redis.pid)).toBe(true);
    } finally {
      await redis.stop();
    }
  }, 30_000);

  it('When the Redis is still the child of the start its supervisor file names, then it is left running and that start is named', async () => {
    const dataDir = folder();
    const pidFile = path.join(dataDir, 'redis-server.pid');
    // This process started it and stays its parent, as a start in another terminal does.
    const redis = await startLocalRedis({ dataDir, pidFile });
    try {
      writeFileSync(supervisorPidFile(pidFile), `${process.pid}\n`);
      await eventually(() => runningSupervisorOf(pidFile) !== undefined);
      expect(runningSupervisorOf(pidFile)).toBe(process.pid);
      expect(await stopLeftoverRedis(pidFile, 500)).toBeUndefined();
      expect(isRunning(redis.pid)).toBe(true);
    } finally {
      await redis.stop();
    }
  }, 30_000);

  it('When the supervisor file names a live process that is not the parent of the Redis, then the Redis is a leftover and is stopped', async () => {
    const dataDir = folder();
    const pidFile = path.join(dataDir, 'redis-server.pid');
    const redis = await startLocalRedis({ dataDir, pidFile });
    // A pid reused since the supervisor died: alive, but not the Redis's parent.
    const other = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60000)'], { stdio: 'ignore' });
    children.push(other);
    try {
      writeFileSync(supervisorPidFile(pidFile), `${other.pid}\n`);
      await eventually(() => isRunning(redis.pid));
      expect(await stopLeftoverRedis(pidFile)).toBe(redis.pid);
    } finally {
      await redis.stop().catch(() => undefined);
    }
  }, 30_000);
});
