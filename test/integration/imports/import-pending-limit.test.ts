/**
 * At most MAX_PENDING_IMPORTS_PER_USER imports Pending per submitter,
 * across ingress replicas; past it a 429 problem with Retry-After and nothing stored; released
 * whenever an import ends.
 */
import { randomUUID } from 'node:crypto';

import request from 'supertest';

import { createTestApp, type TestApp, uniquePrefix } from '../../helpers/app-fixture';
import { InProcessImportWorker } from '../../helpers/in-process-import-worker';
import { eventually } from '../../helpers/processes';
import { redisState } from '../../helpers/redis-state';
import { userIdForEmail } from '../../helpers/user-ids';

const LIMIT = 2;
const basic = (email: string, password: string) =>
  `Basic ${Buffer.from(`${email}:${password}`).toString('base64')}`;
/** Keys a refused request may still touch: the account's request and import-byte counters, sign-in bookkeeping. */
const NOT_STATE = [/:rate:account/, /:rate:import-bytes/, /:auth:/];

describe('Pending imports per submitter', () => {
  let subject: TestApp;
  let replica: TestApp;
  let worker: InProcessImportWorker;
  const tag = randomUUID().slice(0, 8);

  beforeAll(async () => {
    const env = { REDIS_KEY_PREFIX: uniquePrefix(), MAX_PENDING_IMPORTS_PER_USER: String(LIMIT) };
    subject = await createTestApp(env);
    // A second ingress on the same Redis and prefix: the limit must hold across both.
    replica = await createTestApp(env);
    worker = new InProcessImportWorker(subject);
  });
  afterAll(async () => {
    await worker.close();
    await Promise.all([subject, replica].map((app) => app.services.importQueue.close()));
    await Promise.all([subject.close(), replica.close()]);
  });

  let accounts = 0;
  const newManager = async () => {
    const manager = {
      email: `pending-${tag}-${accounts++}@example.com`,
      password: 'pending-manager-password',
    };
    await subject.createUser({ ...manager, roles: ['UserManager'] });
    return manager;
  };
  const body = (extra: object = {}) => ({
    requestId: randomUUID(),
    importerType: 'UserSeeding',
    priority: 'Normal',
    importData: {
      users: [{ email: `pending-user-${randomUUID()}@example.com`, userType: 'Human', roles: ['Member'] }],
    },
    ...extra,
  });
  const submit = (manager: { email: string; password: string }, sent: object, app = subject) =>
    request(app.app)
      .post('/api/import')
      .set('Authorization', basic(manager.email, manager.password))
      .send(sent);
  const record = (importJobId: string) => subject.services.importResults.get(importJobId);

  it('When an account has the limit Pending, then its next import gets a 429 problem with Retry-After and nothing is stored; a resend of a Pending one, a dry run and another account still pass', async () => {
    await worker.stop();
    const manager = await newManager();
    const first = body();
    for (const sent of [first, body()]) expect((await submit(manager, sent)).body.status).toBe('Pending');

    const before = await redisState(subject.redis, subject.config.redisKeyPrefix, NOT_STATE);
    const refused = await submit(manager, body());
    expect(refused.status).toBe(429);
    expect(refused.headers['retry-after']).toBe('10');
    expect(refused.headers['content-type']).toBe('application/problem+json; charset=utf-8');
    expect(refused.body).toMatchObject({
      type: 'https://tools.ietf.org/html/rfc6585#section-4',
      title: 'Too Many Requests',
      status: 429,
      detail: `Too many imports pending: an account may have at most ${LIMIT} imports Pending at once. Send it again once one of them has finished.`,
    });
    expect(await redisState(subject.redis, subject.config.redisKeyPrefix, NOT_STATE)).toEqual(before);

    // A resend of an existing requestId is not a new import.
    const resent = await submit(manager, first);
    expect(resent.status).toBe(200);
    expect(resent.body.status).toBe('Pending');
    // A dry run stores nothing, so it is not counted.
    expect((await submit(manager, body({ dryRun: true }))).status).toBe(200);
    // The limit is per submitter.
    expect((await submit(await newManager(), body())).body.status).toBe('Pending');
  });

  it('When requests of one account reach two ingress replicas at once, then no more than the limit are accepted', async () => {
    await worker.stop();
    const manager = await newManager();
    const answers = await Promise.all(
      Array.from({ length: 8 }, (_, i) => submit(manager, body(), i % 2 === 0 ? subject : replica)),
    );
    expect(answers.filter((res) => res.status === 200)).toHaveLength(LIMIT);
    expect(answers.filter((res) => res.status === 429)).toHaveLength(8 - LIMIT);
    const pending = await subject.redis.zcard(
      subject.services.keys.importsPendingBySubmitter(userIdForEmail(manager.email)),
    );
    expect(pending).toBe(LIMIT);
  });

  it('When Pending imports end (Completed, or Failed because their data cannot be read), then they no longer count', async () => {
    await worker.stop();
    const manager = await newManager();
    const completing = await submit(manager, body());
    const failing = await submit(manager, body());
    expect((await submit(manager, body())).status).toBe(429);
    // The second job's data no key opens: the worker ends it Failed.
    const job = await subject.services.importQueue.queue.getJob(failing.body.importJobId);
    await job?.updateData({
      ...job.data,
      sealedImportData: 'v1.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA',
    });

    worker.start();
    await eventually(async () => (await record(completing.body.importJobId))?.status === 'Completed', 15_000);
    await eventually(async () => (await record(failing.body.importJobId))?.status === 'Failed', 15_000);
    const again = await Promise.all([submit(manager, body()), submit(manager, body())]);
    expect(again.map((res) => res.status)).toEqual([200, 200]);
  });

  it('When an inline import ends, then it no longer counts', async () => {
    worker.start();
    await eventually(async () => {
      const counts = await subject.services.importQueue.queue.getJobCounts('wait', 'active', 'prioritized');
      return Object.values(counts).every((n) => n === 0);
    });
    const manager = await newManager();
    for (let i = 0; i < LIMIT + 2; i++) {
      const res = await submit(manager, body({ priority: 'High' }));
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ status: 'Completed', processedSynchronously: true });
    }
  });

  it('When the count holds an import that ended but was not released (a release lost with Redis), then the next import repairs it and passes', async () => {
    await worker.stop();
    const manager = await newManager();
    const submitterUserId = userIdForEmail(manager.email);
    const pendingKey = subject.services.keys.importsPendingBySubmitter(submitterUserId);
    const first = await submit(manager, body());
    const second = await submit(manager, body());
    // Ends the first as the worker would, then puts its count back as if the release were lost.
    await subject.services.importResults.failIfPending(first.body.importJobId, 'ended elsewhere');
    await subject.redis.zadd(pendingKey, Date.now(), first.body.importJobId);
    expect(await subject.redis.zcard(pendingKey)).toBe(LIMIT);

    const third = await submit(manager, body());
    expect(third.status).toBe(200);
    expect(await subject.redis.zrange(pendingKey, 0, -1)).toEqual(
      expect.arrayContaining([second.body.importJobId, third.body.importJobId]),
    );
    expect(await subject.redis.zcard(pendingKey)).toBe(LIMIT);
  });
});
