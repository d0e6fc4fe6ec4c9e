import { randomUUID } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

import type { Express } from 'express';
import request from 'supertest';

import { passwordGrantToken } from './tokens';

/** One request a receiver got: its headers and raw body, and when. */
export interface ReceivedWebhook {
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
  readonly receivedAt: number;
}

/**
 * A real HTTP receiver on loopback: records every request and answers `status()` (200 unless a
 * test changes it). `stop()`/`start()` take it down and bring it back on the same port.
 */
export interface WebhookReceiver {
  readonly url: string;
  readonly received: ReceivedWebhook[];
  status: number;
  stop(): Promise<void>;
  start(): Promise<void>;
}

export async function startReceiver(path = '/hook'): Promise<WebhookReceiver> {
  const received: ReceivedWebhook[] = [];
  let server: Server | undefined;
  let port = 0;
  const receiver: WebhookReceiver = {
    url: '',
    received,
    status: 200,
    async start() {
      server = createServer((req, res) => {
        let body = '';
        req.on('data', (chunk: Buffer) => (body += chunk.toString()));
        req.on('end', () => {
          received.push({ headers: req.headers, body, receivedAt: Date.now() });
          res.statusCode = receiver.status;
          res.end();
        });
      });
      await new Promise<void>((resolve) => server?.listen(port, '127.0.0.1', resolve));
      port = (server.address() as AddressInfo).port;
      (receiver as { url: string }).url = `http://127.0.0.1:${port}${path}`;
    },
    async stop() {
      const closing = server;
      server = undefined;
      if (!closing) return;
      closing.closeAllConnections();
      await new Promise<void>((resolve) => closing.close(() => resolve()));
    },
  };
  await receiver.start();
  return receiver;
}

/** An Admin's Bearer token and a way to send commands with it. */
export async function adminCommander(
  app: Express,
  createUser: (user: { email: string; password: string; roles: never }) => Promise<string>,
  roles: string[] = ['Admin'],
) {
  const email = `webhooks-${randomUUID().slice(0, 8)}@example.com`;
  const password = 'webhooks-admin-password';
  const userId = await createUser({ email, password, roles: roles as never });
  const token = await passwordGrantToken(app, email, password);
  const send = (commandType: string, command: object, extra: object = {}) =>
    request(app)
      .post('/api/command')
      .set('Authorization', `Bearer ${token}`)
      .send({ commandType, command, ...extra });
  const query = (query: object, extra: object = {}) =>
    request(app)
      .post('/api/readmodel')
      .set('Authorization', `Bearer ${token}`)
      .send({ query, ...extra });
  return { email, userId, token, send, query };
}
