import { randomUUID } from 'node:crypto';

import request from 'supertest';

import { createTestApp, type TestApp } from '../../helpers/app-fixture';
import { InProcessImportWorker } from '../../helpers/in-process-import-worker';
import { eventually } from '../../helpers/processes';
import { seedUsers } from '../../helpers/seed-users';

const PASSWORD = 'import-test-password';
const basic = (email: string, password = PASSWORD) =>
  `Basic ${Buffer.from(`${email}:${password}`).toString('base64')}`;
const TIME_SPAN = /^\d{2}:\d{2}:\d{2}\.\d{2}$/;
const GUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

describe('POST /api/import', () => {
  let subject: TestApp;
  let worker: InProcessImportWorker;

  beforeAll(async () => {
    subject = await createTestApp({ IMPORT_MAX_ROWS: '50' });
    await subject.createUser({ email: 'manager@example.com', password: PASSWORD, roles: ['UserManager'] });
    await subject.createUser({ email: 'member@example.com', password: PASSWORD, roles: ['Member'] });
    await subject.createUser({ email: 'admin@example.com', password: PASSWORD, roles: ['Admin'] });
    worker = new InProcessImportWorker(subject);
  });
  afterAll(async () => {
    await worker.close();
    await subject.services.importQueue.close();
    await subject.close();
  });

  /** Inline runs need an idle queue: start the worker and wait until it has drained. */
  const idleQueue = async () => {
    worker.start();
    await eventually(async () => {
      const counts = await subject.services.importQueue.queue.getJobCounts(
        'waiting',
        'active',
        'prioritized',
        'delayed',
      );
      return Object.values(counts).every((n) => n === 0);
    }, 15_000);
  };
  const submit = (body: object, email = 'manager@example.com') =>
    request(subject.app).post('/api/import').set('Authorization', basic(email)).send(body);
  const seeding = (users: object[], extra: object = {}, importData: object = {}) => ({
    requestId: randomUUID(),
    importerType: 'UserSeeding',
    importData: { enabled: true, skipIfUsersExist: false, users, ...importData },
    ...extra,
  });
  const jobResult = (importJobId: string, email = 'manager@example.com') =>
    request(subject.app)
      .post('/api/readmodel')
      .set('Authorization', basic(email))
      .send({ query: { queryType: 'GetImportJobResult', importJobId } });

  describe('Spec table 3.3', () => {
    it('When priority is Normal or omitted, then the job is queued: Pending, not synchronous, and a worker completes it', async () => {
      await worker.stop();
      const body = seeding(seedUsers(3));
      const res = await submit(body);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({
        requestId: body.requestId,
        importJobId: expect.stringMatching(GUID),
        status: 'Pending',
        priority: 'Normal',
        importerType: 'UserSeeding',
        message: 'Import job queued with Normal priority',
        processedSynchronously: false,
      });
      worker.start();
      await eventually(
        async () => (await jobResult(res.body.importJobId)).body.results?.[0]?.status === 'Completed',
        15_000,
      );
      const result = (await jobResult(res.body.importJobId)).body.results[0];
      expect(result).toMatchObject({
        status: 'Completed',
        success: true,
        commandsExecuted: 3,
        eventsGenerated: 3,
        aggregatesProcessed: 3,
        progress: { done: 3, total: 3 },
        executionDuration: expect.stringMatching(TIME_SPAN),
      });
    });

    it('When priority is High and the queue is empty, then it runs inline and the full result comes back (rule 4: N users)', async () => {
      await idleQueue();
      const users = seedUsers(4);
      const res = await submit(seeding(users, { priority: 'High' }));
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({
        status: 'Completed',
        priority: 'High',
        processedSynchronously: true,
        success: true,
        commandsExecuted: 4,
        eventsGenerated: 4,
        aggregatesProcessed: 4,
        message: 'Import completed successfully',
        importResultId: expect.stringMatching(GUID),
        executionDuration: expect.stringMatching(TIME_SPAN),
      });
      expect(res.body.errorCode).toBeUndefined();
    });

    it('When priority is High but another import is queued, then it is queued too (Pending)', async () => {
      await worker.stop();
      await submit(seeding(seedUsers(1)));
      const res = await submit(seeding(seedUsers(1), { priority: 'High' }));
      expect(res.body).toMatchObject({ status: 'Pending', priority: 'High', processedSynchronously: false });
      expect(res.body.message).toContain('High priority');
      worker.start();
      await eventually(
        async () => (await jobResult(res.body.importJobId)).body.results?.[0]?.status === 'Completed',
        15_000,
      );
    });

    it('When the importer type is unknown, then 400 UNKNOWN_IMPORTER_TYPE with the all-zero job id and nothing queued', async () => {
      const before = await subject.services.importQueue.queue.getJobCounts();
      const body = { requestId: randomUUID(), importerType: 'MagicSeeding', importData: {} };
      const res = await submit(body);
      expect(res.status).toBe(400);
      expect(res.body).toEqual({
        requestId: body.requestId,
        importJobId: '00000000-0000-0000-0000-000000000000',
        status: 'Failed',
        priority: 'Normal',
        importerType: 'MagicSeeding',
        message: 'Unknown importer type: MagicSeeding',
        processedSynchronously: false,
        errorMessage: 'Unknown importer type: MagicSeeding',
        errorCode: 'UNKNOWN_IMPORTER_TYPE',
      });
      expect(await subject.services.importQueue.queue.getJobCounts()).toEqual(before);
    });

    it('When a generated command fails (submitter lacks the role), then Failed with the spec message (rule 3) and nothing is created', async () => {
      await idleQueue();
      const users = seedUsers(2);
      const res = await submit(seeding(users, { priority: 'High' }), 'member@example.com');
      expect(res.status).toBe(200);
      const member = await subject.services.accounts.findWithCredential('member@example.com');
      const firstUserId = (await import('../../helpers/user-ids')).userIdForEmail(users[0]?.email ?? '');
      expect(res.body).toMatchObject({
        status: 'Failed',
        success: false,
        errorCode: 'AGGREGATE_PROCESSING_FAILED',
        processedSynchronously: true,
        commandsExecuted: 0,
      });
      expect(res.body.errorMessage).toBe(
        `Import failed at aggregate ${firstUserId}: User 'member@example.com' (${member.account?.userId}) lacks required roles to execute CreateUserCommand. Required roles: [UserManager, Admin]. User roles: [Member].`,
      );
      expect(await subject.services.accounts.findById(firstUserId)).toBeNull();
    });

    it('When a user exists already (rule 2), then Failed, AGGREGATE_PROCESSING_FAILED, "User already exists"', async () => {
      await idleQueue();
      const res = await submit(
        seeding([{ email: 'MEMBER@example.com', userType: 'Human', roles: ['Member'] }], {
          priority: 'High',
        }),
      );
      expect(res.body).toMatchObject({
        status: 'Failed',
        success: false,
        errorCode: 'AGGREGATE_PROCESSING_FAILED',
      });
      expect(res.body.errorMessage).toContain('User already exists');
      expect(res.body.rowErrors).toEqual([
        // Named by its index: a record keeps no row's e-mail (ADR 0014).
        { index: 0, code: 'USER_EXISTS', message: 'User already exists' },
      ]);
    });
  });

  describe('Requests', () => {
    it('When there are no credentials, then 401 with an empty body', async () => {
      const res = await request(subject.app)
        .post('/api/import')
        .send(seeding(seedUsers(1)));
      expect(res.status).toBe(401);
      expect(res.text).toBe('');
    });

    it('When requestId is not a GUID, then a 400 problem with the spec message', async () => {
      const res = await submit({ ...seeding(seedUsers(1)), requestId: 'abc' });
      expect(res.status).toBe(400);
      expect(res.body.errors).toEqual({ RequestId: ['The JSON value is not in a supported Guid format.'] });
    });

    it('When importData breaks the importer schema, then a 400 problem naming the fields', async () => {
      const res = await submit(
        seeding([
          { email: 'not-an-email', userType: 'Robot', roles: ['Member'] },
          { userType: 'ServiceAccount', email: 'svc-np@example.com', roles: ['ServiceAccount'] },
        ]),
      );
      expect(res.status).toBe(400);
      expect(Object.keys(res.body.errors).sort()).toEqual([
        'Users[0].Email',
        'Users[0].UserType',
        'Users[1].Password',
      ]);
    });

    it('When the batch is over IMPORT_MAX_ROWS, then a 400 problem saying the limit', async () => {
      const res = await submit(seeding(seedUsers(51)));
      expect(res.status).toBe(400);
      expect(res.body.errors.Users).toEqual(['Users holds at most 50 rows per import']);
    });

    it('When the same requestId is sent again, then the same job answers and nothing is imported twice', async () => {
      await idleQueue();
      const body = seeding(seedUsers(2), { priority: 'High' });
      const first = await submit(body);
      const second = await submit(body);
      expect(second.body.importJobId).toBe(first.body.importJobId);
      expect(second.body).toMatchObject({ status: 'Completed', commandsExecuted: 2 });
    });

    it('When a queued import left its record Pending without a job (Redis went away between the two), then a resend queues it and a worker completes it', async () => {
      await worker.stop();
      const body = seeding(seedUsers(1));
      const first = await submit(body);
      expect(first.body).toMatchObject({ status: 'Pending', processedSynchronously: false });
      // The job lost as an enqueue whose reply never came (and whose record's discard failed too).
      await (await subject.services.importQueue.queue.getJob(first.body.importJobId))?.remove();

      const resent = await submit(body);
      expect(resent.body).toMatchObject({ importJobId: first.body.importJobId, status: 'Pending' });
      worker.start();
      await eventually(
        async () => (await jobResult(first.body.importJobId)).body.results?.[0]?.status === 'Completed',
        15_000,
      );
    });

    it('When two High imports arrive together on an idle queue, then at most one runs inline', async () => {
      await idleQueue();
      const answers = await Promise.all(
        [1, 2, 3].map(() => submit(seeding(seedUsers(5), { priority: 'High' }))),
      );
      expect(answers.filter((a) => a.body.processedSynchronously === true).length).toBeLessThanOrEqual(1);
      expect(answers.every((a) => a.status === 200)).toBe(true);
    });
  });

  describe('Queue errors', () => {
    it('When the queue reports an error (its connection closed while BullMQ still initialised it), then it is logged, not thrown', () => {
      const { queue } = subject.services.importQueue;
      // An EventEmitter without an 'error' listener throws: the process would crash.
      expect(() => queue.emit('error', new Error('Connection is closed.'))).not.toThrow();
      expect(() => queue.emit('error', new Error('something unexpected'))).not.toThrow();
      const warnings = subject.logs.lines.filter((line) => line.message === 'import queue error');
      // Redis being away is a debug line (the connection logs it once); anything else a warning.
      expect(warnings).toEqual([expect.objectContaining({ level: 'warn', error: 'something unexpected' })]);
    });
  });

  describe('Beyond the spec', () => {
    it('When enabled is false, then Completed at once with 0 commands and "Importer is disabled"', async () => {
      await idleQueue();
      const res = await submit(seeding(seedUsers(2), { priority: 'High' }, { enabled: false }));
      expect(res.body).toMatchObject({
        status: 'Completed',
        success: true,
        commandsExecuted: 0,
        message: 'Importer is disabled',
      });
    });

    it('When skipIfUsersExist is true, then existing e-mails are skipped and counted', async () => {
      await idleQueue();
      const users = [{ email: 'member@example.com', userType: 'Human', roles: ['Member'] }, ...seedUsers(2)];
      const res = await submit(seeding(users, { priority: 'High' }, { skipIfUsersExist: true }));
      expect(res.body).toMatchObject({ status: 'Completed', commandsExecuted: 2, skipped: 1 });
      expect(res.body.rowErrors).toEqual([expect.objectContaining({ index: 0, code: 'USER_EXISTS' })]);
    });

    it('When the batch repeats an e-mail, then it fails before any command and names the rows', async () => {
      await idleQueue();
      const users = seedUsers(2);
      const res = await submit(
        seeding([...users, { ...users[0], email: users[0]?.email.toUpperCase() }], { priority: 'High' }),
      );
      expect(res.body).toMatchObject({
        status: 'Failed',
        commandsExecuted: 0,
        errorCode: 'IMPORT_VALIDATION_FAILED',
      });
      expect(res.body.rowErrors).toEqual([expect.objectContaining({ index: 2, code: 'DUPLICATE_IN_BATCH' })]);
      const { account } = await subject.services.accounts.findWithCredential(users[1]?.email ?? '');
      expect(account).toBeNull();
    });

    it('When dryRun is true, then it says what would happen and raises no event', async () => {
      const users = seedUsers(3);
      const res = await submit(seeding(users, { dryRun: true }));
      expect(res.body).toMatchObject({ status: 'Completed', dryRun: { wouldCreate: 3, wouldSkip: 0 } });
      const { account } = await subject.services.accounts.findWithCredential(users[0]?.email ?? '');
      expect(account).toBeNull();
    });

    it('When an Admin imports a service account with a password, then it signs in by Basic with ServiceAccount and Public (spec 5.3)', async () => {
      await idleQueue();
      const email = `svc-${randomUUID().slice(0, 8)}@example.com`;
      const res = await submit(
        seeding(
          [{ email, userType: 'ServiceAccount', roles: ['ServiceAccount'], password: 'service-secret-1' }],
          { priority: 'High' },
        ),
        // ServiceAccount is granted by an Admin only (a UserManager grants Member).
        'admin@example.com',
      );
      expect(res.body.status).toBe('Completed');
      const me = await request(subject.app)
        .post('/api/readmodel')
        .set('Authorization', basic(email, 'service-secret-1'))
        .send({ query: { queryType: 'CurrentUser' } });
      expect(me.status).toBe(200);
      expect(me.body.data[0].effectiveRoles).toEqual(['ServiceAccount', 'Public']);
    });

    it('When someone else asks for a job result, then the 404 listing; an Admin sees it', async () => {
      await idleQueue();
      const res = await submit(seeding(seedUsers(1), { priority: 'High' }));
      const other = await jobResult(res.body.importJobId, 'member@example.com');
      expect(other.status).toBe(404);
      expect(other.body).toEqual({ queryType: 'GetImportJobResult', results: [], totalCount: 0 });
      expect((await jobResult(res.body.importJobId, 'admin@example.com')).status).toBe(200);
    });

    it('When a queued import with passwords finishes, then neither its BullMQ job nor its result keeps a password', async () => {
      await idleQueue();
      const users = seedUsers(2).map((user) => ({ ...user, password: 'queued-secret-123' }));
      const res = await submit(seeding(users));
      await eventually(
        async () => (await jobResult(res.body.importJobId)).body.results?.[0]?.status === 'Completed',
        15_000,
      );
      await eventually(async () => {
        const job = await subject.services.importQueue.queue.getJob(res.body.importJobId);
        return job?.data.summary !== undefined;
      }, 5_000);
      const job = await subject.services.importQueue.queue.getJob(res.body.importJobId);
      // Finished: no data at all (sealed or not), only a summary.
      expect(job?.data).toEqual({
        importJobId: res.body.importJobId,
        requestId: expect.any(String),
        importerType: 'UserSeeding',
        priority: 'Normal',
        submitterUserId: expect.any(String),
        summary: { status: 'Completed', rows: 2, finishedAt: expect.any(String) },
      });
      expect((await jobResult(res.body.importJobId)).text).not.toContain('queued-secret-123');
      const record = await subject.redis.get(subject.services.keys.importResult(res.body.importJobId));
      expect(record).not.toContain('queued-secret-123');
      expect(record).not.toContain('importData');
    });

    it('When AvailableImporters is asked, then every importer is listed with its roles', async () => {
      const res = await request(subject.app)
        .post('/api/readmodel')
        .set('Authorization', basic('member@example.com'))
        .send({ query: { queryType: 'AvailableImporters' } });
      expect(res.body).toEqual({
        queryType: 'AvailableImporters',
        results: [
          {
            importerType: 'UserSeeding',
            description: expect.any(String),
            requiredRoles: ['UserManager', 'Admin'],
          },
          {
            importerType: 'PlayerSeeding',
            description: expect.any(String),
            requiredRoles: ['Admin'],
          },
        ],
        totalCount: 2,
      });
    });
  });
});
