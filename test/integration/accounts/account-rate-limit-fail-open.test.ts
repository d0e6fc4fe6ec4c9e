/**
 * The account rate limit while the master holding the account's counter does not answer (a
 * failover, ADR 0030): the request is admitted at once, uncounted, and counted in
 * fts_rate_limit_fail_open_total, rather than held for the failover. A redis-server of this test's
 * own, whose writes are paused (CLIENT PAUSE WRITE): reads answer, the counter's script waits.
 */
import { Redis } from 'ioredis';
import request from 'supertest';

import { ACCOUNT_RATE_LIMIT_FAIL_OPEN } from '../../../ingress/auth/account-rate-limit';
import { type LocalRedis, startLocalRedis } from '../../../scripts/lib/redis-server';
import { createTestApp, type TestApp } from '../../helpers/app-fixture';
import { parseExposition, sampleSum } from '../../helpers/metrics';

const basic = (email: string, password: string) =>
  `Basic ${Buffer.from(`${email}:${password}`).toString('base64')}`;
const PAUSE_MS = 3_000;

describe('Per-account rate limit while its counter does not answer', () => {
  let server: LocalRedis;
  let subject: TestApp;
  let admin: Redis;

  beforeAll(async () => {
    server = await startLocalRedis();
    admin = new Redis(server.port, '127.0.0.1');
    // Every request reserves in Redis (a limit this small leases one point at a time).
    subject = await createTestApp({
      REDIS_URL: server.url,
      REDIS_CLUSTER_NODES: '',
      RATE_LIMIT_PER_ACCOUNT: '50',
      RATE_LIMIT_WINDOW_SECONDS: '60',
    });
    await subject.createUser({ email: 'steady@example.com', password: 'steady-password-1' });
  });
  afterAll(async () => {
    await subject.close();
    admin.disconnect();
    await server.stop();
  });

  const currentUser = () =>
    request(subject.app)
      .post('/api/readmodel')
      .set('Authorization', basic('steady@example.com', 'steady-password-1'))
      .send({ query: { queryType: 'CurrentUser' } });
  const failOpens = async () =>
    sampleSum(parseExposition(await subject.metrics.registry.metrics()), 'fts_rate_limit_fail_open_total');

  it('When the counter’s server holds its writes, then the request is answered at once, uncounted, and the fail-open is counted', async () => {
    expect((await currentUser()).status).toBe(200);
    expect(await failOpens()).toBe(0);

    await admin.client('PAUSE', PAUSE_MS, 'WRITE');
    const started = Date.now();
    const res = await currentUser();
    const waited = Date.now() - started;
    expect(res.status).toBe(200);
    // Far below the pause: the limiter gave up on the counter after its bound.
    expect(waited).toBeLessThan(ACCOUNT_RATE_LIMIT_FAIL_OPEN.afterMs + 1_500);
    expect(waited).toBeLessThan(PAUSE_MS);
    expect(await failOpens()).toBe(1);
    // Within the fail-open time the account's requests ask Redis nothing.
    expect((await currentUser()).status).toBe(200);
    expect(await failOpens()).toBe(1);
    await admin.client('UNPAUSE');
  });
});
