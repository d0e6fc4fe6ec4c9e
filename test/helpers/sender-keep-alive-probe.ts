/**
 * Run as its own process (tsx; jest cannot load the sender's ES-module agent): sends `SENDS`
 * deliveries one after another to a keep-alive node http server and prints one JSON line: how
 * many were ok, how many client sockets carried them, the most 'connect'/'secureConnect'
 * listeners any of them held, and the process warnings seen.
 */
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

import { WebhookSender } from '../../workers/webhooks/webhook-sender';

const SENDS = Number(process.env.SENDS ?? '30');

async function main(): Promise<void> {
  const warnings: string[] = [];
  process.on('warning', (warning) => warnings.push(`${warning.name}: ${warning.message}`));
  const server = http.createServer((request, response) => {
    request.resume();
    request.once('end', () => response.writeHead(204).end());
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;

  const sockets = new Set<Socket>();
  const originalRequest = http.request;
  http.request = ((...args: Parameters<typeof http.request>) => {
    const request = originalRequest(...args);
    request.once('socket', (socket: Socket) => sockets.add(socket));
    return request;
  }) as typeof http.request;

  const sender = new WebhookSender({ allowPrivateTargets: true, timeoutMs: 10_000 });
  let ok = 0;
  for (let attempt = 0; attempt < SENDS; attempt += 1) {
    if ((await sender.send(url, {}, '{}')).ok) ok += 1;
    // Lets the response's end hand the socket back to the agent before the next attempt.
    await new Promise((resolve) => setImmediate(resolve));
  }
  // Warnings are emitted on the next tick.
  await new Promise((resolve) => setTimeout(resolve, 50));
  const maxConnectListeners = Math.max(
    0,
    ...[...sockets].map((socket) => socket.listenerCount('connect') + socket.listenerCount('secureConnect')),
  );
  process.stdout.write(`${JSON.stringify({ ok, sockets: sockets.size, maxConnectListeners, warnings })}\n`);
  sender.close();
  server.closeAllConnections();
  server.close();
}

void main();
