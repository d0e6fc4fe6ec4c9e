import { readFileSync, realpathSync } from 'node:fs';
import path from 'node:path';

import { processStat } from './run-stop';

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

/** The file a start writes its own pid to, beside the pidfile of the Redis it starts. */
export function supervisorPidFile(pidFile: string): string {
  return path.join(path.dirname(pidFile), 'supervisor.pid');
}

function readPid(file: string): number | undefined {
  try {
    const pid = Number(readFileSync(file, 'utf8').trim());
    return Number.isInteger(pid) && pid > 1 ? pid : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The pid of the start that still supervises the private redis-server named by `pidFile`, or
 * undefined when there is none (no Redis, or one whose supervisor is gone). A running start is
 * recognised by the parent link, not by its pid alone: the Redis's parent is still the process
 * the supervisor file names, which a reused pid cannot fake (a dead supervisor's Redis is
 * reparented). A second start in the same checkout must leave that Redis alone.
 */
export function runningSupervisorOf(pidFile: string): number | undefined {
  const redisPid = readPid(pidFile);
  const supervisor = readPid(supervisorPidFile(pidFile));
  if (redisPid === undefined || supervisor === undefined) return undefined;
  if (!isPrivateRedis(redisPid, path.dirname(pidFile))) return undefined;
  return processStat(redisPid)?.ppid === supervisor ? supervisor : undefined;
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
 * left behind (never one whose supervisor still runs: see {@link runningSupervisorOf}), named by the pidfile Redis writes in its data folder, and resolves with its pid,
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
  // Its supervisor still runs (another terminal's start): not a leftover.
  if (runningSupervisorOf(pidFile) !== undefined) return undefined;
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
