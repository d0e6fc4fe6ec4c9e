/**
 * Import job data: no plaintext password is ever written to Redis. Every key of the
 * test's prefix (BullMQ's job hashes, event streams, records, the log) is read back by type and
 * searched for the seeded passwords while a job is queued, after it finished, after an inline run
 * and after a hand-over; and every terminal state leaves the record Completed or Failed and the job
 * without its data.
 */
import { randomUUID } from 'node:crypto';

import request from 'supertest';

import { currentStateVersion, STATE_VERSION_FIELD } from '../../../shared/event-store/event-store';
import { importJobIdFor, ImportQueue, type QueuedImportJob } from '../../../shared/importers/import-queue';
import { JobDataCipher } from '../../../shared/importers/job-data-cipher';
import { userDecider } from '../../../shared/user/user.decider';
import { UNREADABLE_JOB_MESSAGE } from '../../../workers/imports/import.worker';
import { createTestApp, type TestApp } from '../../helpers/app-fixture';
import { InProcessImportWorker } from '../../helpers/in-process-import-worker';
import { eventually } from '../../helpers/processes';
import { redisContents } from '../../helpers/redis-state';
import { seedUsersWithPasswords } from '../../helpers/seed-users';
import { userIdForEmail } from '../../helpers/user-ids';

const MANAGER = { email: 'secrets-manager@example.com', password: 'secrets-manager-password' };
const basic = (email: string, password: string) =>
  `Basic ${Buffer.from(`${email}:${password}`).toString('base64')}`;

/** Users with passwords no other test uses, so finding one in Redis can only mean a leak. */
function usersWithSecrets(count: number) {
  return seedUsersWithPasswords(count, (user) => `plaintext-${user.userName}-${randomUUID()}`, {
    label: 'secret',
  });
}

