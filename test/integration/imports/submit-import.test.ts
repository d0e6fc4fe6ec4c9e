/**
 * The import use case (ingress/import/submit-import.ts), called directly on a real Redis and a
 * real BullMQ queue (no worker runs, so a queued import stays Pending): its outcomes, without HTTP.
 * The route's answers are test/integration/import*.test.ts's.
 */
import { randomUUID } from 'node:crypto';

import { UnrecoverableError, Worker } from 'bullmq';

import {
  type ImportSubmission,
  submitImport,
  type SubmitImportOutcome,
} from '../../../ingress/import/submit-import';
import type { Actor } from '../../../shared/accounts/account';
import {
  IMPORT_QUEUE_NAME,
  importJobIdFor,
  importQueueOptions,
} from '../../../shared/importers/import-queue';
import { importDataSchema } from '../../../shared/importers/importer';
import { IMPORTERS } from '../../../shared/importers/registry';
import { closeConnections } from '../../../shared/redis/connections';
import { validate } from '../../../shared/validation';
import { createTestApp, openTestRedis, type TestApp } from '../../helpers/app-fixture';
import { eventually } from '../../helpers/processes';

const MAX_PENDING = 2;

describe('submitImport', () => {
  let subject: TestApp;

  beforeAll(async () => {
    subject = await createTestApp({ MAX_PENDING_IMPORTS_PER_USER: String(MAX_PENDING) });
  });
  afterAll(async () => {
    await subject.services.importQueue.close();
    await subject.close();
  });

  let managers = 0;
  /** A UserManager account (processing an import looks its submitter up). */
  const newManager = async (): Promise<Actor> => {
    const email = `submit-${randomUUID().slice(0, 8)}-${managers++}@example.com`;
    const userId = await subject.createUser({ email, roles: ['UserManager'] });
    return { userId, email, roles: ['UserManager'] };
  };
  /** A validated UserSeeding submission of `rows` new users, one with a password. */
  const userSeeding = (extra: Partial<ImportSubmission> = {}, rows = 1): ImportSubmission => {
    const importer = IMPORTERS.get('UserSeeding');
    if (!importer) throw new Error('UserSeeding is not registered');
    const users = Array.from({ length: rows }, () => ({
      email: `seeded-${randomUUID()}@example.com`,
      userType: 'Human',
      roles: ['Member'],
      password: `plaintext-${randomUUID()}`,
    }));
    const importData: unknown = validate(importDataSchema(importer, subject.config.imports.maxRows), {
      users,
    });
    return { requestId: randomUUID(), importer, priority: 'Normal', importData, dryRun: false, ...extra };
  };
  const submit = (submitter: Actor, submission: ImportSubmission) => {
    const { services, config, logger, metrics } = subject;
    return submitImport({ ...services, services, config, logger, metrics }, submitter, submission);
  };
  const queuedJobs = async () => {
    const counts = await subject.services.importQueue.queue.getJobCounts('prioritized', 'wait');
    return Object.values(counts).reduce((sum, jobs) => sum + jobs, 0);
  };
  const recorded = (outcome: SubmitImportOutcome) => {
    if (outcome.kind !== 'recorded') throw new Error(`expected a record, got ${outcome.kind}`);
    return outcome.record;
  };

  it('When a dry run is submitted, then its outcome says what a real run would do and nothing is stored', async () => {
    const submitter = await newManager();
    const submission = userSeeding({ dryRun: true }, 2);
    const outcome = await submit(submitter, submission);
    const importJobId = importJobIdFor(submitter.userId, submission.requestId);
    expect(outcome).toMatchObject({
      kind: 'dry-run',
      importJobId,
      outcome: { status: 'Completed', dryRun: { wouldCreate: 2, wouldSkip: 0 } },
    });
    expect(await subject.services.importResults.get(importJobId)).toBeNull();
    expect(await subject.services.importQueue.queue.getJob(importJobId)).toBeUndefined();
  });

  it('When a Normal import is submitted, then it is recorded Pending and queued with its data sealed; resent, it answers the same record and queues nothing more', async () => {
    const submitter = await newManager();
    const submission = userSeeding();
    const first = recorded(await submit(submitter, submission));
    expect(first).toMatchObject({
      importJobId: importJobIdFor(submitter.userId, submission.requestId),
      status: 'Pending',
      processedSynchronously: false,
      message: 'Import job queued with Normal priority',
    });
    const job = await subject.services.importQueue.queue.getJob(first.importJobId);
    expect(job?.data.sealedImportData).toMatch(/^v1\.[A-Za-z0-9_-]+$/);
    expect(JSON.stringify(job?.data)).not.toContain('plaintext-');

    const queued = await queuedJobs();
    const again = recorded(await submit(submitter, submission));
    expect(again.importJobId).toBe(first.importJobId);
    expect(await queuedJobs()).toBe(queued);
  });

  it('When another submitter sends the same requestId, then it is an import of its own', async () => {
    const [owner, other] = [await newManager(), await newManager()];
    const submission = userSeeding();
    const mine = recorded(await submit(owner, submission));
    const theirs = recorded(await submit(other, { ...userSeeding(), requestId: submission.requestId }));
    expect(theirs.importJobId).not.toBe(mine.importJobId);
    expect(theirs.importJobId).toBe(importJobIdFor(other.userId, submission.requestId));
  });

  it('When the submitter has the most imports Pending, then one more is refused and nothing is stored; a resend of a Pending one still answers it', async () => {
    const submitter = await newManager();
    const pending = userSeeding();
    await submit(submitter, pending);
    for (let i = 1; i < MAX_PENDING; i++) await submit(submitter, userSeeding());

    const refused = userSeeding();
    expect(await submit(submitter, refused)).toEqual({ kind: 'too-many-pending', limit: MAX_PENDING });
    const refusedJobId = importJobIdFor(submitter.userId, refused.requestId);
    expect(await subject.services.importResults.get(refusedJobId)).toBeNull();
    expect(await subject.services.importQueue.queue.getJob(refusedJobId)).toBeUndefined();

    expect(recorded(await submit(submitter, pending)).status).toBe('Pending');
  });

  it('When BullMQ failed a job for good but its record was never written, then a resend ends the record Failed with the reason instead of leaving it Pending', async () => {
    const submitter = await newManager();
    const submission = userSeeding();
    const importJobId = importJobIdFor(submitter.userId, submission.requestId);
    expect(recorded(await submit(submitter, submission)).status).toBe('Pending');

    // A consumer that fails the job for good and writes nothing: the worker that died, or lost
    // Redis, between BullMQ's failure and the record.
    const connection = openTestRedis(subject.logger, 'queue');
    const consumer = new Worker(
      IMPORT_QUEUE_NAME,
      () => Promise.reject(new UnrecoverableError('the worker lost its footing')),
      { connection, prefix: importQueueOptions(subject.config, subject.services.keys).prefix },
    );
    try {
      await eventually(
        async () =>
          (await subject.services.importQueue.queue.getJob(importJobId))?.failedReason !== undefined,
      );
    } finally {
      await consumer.close();
      await closeConnections(connection);
    }
    expect((await subject.services.importResults.get(importJobId))?.status).toBe('Pending');

    const resent = recorded(await submit(submitter, submission));
    expect(resent.importJobId).toBe(importJobId);
    expect(await subject.services.importResults.get(importJobId)).toMatchObject({
      status: 'Failed',
      success: false,
      errorCode: 'AGGREGATE_PROCESSING_FAILED',
      errorMessage: 'Import failed: the worker lost its footing',
    });
  });
});

