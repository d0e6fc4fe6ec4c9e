import request from 'supertest';

import { createTestApp, type TestApp, uniquePrefix } from '../../helpers/app-fixture';

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

describe('Per-account rate limit, counted in leases', () => {
  // Two replicas again; a limit large enough for leases of more than one point (1% of it).
  let replicaA: TestApp;
  let replicaB: TestApp;
  const LIMIT = 400;

  beforeAll(async () => {
    const prefix = uniquePrefix();
    const limits = { RATE_LIMIT_PER_ACCOUNT: String(LIMIT), RATE_LIMIT_WINDOW_SECONDS: '60' };
    replicaA = await createTestApp({ ...limits, REDIS_KEY_PREFIX: prefix });
    replicaB = await createTestApp({ ...limits, REDIS_KEY_PREFIX: prefix });
  });
  afterAll(async () => {
    await replicaA.close();
    await replicaB.close();
  });

  const currentUser = (replica: TestApp, authorization: string) =>
    request(replica.app).post('/api/readmodel').set('Authorization', authorization).send(CURRENT_USER);
  const requestsCounted = async (userId: string) =>
    Number(await replicaA.redis.get(replicaA.services.keys.accountRequests(userId)));

  it('When an account sends requests, then a replica reserves them in Redis a lease at a time, not one call each', async () => {
    const userId = await replicaA.createUser({ email: 'steady@example.com', password: 'steady-password-1' });
    const auth = basic('steady@example.com', 'steady-password-1');
    const lease = LIMIT / 100;
    for (let i = 0; i < lease; i++) expect((await currentUser(replicaA, auth)).status).toBe(200);
    // One lease of 1% of the limit covered them all: Redis was asked once.
    expect(await requestsCounted(userId)).toBe(lease);
    expect((await currentUser(replicaA, auth)).status).toBe(200);
    expect(await requestsCounted(userId)).toBe(2 * lease);
  });

  it('When a replica asks for a lease larger than what the account has left, then it gets exactly what was left', async () => {
    const userId = await replicaA.createUser({ email: 'late@example.com', password: 'late-password-1' });
    const auth = basic('late@example.com', 'late-password-1');
    // The other replicas have spent all but two points of this window (replica B has never seen
    // the account, so it asks for a full lease).
    await replicaB.redis.set(replicaB.services.keys.accountRequests(userId), String(LIMIT - 2), 'PX', 60_000);
    const statuses = [];
    for (let i = 0; i < 4; i++) statuses.push((await currentUser(replicaB, auth)).status);
    expect(statuses).toEqual([200, 200, 429, 429]);
  });

  it('When many requests race on both replicas, then exactly the limit is admitted and the rest get 429', async () => {
    const userId = await replicaA.createUser({ email: 'racer@example.com', password: 'racer-password-1' });
    const auth = basic('racer@example.com', 'racer-password-1');
    const admitted = { A: 0, B: 0 };
    const refused = { A: 0, B: 0 };
    // Bursts of concurrent requests on each replica until both have refused one: by then neither
    // holds an unspent lease, so every reserved point was spent on an admitted request.
    while (refused.A === 0 || refused.B === 0) {
      const burst = await Promise.all(
        Array.from({ length: 20 }, (_, i) => {
          const name = i % 2 === 0 ? 'A' : 'B';
          return currentUser(name === 'A' ? replicaA : replicaB, auth).then((res) => ({ name, res }));
        }),
      );
      for (const { name, res } of burst) {
        expect([200, 429]).toContain(res.status);
        if (res.status === 200) admitted[name as 'A' | 'B'] += 1;
        else refused[name as 'A' | 'B'] += 1;
      }
      expect(admitted.A + admitted.B + refused.A + refused.B).toBeLessThan(LIMIT * 2);
    }
    expect(admitted.A + admitted.B).toBe(LIMIT);
    expect(await requestsCounted(userId)).toBeGreaterThanOrEqual(LIMIT);
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
