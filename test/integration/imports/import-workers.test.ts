/**
 * A worker killed (kill -9) in the middle of an import: another worker finishes it, and nothing is
 * created twice or lost (the first test below: SIGKILL mid-import, a successor finishes it, and
 * users and log events are counted against the import's rows). The other fault tests are in
 * test/faults/.
 */
import {
  createImportWorkersHarness,
  type ImportWorkersHarness,
  logLines,
  untilImportsLogFinished,
} from '../../helpers/import-workers';
import { eventually } from '../../helpers/processes';
import { seedUsersWithPasswords } from '../../helpers/seed-users';
import { userIdForEmail } from '../../helpers/user-ids';

/** Short, so a dead worker's job is handed over within seconds (BullMQ checks stalls every half of it). */
const SHORT_JOB_LOCK = { IMPORT_JOB_LOCK_MS: '3000' };

/** Resolves with `promise`, or rejects once `ms` have passed. */
async function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} took longer than ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** Waits until the job's record shows more than `done` rows done, failing if it finishes first. */
async function waitUntilMidway(harness: ImportWorkersHarness, importJobId: string, done: number) {
  await eventually(
    async () => {
      const job = await harness.jobResult(importJobId);
      if (job.status !== 'Pending')
        throw new Error(`finished before it could be interrupted: ${job.message}`);
      return job.progress.done > done;
    },
    40_000,
    50,
  );
}

