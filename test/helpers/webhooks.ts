import { randomUUID } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

import type { Express } from 'express';
import { Webhook } from 'standardwebhooks';
import request from 'supertest';

import { createTestApp, testRedisEnv, uniquePrefix } from './app-fixture';
import { killAll, type ServiceProcess, startServiceProcess } from './processes';
import { passwordGrantToken } from './tokens';

/** One request a receiver got: its headers and raw body, and when. */
export interface ReceivedWebhook {
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
  readonly receivedAt: number;
}

/**
 * A real HTTP receiver on loopback: records every request and answers it with `status` as it was
 * when the request arrived (200 unless a test changes it). `stop()`/`start()` take it down and bring it back on the same port.
 */
export interface WebhookReceiver {
  readonly url: string;
  readonly received: ReceivedWebhook[];
  status: number;
  /** How long each answer waits (a slow endpoint). */
  delayMs: number;
  /** From now on, answers wait (the requests are still recorded) until releaseHeld(). */
  hold(): void;
  /** Sends every answer held, and stops holding. */
  releaseHeld(): void;
  stop(): Promise<void>;
  start(): Promise<void>;
}

export async function startReceiver(path = '/hook'): Promise<WebhookReceiver> {
  const received: ReceivedWebhook[] = [];
  let server: Server | undefined;
  let port = 0;
  let holding = false;
  const held: (() => void)[] = [];
  const receiver: WebhookReceiver = {
    url: '',
    received,
    status: 200,
    delayMs: 0,
    hold() {
      holding = true;
    },
    releaseHeld() {
      holding = false;
      for (const answer of held.splice(0)) answer();
    },
    async start() {
      server = createServer((req, res) => {
        let body = '';
        req.on('data', (chunk: Buffer) => (body += chunk.toString()));
        req.on('end', () => {
          received.push({ headers: req.headers, body, receivedAt: Date.now() });
          // Decided as the request arrives: a test that saw it received and then changes `status`
          // changes the answers to later requests only.
          const status = receiver.status;
          const answer = () => {
            res.statusCode = status;
            res.end();
          };
          if (holding) held.push(answer);
          else setTimeout(answer, receiver.delayMs);
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

/** Env of a webhook test: private targets allowed (the receiver is on loopback), fast retries. */
export const WEBHOOK_TEST_ENV: Record<string, string> = {
  WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
  WEBHOOK_RETRY_SCHEDULE: '0,50ms,100ms',
  JWT_SECRET: 'webhook-delivery-test-jwt-secret-of-32-chars',
};

/**
 * An in-process app (the ingress) and real worker processes sharing one fresh key prefix, an
 * Admin to send commands as, and helpers for teams. `close()` kills the workers and the app.
 */
export async function createWebhookHarness(env: Record<string, string> = {}) {
  const prefix = uniquePrefix();
  const allEnv = { ...WEBHOOK_TEST_ENV, ...env, REDIS_KEY_PREFIX: prefix };
  const subject = await createTestApp(allEnv);
  const admin = await adminCommander(subject.app, (user) => subject.createUser(user));
  const workers: ServiceProcess[] = [];

  /** Creates a subscription; returns its id and the secret answered. */
  const subscribe = async (url: string, eventTypes: string[] = ['*']) => {
    const id = randomUUID();
    const res = await admin.send('CreateWebhookSubscription', { aggregateRootId: id, url, eventTypes });
    if (res.status !== 200) throw new Error(`CreateWebhookSubscription answered ${res.status}: ${res.text}`);
    return { id, secret: (res.body as { signingSecret: string }).signingSecret };
  };

  /** Creates a team and links it `links` times (unlinking between): 1 + 2*links - 1 events. */
  const teamWithEvents = async (events: number) => {
    const teamId = randomUUID();
    const ok = (res: request.Response) => {
      if (res.status !== 200) throw new Error(`command answered ${res.status}: ${res.text}`);
    };
    ok(
      await admin.send('CreateFantasyTeam', { aggregateRootId: teamId, name: `team ${teamId.slice(0, 6)}` }),
    );
    for (let i = 1; i < events; i++) {
      ok(
        i % 2 === 1
          ? await admin.send('LinkFantasyTeam', {
              aggregateRootId: teamId,
              fantasyTeamExternalId: i,
              fantasyUserId: i,
            })
          : await admin.send('UnlinkFantasyTeam', { aggregateRootId: teamId }),
      );
    }
    return teamId;
  };

  return {
    subject,
    admin,
    prefix,
    subscribe,
    teamWithEvents,
    async startWorker(extra: Record<string, string> = {}) {
      const worker = startServiceProcess('workers/main.ts', {
        ...testRedisEnv(),
        ...allEnv,
        ...extra,
      });
      workers.push(worker);
      await worker.waitForOutput('worker ready', 30_000);
      return worker;
    },
    async close() {
      await killAll(...workers);
      await subject.close();
    },
  };
}

/** The deliveries a receiver got, parsed: webhook-id, payload, and whether `secret` verifies. */
export function parsedDeliveries(receiver: WebhookReceiver) {
  return receiver.received.map((delivery) => {
    const payload = JSON.parse(delivery.body) as {
      type: string;
      timestamp: string;
      data: Record<string, unknown> & { aggregateId: string; version: number };
    };
    return { id: String(delivery.headers['webhook-id']), payload, delivery };
  });
}

/** Whether Standard Webhooks' own verifier accepts the delivery with `secret`. */
export function verifies(delivery: ReceivedWebhook, secret: string): boolean {
  try {
    new Webhook(secret).verify(delivery.body, {
      'webhook-id': String(delivery.headers['webhook-id']),
      'webhook-timestamp': String(delivery.headers['webhook-timestamp']),
      'webhook-signature': String(delivery.headers['webhook-signature']),
    });
    return true;
  } catch {
    return false;
  }
}

/**
 * Whether, for every aggregate, the versions received (duplicates dropped by webhook-id, as a
 * receiver would) are exactly 1..n in order, and n is `expected` of each aggregate.
 */
export function inOrderPerAggregate(
  receiver: WebhookReceiver,
  expected: ReadonlyMap<string, number>,
): { ok: boolean; seen: Record<string, number[]> } {
  const seenIds = new Set<string>();
  const seen: Record<string, number[]> = {};
  for (const { id, payload } of parsedDeliveries(receiver)) {
    if (seenIds.has(id)) continue;
    seenIds.add(id);
    (seen[payload.data.aggregateId] ??= []).push(payload.data.version);
  }
  const ok = [...expected].every(([aggregateId, count]) => {
    const versions = seen[aggregateId] ?? [];
    return versions.length === count && versions.every((version, i) => version === i + 1);
  });
  return { ok, seen };
}
