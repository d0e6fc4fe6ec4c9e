import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

import { stopLeftoverRedis } from '../../scripts/lib/leftover-redis';
import { startLocalRedis } from '../../scripts/lib/redis-server';

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
});
