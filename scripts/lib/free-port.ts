import { mkdirSync, readdirSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';

/**
 * Free loopback ports for a server started later: a redis-server, a cluster node, a port podman
 * publishes, a proxy.
 *
 * Why not listen(0)'s port: a port found free is unbound until its next owner binds it, which for a
 * published container port may be minutes (or never, when podman forwards it with a NAT rule). If
 * the port lies in the kernel's ephemeral range, any listen(0) on the machine (supertest starts one
 * per request) or outgoing connection may be given it meanwhile: CI saw supertest's own server
 * refused, its connection sent by the NAT rule to a container that was not listening. Ports below
 * that range are only ever taken by a server that names them, so the ones handed out here are
 * drawn from there, checked with a bind, and marked for a while so that two test processes picking
 * at the same moment do not take the same one.
 */

/** The lowest port handed out: above the registered ports servers commonly take by default. */
const LOWEST_PORT = 20_000;
/** Fewer candidates than this below the ephemeral range, and the kernel's choice is used instead. */
const LEAST_CANDIDATES = 1_000;
/** A mark protects a port from other processes' picks this long; its owner has bound it by then. */
const MARK_LIFETIME_MS = 10 * 60_000;
const MARKS_DIR = path.join(tmpdir(), 'fantasy-team-service-ports');

/** Where the kernel hands out ports to listen(0) and outgoing connections; Linux's default elsewhere. */
export function ephemeralPortRange(): { readonly low: number; readonly high: number } {
  try {
    const [low, high] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8')
      .trim()
      .split(/\s+/)
      .map(Number);
    if (low && high && low <= high) return { low, high };
  } catch {
    // Not Linux, or /proc hidden: the default.
  }
  return { low: 32_768, high: 60_999 };
}

/** True when a server can listen on 127.0.0.1:`port` now. */
function bindable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.unref();
    server.once('error', () => resolve(false));
    server.listen({ port, host: '127.0.0.1', exclusive: true }, () => server.close(() => resolve(true)));
  });
}

let swept = false;

/** Once per process: the marks that no longer protect anything, so that the folder stays small. */
function sweepOldMarks(): void {
  if (swept) return;
  swept = true;
  mkdirSync(MARKS_DIR, { recursive: true });
  for (const name of readdirSync(MARKS_DIR)) {
    const file = path.join(MARKS_DIR, name);
    try {
      if (Date.now() - statSync(file).mtimeMs > MARK_LIFETIME_MS) rmSync(file, { force: true });
    } catch {
      // Swept by another process meanwhile.
    }
  }
}

/**
 * Marks `port` as handed out, unless another process marked it within MARK_LIFETIME_MS. Best
 * effort: where the folder cannot be written (another user's), the bind check alone decides.
 */
function mark(port: number): boolean {
  const file = path.join(MARKS_DIR, String(port));
  try {
    sweepOldMarks();
    writeFileSync(file, String(process.pid), { flag: 'wx' });
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') return true;
  }
  try {
    if (Date.now() - statSync(file).mtimeMs < MARK_LIFETIME_MS) return false;
    const now = new Date();
    utimesSync(file, now, now);
    return true;
  } catch {
    return false;
  }
}

/** The kernel's choice (listen(0)): on a machine whose ephemeral range leaves no room below it. */
function kernelsChoice(): Promise<number> {
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

/** A loopback port no server holds, outside the ephemeral range, not handed to another caller lately. */
export async function freePort(): Promise<number> {
  const candidates = ephemeralPortRange().low - LOWEST_PORT;
  if (candidates < LEAST_CANDIDATES) return kernelsChoice();
  for (let attempt = 0; attempt < 200; attempt += 1) {
    const port = LOWEST_PORT + Math.floor(Math.random() * candidates);
    if ((await bindable(port)) && mark(port)) return port;
  }
  throw new Error(`no free port found between ${LOWEST_PORT} and ${LOWEST_PORT + candidates - 1}`);
}
