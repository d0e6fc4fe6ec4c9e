import { readFileSync } from 'node:fs';

/** Whether `pid` runs a redis-server (Linux's /proc; elsewhere, whether it runs at all). */
function isRedisServer(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('redis-server');
  } catch {
    return process.platform !== 'linux';
  }
}

/**
 * Stops the private redis-server a supervisor that died without stopping it (SIGKILL, a crash)
 * left behind, named by the pidfile Redis writes in its data folder, and resolves with its pid,
 * or undefined when there was none. Two servers must never share one AOF folder, and the leftover
 * listens on a port nobody knows any more.
 */
export async function stopLeftoverRedis(pidFile: string, timeoutMs = 10_000): Promise<number | undefined> {
  let pid: number;
  try {
    pid = Number(readFileSync(pidFile, 'utf8').trim());
  } catch {
    return undefined;
  }
  if (!Number.isInteger(pid) || pid <= 1 || !isRedisServer(pid)) return undefined;
  // SIGTERM: Redis finishes writing its AOF before it exits.
  process.kill(pid, 'SIGTERM');
  const deadline = Date.now() + timeoutMs;
  while (isRedisServer(pid)) {
    if (Date.now() > deadline) {
      process.kill(pid, 'SIGKILL');
      break;
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return pid;
}
