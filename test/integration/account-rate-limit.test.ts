import request from 'supertest';

import { createTestApp, uniquePrefix, type TestApp } from '../helpers/app-fixture';

const CURRENT_USER = { query: { queryType: 'CurrentUser' } };
const basic = (email: string, password: string) =>
  `Basic ${Buffer.from(`${email}:${password}`).toString('base64')}`;

describe('Per-account rate limit', () => {
  // Two ingress replicas of one deployment: same Redis, same key prefix.
  let replicaA: TestApp;
  let replicaB: TestApp;
  const limits = { RATE_LIMIT_PER_ACCOUNT: '4', RATE_LIMIT_WINDOW_SECONDS: '60' };

  beforeAll(async () => {
    const prefix = uniquePrefix();
    replicaA = await createTestApp({ ...limits, REDIS_KEY_PREFIX: prefix });
    replicaB = await createTestApp({ ...limits, REDIS_KEY_PREFIX: prefix });
    await replicaA.createUser({ email: 'busy@example.com', password: 'busy-password-1' });
    await replicaA.createUser({ email: 'calm@example.com', password: 'calm-password-1' });
  });
  afterAll(async () => {
    await replicaA.close();
    await replicaB.close();
  });

  const currentUser = (replica: TestApp, authorization: string) =>
    request(replica.app).post('/api/readmodel').set('Authorization', authorization).send(CURRENT_USER);

  it('When an account exceeds its limit across replicas, then it gets a 429 problem with Retry-After while others go on', async () => {
    const busy = basic('busy@example.com', 'busy-password-1');
    const statuses = [];
    for (const replica of [replicaA, replicaB, replicaA, replicaB]) {
      statuses.push((await currentUser(replica, busy)).status);
    }
    expect(statuses).toEqual([200, 200, 200, 200]);

    const refused = await currentUser(replicaA, busy);
    expect(refused.status).toBe(429);
    expect(refused.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(Number(refused.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(Number(refused.headers['retry-after'])).toBeLessThanOrEqual(60);
    expect(refused.body).toMatchObject({
      status: 429,
      title: 'Too Many Requests',
      detail: 'Too many requests for this account. Try again later.',
      traceId: refused.headers['x-request-id'],
    });
    expect((await currentUser(replicaB, busy)).status).toBe(429);

    expect((await currentUser(replicaB, basic('calm@example.com', 'calm-password-1'))).status).toBe(200);
  });

  it('When credentials are wrong, then the request is refused with 401 and counts against no account limit', async () => {
    await replicaA.createUser({ email: 'careful@example.com', password: 'careful-password-1' });
    for (let attempt = 0; attempt < 5; attempt += 1) {
      expect((await currentUser(replicaA, basic('careful@example.com', `wrong-${attempt}`))).status).toBe(
        401,
      );
    }
    expect((await currentUser(replicaA, basic('careful@example.com', 'careful-password-1'))).status).toBe(
      200,
    );
  });
});

describe('Per-account rate limit switched off', () => {
  it('When RATE_LIMIT_PER_ACCOUNT is 0, then no request is ever refused for rate', async () => {
    const subject = await createTestApp({ RATE_LIMIT_PER_ACCOUNT: '0' });
    try {
      await subject.createUser({ email: 'free@example.com', password: 'free-password-1' });
      const auth = basic('free@example.com', 'free-password-1');
      const answers = await Promise.all(
        Array.from({ length: 20 }, () =>
          request(subject.app).post('/api/readmodel').set('Authorization', auth).send(CURRENT_USER),
        ),
      );
      expect(answers.map((res) => res.status)).toEqual(Array(20).fill(200));
    } finally {
      await subject.close();
    }
  });
});
