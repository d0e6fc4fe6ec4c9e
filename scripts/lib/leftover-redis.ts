import { readFileSync, realpathSync } from 'node:fs';
import path from 'node:path';

/**
 * Whether `pid` is the private redis-server of `dataDir`: a redis-server whose working directory
 * is that folder (Redis moves into its `--dir`). A pidfile outlives a crash and its pid may since
 * name another process, so nothing less is trusted. Only Linux's /proc can tell; elsewhere the
 * answer is no, and a leftover is reported rather than stopped.
 */
function isPrivateRedis(pid: number, dataDir: string): boolean {
  try {
    process.kill(pid, 0);
    return (
      // Redis retitles itself `redis-server <address>`: its program is the first word.
      path.basename(readFileSync(`/proc/${pid}/cmdline`, 'utf8').split(/[\0 ]/)[0] ?? '') ===
        'redis-server' && realpathSync(`/proc/${pid}/cwd`) === realpathSync(dataDir)
    );
  } catch {
    return false;
  }
}

/** Sends `signal`; false when the process is already gone. */
function signal(pid: number, name: NodeJS.Signals): boolean {
  try {
    process.kill(pid, name);
    return true;
  } catch {
    return false;
  }
}

/**
 * Stops the private redis-server a supervisor that died without stopping it (SIGKILL, a crash)
 * left behind, named by the pidfile Redis writes in its data folder, and resolves with its pid,
 * or undefined when there was none. Two servers must never share one AOF folder, and the leftover
 * listens on a port nobody knows any more.
 */
export async function stopLeftoverRedis(pidFile: string, timeoutMs = 10_000): Promise<number | undefined> {
  const dataDir = path.dirname(pidFile);
  let pid: number;
  try {
    pid = Number(readFileSync(pidFile, 'utf8').trim());
  } catch {
    return undefined;
  }
  if (!Number.isInteger(pid) || pid <= 1 || !isPrivateRedis(pid, dataDir)) return undefined;
  // SIGTERM: Redis finishes writing its AOF before it exits.
  if (!signal(pid, 'SIGTERM')) return pid;
  const deadline = Date.now() + timeoutMs;
  while (isPrivateRedis(pid, dataDir)) {
    if (Date.now() > deadline) {
      signal(pid, 'SIGKILL');
      break;
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return pid;
}
