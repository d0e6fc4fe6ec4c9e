import { readdirSync, readFileSync } from 'node:fs';

import { watchParent } from './parent-watch';

/**
 * How a test run (jest's parent process, `npm run test:cluster`) learns that it is being stopped,
 * so that it stops what it started: private redis-servers run in their own process group (a
 * terminal's Ctrl-C must not reach them before their users are done), so nothing else stops them.
 * Linux only (/proc); elsewhere only the signals are seen.
 */

/** `pid`'s parent, process group and state, from /proc/<pid>/stat; undefined once it is gone. */
export function processStat(pid: number): { ppid: number; pgrp: number; state: string } | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name, in parentheses, may hold spaces and parentheses: the fields follow the last.
    const [state = '', ppid = '0', pgrp = '0'] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { ppid: Number(ppid), pgrp: Number(pgrp), state };
  } catch {
    return undefined;
  }
}

/** The command name of `pid` (/proc/<pid>/comm), '' once it is gone. */
export function commandName(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
  } catch {
    return '';
  }
}

/** Whether `pid` runs: a zombie nobody reaped yet has stopped too. */
export function isRunning(pid: number): boolean {
  const stat = processStat(pid);
  return stat !== undefined && stat.state !== 'Z';
}

/** Every running descendant of `pid`, whatever its process group, parents before their children. */
export function descendantsOf(pid: number): number[] {
  const childrenOf = new Map<number, number[]>();
  let entries: string[] = [];
  try {
    entries = readdirSync('/proc');
  } catch {
    return [];
  }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = processStat(Number(entry));
    if (stat === undefined || stat.state === 'Z') continue;
    childrenOf.set(stat.ppid, [...(childrenOf.get(stat.ppid) ?? []), Number(entry)]);
  }
  const found: number[] = [];
  for (let next = [pid]; next.length > 0;) {
    next = next.flatMap((parent) => childrenOf.get(parent) ?? []);
    found.push(...next);
  }
  return found;
}

/** Sends `signal` to each of `pids` that still runs. */
export function signalEach(pids: readonly number[], signal: NodeJS.Signals = 'SIGTERM'): void {
  for (const pid of pids) {
    try {
      process.kill(pid, signal);
    } catch {
      // Gone already.
    }
  }
}

/**
 * Calls `onStop` on every SIGINT, SIGTERM or SIGHUP to this process, and once (as SIGTERM) when the
 * run it belongs to has ended without signalling it: its parent has exited, or the leader of its
 * process group has. A terminal's Ctrl-C signals the whole group, but a process manager or an IDE
 * signals only the top process (`npm test`), and npm passes SIGTERM only to its shell, which dies
 * without passing it on: the processes below live on, orphaned, until they look up.
 */
export function onRunStopped(onStop: (signal: NodeJS.Signals) => void, everyMs = 250): void {
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(signal, () => onStop(signal));
  let ended = false;
  const end = () => {
    if (ended) return;
    ended = true;
    onStop('SIGTERM');
  };
  watchParent(end, everyMs);
  const leader = processStat(process.pid)?.pgrp;
  // A leader gone before the run started (a group whose first process has exited) says nothing.
  if (leader === undefined || leader === process.pid || !isRunning(leader)) return;
  const timer = setInterval(() => {
    if (isRunning(leader)) return;
    clearInterval(timer);
    end();
  }, everyMs);
  timer.unref();
}
