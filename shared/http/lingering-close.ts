/**
 * Answers sent while a request's body is still on its way, closed in stages so that the client
 * reads them (RFC 9112 section 9.6, nginx's `lingering_close`).
 *
 * The service answers some requests before it has read their body: a 413 on the declared length, a
 * 401 before an anonymous body is read, a 404, a 400 for a charset it does not read, a 429. Closing the connection at once then
 * loses the answer for most clients: the body bytes still arriving hit a closed socket, the kernel
 * answers them with a reset, and the reset discards the answer from the client's receive buffer
 * before it was read (Node's `fetch` and Python's `urllib` report EPIPE; only clients that read
 * while they send, as curl does, saw the answer). Draining the body to keep the connection, Node's
 * default, reads without end for a refused caller.
 *
 * So: the answer says `Connection: close`, is written, the write side is shut (the client sees the
 * answer and then the end of the stream), and what the client still sends is read and thrown away
 * until it stops (its end of the stream, or the body's last byte), within bounds in bytes and time.
 * Past a bound the connection is cut: a client still sending by then has had the answer in its
 * receive buffer for the whole idle time.
 */
import type { Server } from 'node:http';
import type { Socket } from 'node:net';

import type { Request, RequestHandler, Response } from 'express';

import { declaresBody } from './request-body';

/** How much of a refused body is read and discarded after the answer (HTTP_LINGER_* settings). */
export interface LingeringBounds {
  /** Bytes read after the answer at most; then the connection is cut. */
  readonly maxBytes: number;
  /** Milliseconds without a byte from the client; then the connection is cut. */
  readonly idleMs: number;
  /** Milliseconds from the answer to the cut, however the client sends. */
  readonly totalMs: number;
  /**
   * Bytes this process drops per second across all lingering connections (a bucket holding one
   * second's worth); a connection that finds it empty is cut at once, as before ADR 0039.
   */
  readonly bytesPerSecond: number;
}

/**
 * What a flood of refused uploads may make the process read: reading is what lets a client see its
 * refusal, but an anonymous flood would otherwise keep a core busy reading bodies nobody wants
 * (bench/RESULTS.md, hostile-bodies). A token bucket refilled continuously, one second deep.
 */
class DrainBudget {
  private tokens: number;
  private refilledAt = performance.now();

  constructor(private readonly bytesPerSecond: number) {
    this.tokens = bytesPerSecond;
  }

  /** Takes `bytes` if the budget has them; false (and nothing taken) when it does not. */
  take(bytes: number): boolean {
    const now = performance.now();
    this.tokens = Math.min(
      this.bytesPerSecond,
      this.tokens + ((now - this.refilledAt) * this.bytesPerSecond) / 1000,
    );
    this.refilledAt = now;
    if (this.tokens < bytes) return false;
    this.tokens -= bytes;
    return true;
  }
}

/** The connections lingering on each server: shutdown cuts them, their answer being delivered. */
const lingering = new WeakMap<Server, Set<Socket>>();

/** Cuts the connections that linger after an early answer (a server's shutdown: nothing is owed). */
export function cutLingeringConnections(server: Server): void {
  for (const socket of lingering.get(server) ?? []) socket.destroy();
}

/**
 * Marks answers written before the request's body was all read with `Connection: close`, and has
 * their connection close in stages (see the module comment). Answers to a request whose body was
 * read, or that had none, are untouched: the connection stays open for the next request.
 */
export function lingerWhenBodyUnread(bounds: LingeringBounds): RequestHandler {
  const budget = new DrainBudget(bounds.bytesPerSecond);
  return (req, res, next) => {
    const writeHead = res.writeHead.bind(res) as (...args: unknown[]) => Response;
    res.writeHead = ((...args: unknown[]) => {
      if (!req.complete && declaresBody(req)) {
        res.setHeader('Connection', 'close');
        lingerOnClose(req, res, bounds, budget);
      }
      return writeHead(...args);
    }) as typeof res.writeHead;
    next();
  };
}

/**
 * Node closes a `Connection: close` answer's socket with `destroySoon()` once the answer is
 * finished: end the write side, then destroy it, whatever the client still sends. This socket's
 * `destroySoon` lingers instead.
 */
function lingerOnClose(req: Request, res: Response, bounds: LingeringBounds, budget: DrainBudget): void {
  let discarded = 0;
  let overBudget = false;
  let lastByteAt = 0;
  let close: (() => void) | undefined;

  // Node dumps a request left unread once its answer is finished, and the parser then drops a
  // dumped request's bytes before they reach JavaScript: uncounted, unbounded. Read first, from
  // the answer's 'finish' ahead of Node's own listener, every byte is counted. Whoever was reading
  // the body (a parser refused mid-way) lets go; its last byte ends the lingering: anything after
  // it would be a next request, and the answer said the connection closes.
  res.prependOnceListener('finish', () => {
    req.unpipe();
    req.removeAllListeners('data');
    req.on('data', (chunk: Buffer) => {
      discarded += chunk.length;
      lastByteAt = Date.now();
      if (!budget.take(chunk.length)) overBudget = true;
      if (overBudget || discarded > bounds.maxBytes) close?.();
    });
    req.once('end', () => close?.());
    req.resume();
  });

  req.socket.destroySoon = function lingerThenClose(this: Socket) {
    if (this.writable) this.end();
    const server = (this as Socket & { server?: Server }).server;
    const open = (server && lingering.get(server)) ?? new Set<Socket>();
    if (server) lingering.set(server, open);
    open.add(this);

    const startedAt = Date.now();
    lastByteAt = startedAt;
    let timer: NodeJS.Timeout | undefined;
    // Destroying before the answer's bytes have left the process would drop them.
    close = () => {
      if (timer) clearTimeout(timer);
      if (this.writableFinished) this.destroy();
      else this.once('finish', () => this.destroy());
    };
    const checkBounds = () => {
      const now = Date.now();
      const idleLeft = bounds.idleMs - (now - lastByteAt);
      const totalLeft = bounds.totalMs - (now - startedAt);
      if (idleLeft <= 0 || totalLeft <= 0) close?.();
      else timer = setTimeout(checkBounds, Math.min(idleLeft, totalLeft));
    };
    this.once('close', () => {
      if (timer) clearTimeout(timer);
      open.delete(this);
    });
    // The client's end of the stream: it has read the answer and stopped.
    this.once('end', close);
    if (req.complete || overBudget || discarded > bounds.maxBytes) close();
    else checkBounds();
  };
}