describe('Import passwords at rest', () => {
  let subject: TestApp;
  let worker: InProcessImportWorker;

  beforeAll(async () => {
    subject = await createTestApp({ JWT_SECRET: 'import-secrets-test-jwt-secret-of-32-chars+' });
    await subject.createUser({ ...MANAGER, roles: ['UserManager'] });
    worker = new InProcessImportWorker(subject);
  });
  afterAll(async () => {
    await worker.close();
    await subject.services.importQueue.close();
    await subject.close();
  });

  const submit = (users: object[], priority: 'Normal' | 'High') =>
    request(subject.app)
      .post('/api/import')
      .set('Authorization', basic(MANAGER.email, MANAGER.password))
      .send({ requestId: randomUUID(), importerType: 'UserSeeding', priority, importData: { users } });
  const record = (importJobId: string) => subject.services.importResults.get(importJobId);
  const waitFinished = async (importJobId: string, timeoutMs = 20_000) => {
    await eventually(async () => (await record(importJobId))?.status !== 'Pending', timeoutMs);
    return record(importJobId);
  };
  /** The keys of the prefix whose value holds any of `secrets`; [] when none leaked. */
  const keysHolding = async (secrets: readonly string[]) => {
    const contents = await redisContents(subject.redis, subject.config.redisKeyPrefix);
    expect(Object.keys(contents).length).toBeGreaterThan(0);
    return Object.entries(contents)
      .filter(([key, value]) => secrets.some((secret) => value.includes(secret) || key.includes(secret)))
      .map(([key]) => key);
  };
  const signsIn = async (email: string, password: string) =>
    (
      await request(subject.app)
        .post('/api/readmodel')
        .set('Authorization', basic(email, password))
        .send({ query: { queryType: 'CurrentUser' } })
    ).status === 200;

  it('When a Normal import with passwords waits in the queue and then runs, then no key of the prefix ever holds a password, the job holds its data sealed, and the users sign in with them', async () => {
    await worker.stop();
    const users = usersWithSecrets(3);
    const secrets = users.map((user) => user.password);
    const res = await submit(users, 'Normal');
    expect(res.body.status).toBe('Pending');

    // Queued: BullMQ's job hash holds the data, sealed.
    expect(await keysHolding(secrets)).toEqual([]);
    const queued = await subject.services.importQueue.queue.getJob(res.body.importJobId);
    expect(queued?.data.sealedImportData).toMatch(/^v1\.[A-Za-z0-9_-]+$/);
    expect(JSON.stringify(queued?.data)).not.toContain(users[0]?.email);

    worker.start();
    expect(await waitFinished(res.body.importJobId)).toMatchObject({
      status: 'Completed',
      commandsExecuted: 3,
    });
    await eventually(
      async () =>
        (await subject.services.importQueue.queue.getJob(res.body.importJobId))?.data.summary !== undefined,
    );
    expect(await keysHolding(secrets)).toEqual([]);
    const finished = await subject.services.importQueue.queue.getJob(res.body.importJobId);
    expect(finished?.data.sealedImportData).toBeUndefined();
    for (const user of users) expect(await signsIn(user.email, user.password)).toBe(true);
  });

  it('When a High import with passwords runs inline, then no key holds a password', async () => {
    worker.start();
    await eventually(async () => {
      const counts = await subject.services.importQueue.queue.getJobCounts('wait', 'active', 'prioritized');
      return Object.values(counts).every((n) => n === 0);
    });
    const users = usersWithSecrets(2);
    const res = await submit(users, 'High');
    expect(res.body).toMatchObject({ status: 'Completed', processedSynchronously: true });
    expect(await keysHolding(users.map((user) => user.password))).toEqual([]);
  });

  it('When an inline import is handed over to the workers, then the queued job holds no password and a worker completes it', async () => {
    await worker.stop();
    const users = usersWithSecrets(2);
    const requestId = randomUUID();
    const submitterUserId = userIdForEmail(MANAGER.email);
    const job = {
      importJobId: importJobIdFor(submitterUserId, requestId),
      requestId,
      importerType: 'UserSeeding',
      priority: 'High' as const,
      submitterUserId,
      importData: { enabled: true, skipIfUsersExist: false, users },
    };
    await subject.services.importResults.createPending(
      { ...job, message: 'Import is being processed synchronously', processedSynchronously: true, total: 2 },
      new Date(),
    );
    const release = await subject.services.importQueue.claimInline(60_000);
    expect(release).not.toBeNull();
    expect(await subject.services.importQueue.handOver(job, release ?? (() => Promise.resolve()))).toBe(true);

    expect(await keysHolding(users.map((user) => user.password))).toEqual([]);
    worker.start();
    expect(await waitFinished(job.importJobId)).toMatchObject({ status: 'Completed', commandsExecuted: 2 });
    expect(await keysHolding(users.map((user) => user.password))).toEqual([]);
  });

  it('When a queued job was sealed under another key (the data key changed), then it ends Failed, not Pending, and keeps no data', async () => {
    worker.start();
    const foreign = new JobDataCipher('another-deployment-secret-of-32-characters!');
    const foreignQueue = new ImportQueue(
      subject.redis,
      subject.redis,
      subject.services.keys,
      subject.config,
      subject.logger,
      foreign,
    );
    const requestId = randomUUID();
    const submitterUserId = userIdForEmail(MANAGER.email);
    const users = usersWithSecrets(1);
    const job = {
      importJobId: importJobIdFor(submitterUserId, requestId),
      requestId,
      importerType: 'UserSeeding',
      priority: 'Normal' as const,
      submitterUserId,
      importData: { users },
    };
    await subject.services.importResults.createPending(
      { ...job, message: 'Import job queued with Normal priority', processedSynchronously: false, total: 1 },
      new Date(),
    );
    await foreignQueue.enqueue(job);
    await foreignQueue.close();

    expect(await waitFinished(job.importJobId)).toMatchObject({
      status: 'Failed',
      success: false,
      errorCode: 'AGGREGATE_PROCESSING_FAILED',
      errorMessage: UNREADABLE_JOB_MESSAGE,
    });
    await eventually(
      async () =>
        (await subject.services.importQueue.queue.getJob(job.importJobId))?.data.summary?.status === 'Failed',
    );
    expect(await subject.services.accounts.findById(userIdForEmail(users[0]?.email ?? ''))).toBeNull();
  });

  it('When a job queued by a version before sealing (its data in the clear) is run, then it completes and its data, password included, is dropped', async () => {
    worker.start();
    const requestId = randomUUID();
    const submitterUserId = userIdForEmail(MANAGER.email);
    const importJobId = importJobIdFor(submitterUserId, requestId);
    const users = usersWithSecrets(1);
    const identity = {
      importJobId,
      requestId,
      importerType: 'UserSeeding',
      priority: 'Normal' as const,
      submitterUserId,
    };
    await subject.services.importResults.createPending(
      {
        ...identity,
        message: 'Import job queued with Normal priority',
        processedSynchronously: false,
        total: 1,
      },
      new Date(),
    );
    const legacy = { ...identity, importData: { users } } as QueuedImportJob;
    await subject.services.importQueue.queue.add('UserSeeding', legacy, { jobId: importJobId });

    expect(await waitFinished(importJobId)).toMatchObject({ status: 'Completed', commandsExecuted: 1 });
    await eventually(
      async () => (await subject.services.importQueue.queue.getJob(importJobId))?.data.summary !== undefined,
    );
    expect((await subject.services.importQueue.queue.getJob(importJobId))?.data).toEqual({
      ...identity,
      summary: { status: 'Completed', rows: 1, finishedAt: expect.any(String) },
    });
    expect(await keysHolding(users.map((user) => user.password))).toEqual([]);
  });

  it('When a job fails on every attempt, then after its last one the record is Failed (not Pending) and the job keeps only its summary', async () => {
    worker.start();
    const requestId = randomUUID();
    // A submitter whose record no longer parses (data no request could make): reading it throws, so
    // every attempt fails, before any row.
    const submitterUserId = randomUUID();
    await subject.redis.hset(
      subject.services.keys.aggregateRecord(userDecider.aggregateType, submitterUserId),
      {
        version: '1',
        state: '{not json',
        [STATE_VERSION_FIELD]: String(currentStateVersion(userDecider)),
      },
    );
    const importJobId = importJobIdFor(submitterUserId, requestId);
    await subject.services.importResults.createPending(
      {
        importJobId,
        requestId,
        importerType: 'UserSeeding',
        priority: 'Normal',
        submitterUserId,
        message: 'Import job queued with Normal priority',
        processedSynchronously: false,
        total: 0,
      },
      new Date(),
    );
    await subject.services.importQueue.queue.add(
      'UserSeeding',
      {
        importJobId,
        requestId,
        importerType: 'UserSeeding',
        priority: 'Normal',
        submitterUserId,
        sealedImportData: subject.services.jobCipher.seal(
          { users: [{ email: 'never-created@example.com', userType: 'Human', roles: ['Member'] }] },
          importJobId,
        ),
      },
      { jobId: importJobId, attempts: 2, backoff: { type: 'fixed', delay: 100 } },
    );

    const failed = await waitFinished(importJobId);
    expect(failed).toMatchObject({
      status: 'Failed',
      success: false,
      errorCode: 'AGGREGATE_PROCESSING_FAILED',
    });
    expect(failed?.errorMessage).toMatch(/^Import failed after 2 attempt\(s\): /);
    await eventually(
      async () => (await subject.services.importQueue.queue.getJob(importJobId))?.data.summary !== undefined,
    );
    const job = await subject.services.importQueue.queue.getJob(importJobId);
    expect(await job?.getState()).toBe('failed');
    expect(job?.data.sealedImportData).toBeUndefined();
  });
});