describe('submitImport with High priority', () => {
  let subject: TestApp;

  beforeAll(async () => {
    subject = await createTestApp();
  });
  afterAll(async () => {
    await subject.services.importQueue.close();
    await subject.close();
  });

  it('When a High import is submitted on an idle queue, then it runs inline to Completed; once the queue is busy, a High import is queued', async () => {
    const email = `inline-${randomUUID().slice(0, 8)}@example.com`;
    const submitter: Actor = {
      userId: await subject.createUser({ email, roles: ['UserManager'] }),
      email,
      roles: ['UserManager'],
    };
    const importer = IMPORTERS.get('UserSeeding');
    if (!importer) throw new Error('UserSeeding is not registered');
    const submission = (priority: 'Normal' | 'High'): ImportSubmission => ({
      requestId: randomUUID(),
      importer,
      priority,
      importData: validate(importDataSchema(importer, subject.config.imports.maxRows), {
        users: [{ email: `inline-user-${randomUUID()}@example.com`, userType: 'Human', roles: ['Member'] }],
      }),
      dryRun: false,
    });
    const { services, config, logger, metrics } = subject;
    const submit = (sent: ImportSubmission) =>
      submitImport({ ...services, services, config, logger, metrics }, submitter, sent);

    expect(await submit(submission('High'))).toMatchObject({
      kind: 'recorded',
      record: { status: 'Completed', processedSynchronously: true, commandsExecuted: 1 },
    });
    expect(await services.importQueue.inlineRunning()).toBe(false);

    await submit(submission('Normal'));
    expect(await submit(submission('High'))).toMatchObject({
      kind: 'recorded',
      record: {
        status: 'Pending',
        processedSynchronously: false,
        message: 'Import job queued with High priority (the import queue is busy)',
      },
    });
  });
});