describe('Import worker processes', () => {
  let harness: ImportWorkersHarness | undefined;

  afterEach(async () => {
    await harness?.close();
    harness = undefined;
  });

  it('When the worker running a 500-user import is killed with SIGKILL and a second worker starts, then the second finishes it: 500 users, each created once in its stream and in the log, none missing', async () => {
    harness = await createImportWorkersHarness(SHORT_JOB_LOCK);
    const doomed = await harness.startWorker();
    const users = seedUsersWithPasswords(500);
    const importJobId = await harness.submitSeeding(users);

    await waitUntilMidway(harness, importJobId, 50);
    doomed.child.kill('SIGKILL');
    expect(await doomed.exited).toBeNull();
    const atKill = await harness.jobResult(importJobId);
    const createdBeforeKill = (await harness.userStreams(users)).existing;
    expect(atKill.status).toBe('Pending');
    expect(createdBeforeKill).toBeGreaterThan(50);
    expect(createdBeforeKill).toBeLessThan(500);

    const successor = await harness.startWorker();
    const finished = await harness.waitUntilFinished(importJobId, 60_000);

    expect(finished).toMatchObject({
      status: 'Completed',
      success: true,
      commandsExecuted: 500,
      eventsGenerated: 500,
      progress: { done: 500, total: 500 },
      errorMessage: null,
    });
    expect(await harness.userStreams(users)).toEqual({ existing: 500, notExactlyOneEvent: [] });
    // The 500 seeded users and the manager who submitted the import: nothing else was created.
    expect(await harness.countAllUserStreams()).toBe(501);
    // Counted against the import's rows in the log the projectors read: one creation per row, by
    // this job (its id as correlation id), none twice, none missing, the manager's the only other.
    const logged = await harness.userEventsInLog();
    const seededIds = new Set(users.map((user) => userIdForEmail(user.email)));
    const byThisJob = logged.filter((event) => event.metadata.correlationId === importJobId);
    expect(logged).toHaveLength(501);
    expect(new Set(logged.map((event) => event.aggregateId)).size).toBe(501);
    expect(byThisJob).toHaveLength(500);
    expect(byThisJob.every((event) => event.eventType === 'UserCreatedEvent' && event.version === 1)).toBe(
      true,
    );
    expect(new Set(byThisJob.map((event) => event.aggregateId))).toEqual(seededIds);
    expect(logLines(doomed.stdout(), 'import finished')).toEqual([]);
    await untilImportsLogFinished(() => successor.stdout(), [importJobId]);
    expect(logLines(successor.stdout(), 'import finished')).toEqual([
      expect.objectContaining({ importJobId, status: 'Completed', commandsExecuted: 500 }),
    ]);
  }, 90_000);

  it("When the workers running an import are killed with SIGKILL more often than BullMQ's stalled-job limit allows, then the job fails for good, its record ends Failed (not Pending forever), its data is dropped and it no longer counts as Pending", async () => {
    // One command at a time: a run lasts far longer than the moment it takes to kill it.
    harness = await createImportWorkersHarness({ ...SHORT_JOB_LOCK, IMPORT_COMMAND_CONCURRENCY: '1' });
    const users = seedUsersWithPasswords(300);
    const importJobId = await harness.submitSeeding(users);
    const { queue } = harness.subject.services.importQueue;
    const startedBy = (worker: { stdout(): string }) =>
      logLines(worker.stdout(), 'import started').some((line) => line.importJobId === importJobId);

    // BullMQ 5 fails a job once it stalled more than maxStalledCount (3) times: four kills mid-run.
    let kills = 0;
    for (; kills < 6; kills++) {
      const worker = await harness.startWorker();
      await eventually(
        async () => startedBy(worker) || (await harness?.jobResult(importJobId))?.status !== 'Pending',
        40_000,
        20,
      );
      if (!startedBy(worker)) break; // this worker failed the job instead of running it
      worker.child.kill('SIGKILL');
      await worker.exited;
    }
    const finished = await harness.waitUntilFinished(importJobId, 40_000);

    expect(kills).toBe(4);
    expect(finished).toMatchObject({ status: 'Failed', success: false });
    expect(finished.errorMessage).toMatch(/job stalled more than allowable limit$/);
    const job = await queue.getJob(importJobId);
    expect(await job?.getState()).toBe('failed');
    await eventually(async () => (await queue.getJob(importJobId))?.data.summary !== undefined, 10_000);
    expect((await queue.getJob(importJobId))?.data).not.toHaveProperty('sealedImportData');
    const pendingKey = harness.subject.services.keys.importsPendingBySubmitter(
      (await harness.subject.services.importResults.get(importJobId))?.submitterUserId ?? '',
    );
    expect(await harness.subject.redis.zscore(pendingKey, importJobId)).toBeNull();
  }, 180_000);

  it('When two worker processes share one queue and six imports arrive at once, then both take jobs, each job runs once and every user exists once', async () => {
    // Two jobs at a time per worker: one worker cannot hold all six, so the other must take some.
    harness = await createImportWorkersHarness({ WORKER_CONCURRENCY: '2' });
    const workers = await Promise.all([harness.startWorker(), harness.startWorker()]);
    const batches = Array.from({ length: 6 }, () => seedUsersWithPasswords(20));
    const active = harness;
    const importJobIds = await Promise.all(batches.map((users) => active.submitSeeding(users)));

    const finished = await Promise.all(importJobIds.map((id) => active.waitUntilFinished(id, 60_000)));

    for (const job of finished) {
      expect(job).toMatchObject({ status: 'Completed', success: true, commandsExecuted: 20 });
    }
    const startedBy = workers.map((worker) =>
      logLines(worker.stdout(), 'import started').map((line) => line.importJobId as string),
    );
    expect(startedBy.map((ids) => ids.length > 0)).toEqual([true, true]);
    const finishedIds = () =>
      workers.flatMap((worker) =>
        logLines(worker.stdout(), 'import finished').map((line) => line.importJobId as string),
      );
    await untilImportsLogFinished(() => workers.map((worker) => worker.stdout()).join('\n'), importJobIds);
    expect(finishedIds().sort()).toEqual([...importJobIds].sort());
    expect(await harness.userStreams(batches.flat())).toEqual({ existing: 120, notExactlyOneEvent: [] });
    expect(await harness.countAllUserStreams()).toBe(121);
  }, 90_000);

  it('When a worker gets SIGTERM in the middle of a 100-user import, then it exits 0 and the import ends Completed with every user created once', async () => {
    // One command at a time makes the import last a few seconds, so the signal lands mid-job.
    harness = await createImportWorkersHarness({ ...SHORT_JOB_LOCK, IMPORT_COMMAND_CONCURRENCY: '1' });
    const stopping = await harness.startWorker();
    const users = seedUsersWithPasswords(100);
    const importJobId = await harness.submitSeeding(users);

    await waitUntilMidway(harness, importJobId, 10);
    stopping.child.kill('SIGTERM');
    expect(await within(stopping.exited, 20_000, 'the worker exiting after SIGTERM')).toBe(0);

    // close() lets the job in progress finish; should it not have, another worker must finish it.
    const output = stopping.stdout();
    const finishedByStopping = logLines(output, 'import finished').length > 0;
    if (finishedByStopping) {
      // The signal came while the job ran: shutting down waited for it.
      expect(output.indexOf('"message":"shutting down"')).toBeLessThan(
        output.indexOf('"message":"import finished"'),
      );
    } else {
      await harness.startWorker();
    }
    const finished = await harness.waitUntilFinished(importJobId, 45_000);

    expect(finished).toMatchObject({
      status: 'Completed',
      success: true,
      commandsExecuted: 100,
      eventsGenerated: 100,
      progress: { done: 100, total: 100 },
    });
    expect(await harness.userStreams(users)).toEqual({ existing: 100, notExactlyOneEvent: [] });
    expect(await harness.countAllUserStreams()).toBe(101);
    expect(stopping.stdout()).toContain('"message":"stopped"');
  }, 90_000);
});
