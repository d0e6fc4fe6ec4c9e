/**
 * IMPORT_BYTES_PER_ACCOUNT_PER_MINUTE (issue 29): the bytes of import bodies one account may send
 * per minute, counted in Redis across ingress replicas after authentication and before the body is
 * read; past it a 429 problem with Retry-After. Anonymous callers cost nothing.
 */
import { randomUUID } from 'node:crypto';
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

import request from 'supertest';

import { PROBLEMS } from '../../../shared/http/problem';
import { scanKeys } from '../../../shared/redis/connections';
import { createTestApp, type TestApp, uniquePrefix } from '../../helpers/app-fixture';

const BYTES_PER_MINUTE = 20 * 1024;
const PASSWORD = 'import-byte-limit-password';
const basic = (email: string) => `Basic ${Buffer.from(`${email}:${PASSWORD}`).toString('base64')}`;

/** A dry-run UserSeeding of `bytes` bytes, blanks after the JSON making up the size (it changes nothing). */
function importBody(bytes: number): string {
  const users = [{ email: `sized-${randomUUID()}@example.com`, userType: 'Human', roles: ['Member'] }];
  const json = JSON.stringify({
    requestId: randomUUID(),
    importerType: 'UserSeeding',
    dryRun: true,
    importData: { users },
  });
  return json + ' '.repeat(bytes - json.length);
}

