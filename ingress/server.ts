import { once } from 'node:events';
import type { Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Express } from 'express';

export interface RunningServer {
  readonly server: Server;
  readonly port: number;
  /**
   * Stops accepting connections, lets in-flight requests finish for up to `timeoutMs`, then cuts
   * whatever is left. Resolves once the server is closed.
   */
  close(timeoutMs: number): Promise<void>;
}

/** Listens on `port` (0 picks a free one) and returns a handle that shuts down gracefully. */
export async function listen(app: Express, port: number, host: string): Promise<RunningServer> {
  const server = app.listen(port, host);
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
      const timer = setTimeout(() => server.closeAllConnections(), timeoutMs);
      timer.unref();
      await closed;
      clearTimeout(timer);
    },
  };
}
