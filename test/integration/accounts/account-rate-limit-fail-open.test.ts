/**
 * The account rate limit when its counter does not answer at once (issue 38, item 2; ADR 0034).
 * It opens only when the master holding the account's counter is known to be away (a failover),
 * and then admits a tenth of the limit per window and replica, never the whole window. A slow
 * answer is waited for: a caller that stalls the ingress's event loop (a large body) must not be
 * able to make a timer open it (account-rate-limit-stall.test.ts). Each case on Redis servers of this
 * test's own.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

import { Redis } from 'ioredis';
import request from 'supertest';

import { FAIL_OPEN_SHARE_OF_LIMIT } from '../../../ingress/auth/account-rate-limit';
import { type LocalRedisCluster, startLocalRedisCluster } from '../../../scripts/lib/redis-cluster';
import { type LocalRedis, startLocalRedis } from '../../../scripts/lib/redis-server';
import { masterHolding } from '../../../shared/redis/connections';
import { createTestApp, type TestApp } from '../../helpers/app-fixture';
import { bearerToken } from '../../helpers/http-client';
import { parseExposition, sampleSum } from '../../helpers/metrics';

const LIMIT = 50;
const PASSWORD = 'steady-password-1';
const basic = (email: string) => `Basic ${Buffer.from(`${email}:${PASSWORD}`).toString('base64')}`;

const failOpens = async (subject: TestApp) =>
  sampleSum(parseExposition(await subject.metrics.registry.metrics()), 'fts_rate_limit_fail_open_total');

/** The app on a port of its own, so a burst shares one server rather than one each. */
async function listen(subject: TestApp): Promise<Server> {
  const server = createServer(subject.app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return server;
}

const baseUrl = (target: Server) => `http://127.0.0.1:${(target.address() as AddressInfo).port}`;

/** CurrentUser, signed in by Basic (an e-mail) or by a ready `Authorization` value (a Bearer token). */
const currentUser = (target: Server, caller: string) =>
  request(baseUrl(target))
    .post('/api/readmodel')
    .set('Authorization', caller.startsWith('Bearer ') ? caller : basic(caller))
    .send({ query: { queryType: 'CurrentUser' } });

describe('Per-account rate limit while its counter is slow', () => {
  let redis: LocalRedis;
  let subject: TestApp;
  let server: Server;
  let admin: Redis;

  beforeAll(async () => {
    redis = await startLocalRedis();
    admin = new Redis(redis.port, '127.0.0.1');
    // Every request reserves in Redis (a limit this small leases one point at a time).
    subject = await createTestApp({
      REDIS_URL: redis.url,
      REDIS_CLUSTER_NODES: '',
      RATE_LIMIT_PER_ACCOUNT: String(LIMIT),
      RATE_LIMIT_WINDOW_SECONDS: '60',
    });
    server = await listen(subject);
  });
  afterAll(async () => {
    await new Promise((resolve) => server.close(resolve));
    await subject.close();
    admin.disconnect();
    await redis.stop();
  });

  it('When the counter’s server holds its writes for a second, then the request waits for it and is counted: a slow counter is not an absent one', async () => {
    await subject.createUser({ email: 'slow-counter@example.com', password: PASSWORD });
    expect((await currentUser(server, 'slow-counter@example.com')).status).toBe(200);

    await admin.client('PAUSE', 1_000, 'WRITE');
    const started = Date.now();
    const res = await currentUser(server, 'slow-counter@example.com');
    expect(res.status).toBe(200);
    expect(Date.now() - started).toBeGreaterThanOrEqual(500);
    expect(await failOpens(subject)).toBe(0);
  });
});

describe('Per-account rate limit while its counter’s master is away (Redis Cluster)', () => {
  let cluster: LocalRedisCluster;
  let subject: TestApp;
  let server: Server;

  beforeAll(async () => {
    cluster = await startLocalRedisCluster({ masters: 3 });
    subject = await createTestApp({
      REDIS_URL: '',
      REDIS_CLUSTER_NODES: cluster.nodeList,
      RATE_LIMIT_PER_ACCOUNT: String(LIMIT),
      RATE_LIMIT_WINDOW_SECONDS: '60',
    });
    server = await listen(subject);
  }, 60_000);
  afterAll(async () => {
    await new Promise((resolve) => server.close(resolve));
    await subject.close();
    await cluster.stop();
  });

  it('When the master holding the account’s counter is stopped, then the account is admitted a tenth of its limit uncounted, then refused with the 429 problem', async () => {
    const email = 'away-master@example.com';
    const userId = await subject.createUser({ email, password: PASSWORD });
    // A Bearer token: its check reads nothing from the account's partition (the account cache).
    const token = await bearerToken(baseUrl(server), email, PASSWORD);
    expect((await currentUser(server, token)).status).toBe(200);

    const counterMaster = masterHolding(subject.redis, subject.services.keys.accountRequests(userId));
    await cluster.stopNode(Number(counterMaster.options.port));
    // Known to be away: its connection is no longer ready.
    const deadline = Date.now() + 20_000;
    while (counterMaster.status === 'ready' && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(counterMaster.status).not.toBe('ready');

    const statuses: number[] = [];
    for (let i = 0; i < LIMIT; i += 1) statuses.push((await currentUser(server, token)).status);

    const allowance = Math.floor(LIMIT * FAIL_OPEN_SHARE_OF_LIMIT);
    expect(statuses.filter((status) => status === 200)).toHaveLength(allowance);
    expect(statuses.slice(allowance).every((status) => status === 429)).toBe(true);
    expect(await failOpens(subject)).toBe(allowance);
  }, 60_000);
});
