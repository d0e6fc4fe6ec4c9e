import { randomUUID } from 'node:crypto';

import { Redis } from 'ioredis';
import request from 'supertest';

import { type LocalRedis, startLocalRedis } from '../../../scripts/lib/redis-server';
import { REDIS_OUT_OF_MEMORY_RETRY_AFTER_SECONDS } from '../../../shared/http/error-handler';
import { isRedisOutOfMemory, isRedisUnavailable } from '../../../shared/redis/connections';
import { createTestApp, type TestApp } from '../../helpers/app-fixture';

const PASSWORD = 'out-of-memory-password';
const OOM_DETAIL = 'The service cannot store data right now. Try again later.';

/**
 * Redis full under `noeviction` (what the service requires) refuses every write with
 * `OOM command not allowed when used memory > 'maxmemory'`. The tests fill a private redis-server
 * of their own (maxmemory 1 byte), never the shared test Redis other suites run on.
 */
describe('Redis out of memory', () => {
  let redis: LocalRedis;
  let control: Redis;
  let subject: TestApp;
  let ownerToken: string;
  const managerAuthorization = `Basic ${Buffer.from(`manager@example.com:${PASSWORD}`).toString('base64')}`;

  const command = (body: object) =>
    request(subject.app).post('/api/command').set('Authorization', `Bearer ${ownerToken}`).send(body);
  const createTeam = (requestId?: string) =>
    command({
      commandType: 'CreateFantasyTeam',
      command: { aggregateRootId: randomUUID(), name: 'Full House' },
      ...(requestId ? { requestId } : {}),
    });
  const seeding = (priority: 'High' | 'Normal') =>
    request(subject.app)
      .post('/api/import')
      .set('Authorization', managerAuthorization)
      .send({
        requestId: randomUUID(),
        importerType: 'UserSeeding',
        priority,
        importData: {
          users: [
            {
              email: `seed-${randomUUID().slice(0, 8)}@example.com`,
              userName: 'seed',
              userType: 'Human',
              roles: ['Member'],
            },
          ],
        },
      });
  const expectOutOfMemoryProblem = (res: request.Response) => {
    expect(res.status).toBe(503);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(res.headers['retry-after']).toBe(String(REDIS_OUT_OF_MEMORY_RETRY_AFTER_SECONDS));
    expect(res.body).toMatchObject({ status: 503, detail: OOM_DETAIL });
  };

  beforeAll(async () => {
    redis = await startLocalRedis();
    control = new Redis(redis.url);
    subject = await createTestApp({ REDIS_URL: redis.url, REDIS_CLUSTER_NODES: '' });
    await subject.createUser({ email: 'owner@example.com', password: PASSWORD });
    await subject.createUser({ email: 'manager@example.com', password: PASSWORD, roles: ['UserManager'] });
    const token = await request(subject.app)
      .post('/api/auth/token')
      .send({ grant_type: 'password', username: 'owner@example.com', password: PASSWORD });
    ownerToken = token.body.access_token as string;
    // Both callers are known to the rate limiter before Redis fills: what fails below is the route.
    expect((await createTeam()).status).toBe(200);
    expect((await seeding('Normal')).status).toBe(200);
  }, 30_000);

  beforeEach(async () => {
    await control.config('SET', 'maxmemory', '1');
  });
  afterEach(async () => {
    await control.config('SET', 'maxmemory', '0');
  });
  afterAll(async () => {
    await subject?.close();
    control?.disconnect();
    await redis?.stop();
  });

  it('When Redis refuses writes, then a command is a 503 problem with Retry-After, not a 500, and nothing is written', async () => {
    const requestId = randomUUID();
    const before = await control.dbsize();

    expectOutOfMemoryProblem(await createTeam(requestId));
    expectOutOfMemoryProblem(await createTeam());
    expect(await control.dbsize()).toBe(before);
    expect(subject.logs.lines).toContainEqual(
      expect.objectContaining({ level: 'error', message: 'request failed: redis out of memory' }),
    );
    expect(subject.logs.lines).not.toContainEqual(expect.objectContaining({ message: 'unhandled error' }));

    // Memory freed, the same requestId runs: the refusal was not remembered as its answer.
    await control.config('SET', 'maxmemory', '0');
    const retried = await createTeam(requestId);
    expect(retried.status).toBe(200);
    expect(retried.body).toMatchObject({ requestId, success: true });
  });

  it('When Redis fills up right after an append, then the command is answered 200 (it took effect), and its retry replays it', async () => {
    let fillAfterAppend = false;
    await control.config('SET', 'maxmemory', '0');
    const filling = await createTestApp(
      { REDIS_URL: redis.url, REDIS_CLUSTER_NODES: '', REDIS_KEY_PREFIX: subject.config.redisKeyPrefix },
      {},
      {
        afterAppend: async () => {
          if (fillAfterAppend) await control.config('SET', 'maxmemory', '1');
        },
      },
    );
    try {
      const teamId = randomUUID();
      const send = (body: object) =>
        request(filling.app).post('/api/command').set('Authorization', `Bearer ${ownerToken}`).send(body);
      expect(
        (
          await send({
            commandType: 'CreateFantasyTeam',
            command: { aggregateRootId: teamId, name: 'Almost Full' },
          })
        ).status,
      ).toBe(200);
      const requestId = randomUUID();
      const link = {
        commandType: 'LinkFantasyTeam',
        command: { aggregateRootId: teamId, fantasyTeamExternalId: 7, fantasyUserId: 8 },
        requestId,
      };
      fillAfterAppend = true;
      // The events are written; only remembering the answer is refused: the answer still goes out.
      const answered = await send(link);
      expect(answered.status).toBe(200);
      expect(answered.body).toMatchObject({ requestId, success: true, eventCount: 1 });

      fillAfterAppend = false;
      await control.config('SET', 'maxmemory', '0');
      const retried = await send(link);
      expect(retried.status).toBe(200);
      expect(retried.body).toMatchObject({ requestId, success: true, eventCount: 1 });
    } finally {
      await filling.close();
    }
  });

  it.each(['High', 'Normal'] as const)(
    'When Redis refuses writes, then a %s import is a 503 problem with Retry-After, not a 500',
    async (priority) => {
      expectOutOfMemoryProblem(await seeding(priority));
      expect(subject.logs.lines).not.toContainEqual(expect.objectContaining({ message: 'unhandled error' }));
    },
  );

  it("When Redis refuses a command, a script's first write or a MULTI, then each error reads as out of memory", async () => {
    const refusals = await Promise.all([
      control.set('oom:plain', '1').catch((error: unknown) => error),
      control
        .eval("return redis.call('SET', KEYS[1], '1')", 1, 'oom:script')
        .catch((error: unknown) => error),
      control
        .multi()
        .set('oom:multi', '1')
        .exec()
        .catch((error: unknown) => error),
    ]);
    for (const error of refusals) {
      expect(isRedisOutOfMemory(error)).toBe(true);
      // Not an outage: a full Redis is answered with its own message and Retry-After.
      expect(isRedisUnavailable(error)).toBe(false);
    }
    expect(isRedisOutOfMemory(await control.get('oom:plain'))).toBe(false);
  });

  it('When Redis refuses writes, then signing in still works or is a 503 problem, never a 500', async () => {
    const res = await request(subject.app)
      .post('/api/auth/token')
      .send({ grant_type: 'password', username: 'owner@example.com', password: PASSWORD });
    // Today a correct password writes nothing; a throttle that counts successes would be refused.
    expect([200, 503]).toContain(res.status);
    if (res.status === 503) expect(res.headers['retry-after']).toBeDefined();
  });
});
