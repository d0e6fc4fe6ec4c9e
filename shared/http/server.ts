import { once } from 'node:events';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

import type { Express } from 'express';

import { HTTP_TIMEOUT_DEFAULTS, type HttpTimeouts } from '../config';
import { cutLingeringConnections } from './lingering-close';

export interface RunningServer {
  readonly server: Server;
  readonly port: number;
  /**
   * Stops accepting connections, lets in-flight requests finish for up to `timeoutMs`, then cuts
   * whatever is left. Resolves once the server is closed.
   */
  close(timeoutMs: number): Promise<void>;
}

/**
 * How often Node looks for requests past their time. Node checks `requestTimeout` and
 * `headersTimeout` only on this interval (30 s by default), so a 10 s headers timeout took up to
 * 40 s; a quarter of the shorter bound, between 10 ms and 1 s, keeps the bounds close to what they
 * say for the cost of a walk over the open connections once a second.
 */
export function connectionsCheckingIntervalMs(timeouts: HttpTimeouts): number {
  const shorter = Math.min(timeouts.requestTimeoutMs, timeouts.headersTimeoutMs);
  return Math.max(10, Math.min(1_000, Math.floor(shorter / 4)));
}

/**
 * Listens on `port` (0 picks a free one) and returns a handle that shuts down gracefully. The
 * server bounds what a slow or silent client can hold (HTTP_REQUEST_TIMEOUT_MS and friends): an
 * unfinished request gets a 408 (or, once an answer has begun, its connection is closed), an idle
 * keep-alive connection is closed. Processes pass their configured bounds; the defaults are the
 * settings' defaults.
 */
export async function listen(
  app: Express,
  port: number,
  host: string,
  timeouts: HttpTimeouts = HTTP_TIMEOUT_DEFAULTS,
): Promise<RunningServer> {
  const server = createServer(
    {
      requestTimeout: timeouts.requestTimeoutMs,
      headersTimeout: timeouts.headersTimeoutMs,
      keepAliveTimeout: timeouts.keepAliveTimeoutMs,
      connectionsCheckingInterval: connectionsCheckingIntervalMs(timeouts),
    },
    app,
  );
  server.listen(port, host);
  await once(server, 'listening');
  let closing = false;
  // Keep-alive clients would otherwise reuse a connection the server is about to drop.
  server.on('request', (_req, res: ServerResponse) => {
    if (closing) res.setHeader('Connection', 'close');
  });

  return {
    server,
    port: (server.address() as AddressInfo).port,
    async close(timeoutMs: number) {
      closing = true;
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      // Their answers are delivered; what they still send is owed nothing.
      cutLingeringConnections(server);
      const timer = setTimeout(() => server.closeAllConnections(), timeoutMs);
      timer.unref();
      await closed;
      clearTimeout(timer);
    },
  };
}