describe('Import bytes per account per minute', () => {
  // Two ingress replicas of one deployment: same Redis, same key prefix.
  let replicaA: TestApp;
  let replicaB: TestApp;

  beforeAll(async () => {
    const env = {
      REDIS_KEY_PREFIX: uniquePrefix(),
      IMPORT_BYTES_PER_ACCOUNT_PER_MINUTE: String(BYTES_PER_MINUTE),
    };
    replicaA = await createTestApp(env);
    replicaB = await createTestApp(env);
  });
  afterAll(async () => {
    await Promise.all([replicaA, replicaB].map((replica) => replica.services.importQueue.close()));
    await replicaA.close();
    await replicaB.close();
  });

  const send = (replica: TestApp, body: string, authorization?: string) => {
    const req = request(replica.app).post('/api/import').set('Content-Type', 'application/json');
    return (authorization ? req.set('Authorization', authorization) : req).send(body);
  };
  const manager = async () => {
    const email = `byte-limit-${randomUUID().slice(0, 8)}@example.com`;
    await replicaA.createUser({ email, password: PASSWORD, roles: ['UserManager'] });
    return basic(email);
  };

  it('When an account sends more import bytes in a minute than IMPORT_BYTES_PER_ACCOUNT_PER_MINUTE across two replicas, then it gets the 429 problem with Retry-After, while another account goes on', async () => {
    const busy = await manager();
    const sizeOfEach = 8 * 1024;
    expect((await send(replicaA, importBody(sizeOfEach), busy)).status).toBe(200);
    expect((await send(replicaB, importBody(sizeOfEach), busy)).status).toBe(200);

    const refused = await send(replicaA, importBody(sizeOfEach), busy);
    expect(refused.status).toBe(429);
    expect(refused.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(Number(refused.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(Number(refused.headers['retry-after'])).toBeLessThanOrEqual(60);
    expect(refused.body).toEqual({
      ...PROBLEMS[429],
      status: 429,
      detail: `Too many import bytes for this account: at most ${BYTES_PER_MINUTE} bytes of import bodies a minute. Try again later.`,
      traceId: refused.headers['x-request-id'],
    });
    // Refused from memory on A, from Redis on B: the count is the deployment's.
    expect((await send(replicaB, importBody(1024), busy)).status).toBe(429);

    expect((await send(replicaB, importBody(sizeOfEach), await manager())).status).toBe(200);
  });

  it('When anonymous callers send import bodies, then they get the empty 401 and nothing is counted', async () => {
    const counters = async (): Promise<Record<string, string | null>> => {
      const found: string[] = [];
      const pattern = `${replicaA.services.keys.importBytesPrefix()}*`;
      for await (const keys of scanKeys(replicaA.redis, pattern)) found.push(...keys);
      return Object.fromEntries(
        await Promise.all(found.map(async (key) => [key, await replicaA.redis.get(key)] as const)),
      );
    };
    const before = await counters();
    for (let i = 0; i < 5; i++) {
      const res = await send(replicaA, importBody(BYTES_PER_MINUTE));
      expect({ status: res.status, body: res.text }).toEqual({ status: 401, body: '' });
    }
    expect(await counters()).toEqual(before);
  });
});

describe('Import bytes of chunked bodies', () => {
  const BODY_LIMIT = 16 * 1024;
  const BUDGET = 40 * 1024;
  let subject: TestApp;
  let server: Server;

  beforeAll(async () => {
    subject = await createTestApp({
      IMPORT_BODY_LIMIT: String(BODY_LIMIT),
      IMPORT_BYTES_PER_ACCOUNT_PER_MINUTE: String(BUDGET),
    });
    server = createServer(subject.app);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  });
  afterAll(async () => {
    await new Promise((resolve) => server.close(resolve));
    await subject.services.importQueue.close();
    await subject.close();
  });

  /** A UserManager's credentials and the key of its byte counter. */
  const account = async () => {
    const email = `chunked-${randomUUID().slice(0, 8)}@example.com`;
    const userId = await subject.createUser({ email, password: PASSWORD, roles: ['UserManager'] });
    const counter = `${subject.services.keys.importBytesPrefix()}:${userId}`;
    return { authorization: basic(email), counted: async () => Number(await subject.redis.get(counter)) };
  };

  /** POSTs `body` chunked (no Content-Length, as a streaming client sends it); resolves to the status. */
  const sendChunked = (body: string, authorization: string) =>
    new Promise<number>((resolve, reject) => {
      const req = httpRequest(
        {
          host: '127.0.0.1',
          port: (server.address() as AddressInfo).port,
          method: 'POST',
          path: '/api/import',
          headers: { 'Content-Type': 'application/json', Authorization: authorization },
        },
        (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
        },
      );
      req.on('error', reject);
      for (let at = 0; at < body.length; at += 4096) req.write(body.slice(at, at + 4096));
      req.end();
    });

  it('When an account sends small chunked imports in a row, then each costs the bytes it held, not IMPORT_BODY_LIMIT: more of them pass than the budget holds body limits', async () => {
    const { authorization, counted } = await account();
    const statuses: number[] = [];
    for (let i = 0; i < 8; i++) statuses.push(await sendChunked(importBody(1024), authorization));
    expect(statuses).toEqual(Array.from({ length: 8 }, () => 200));
    expect(await counted()).toBe(8 * 1024);
  });

  it('When an account floods chunked imports past the budget, then it still gets the 429: each needs the body limit free before it is read', async () => {
    const { authorization, counted } = await account();
    const statuses: number[] = [];
    for (let i = 0; i < 5; i++) statuses.push(await sendChunked(importBody(12 * 1024), authorization));
    // 12 KB, 24 KB and 36 KB counted; the fourth would need 16 KB more than the 40 KB budget has.
    expect(statuses).toEqual([200, 200, 200, 429, 429]);
    expect(await counted()).toBeGreaterThan(BUDGET);
  });

  it('When a chunked import is refused, then it costs what was read of it: the bytes of one that is not JSON, the whole limit for one too large', async () => {
    const { authorization, counted } = await account();
    expect(await sendChunked('x'.repeat(1000), authorization)).toBe(400);
    expect(await counted()).toBe(1000);
    expect(await sendChunked(importBody(BODY_LIMIT + 4096), authorization)).toBe(413);
    expect(await counted()).toBe(1000 + BODY_LIMIT);
  });

  it('When a chunked body is given back more than was counted, or after its window ended, then the counter never goes below zero nor comes back as a credit', async () => {
    const { importByteLimit, keys } = subject.services;
    const userId = randomUUID();
    const counter = `${keys.importBytesPrefix()}:${userId}`;
    const windowEndsAt = await importByteLimit.consume(userId, 100);
    expect(windowEndsAt).not.toBeNull();
    await importByteLimit.refund(userId, 500, windowEndsAt ?? 0);
    expect(await subject.redis.get(counter)).toBe('0');
    // The window ended (its counter expired): nothing is given to the next one.
    await subject.redis.del(counter);
    await importByteLimit.refund(userId, 500, windowEndsAt ?? 0);
    expect(await subject.redis.exists(counter)).toBe(0);
    // Past the window's end by the clock, nothing is given back even while the counter is there.
    await importByteLimit.consume(userId, 100);
    await importByteLimit.refund(userId, 100, Date.now());
    expect(await subject.redis.get(counter)).toBe('100');
  });
});
