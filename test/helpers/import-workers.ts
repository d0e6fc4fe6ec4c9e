import { randomUUID } from 'node:crypto';

import request from 'supertest';

import type { EventEnvelope } from '../../shared/event-store/envelope';
import { resolveLogEntries } from '../../shared/event-stream/log-reader';
import { scanKeys } from '../../shared/redis/connections';
import { LOG_PARTITIONS } from '../../shared/redis/partitions';
import { createTestApp, type TestApp, testRedisEnv, uniquePrefix } from './app-fixture';
import { eventually, type ServiceProcess, startServiceProcess } from './processes';
import type { SeedUser } from './seed-users';
import { userIdForEmail } from './user-ids';

const MANAGER_PASSWORD = 'import-workers-password';

/** What GetImportJobResult answers for one job (the fields these tests read). */
export interface ImportJobView {
  readonly importJobId: string;
  readonly status: 'Pending' | 'Completed' | 'Failed';
  readonly success: boolean | null;
  readonly message: string;
  readonly commandsExecuted: number;
  readonly eventsGenerated: number;
  readonly progress: { readonly done: number; readonly total: number };
  readonly errorMessage: string | null;
}

/** One JSON log line of a worker process. */
export type LogLine = Record<string, unknown>;

/** The JSON lines of a process's stdout whose message is `message`. */
export function logLines(output: string, message: string): LogLine[] {
  return output
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as LogLine)
    .filter((line) => line.message === message);
}

/**
 * Waits until a worker has logged "import finished" for each of `importJobIds`. The job's record
 * turns Completed before that line is written (the worker drops the job's data in between), so a
 * test that read the record must wait for the line before asserting on it.
 */
export async function untilImportsLogFinished(
  output: () => string,
  importJobIds: readonly string[],
  timeoutMs = 10_000,
): Promise<void> {
  await eventually(() => {
    const finished = new Set(logLines(output(), 'import finished').map((line) => line.importJobId));
    return importJobIds.every((id) => finished.has(id));
  }, timeoutMs);
}

/**
 * An in-process HTTP app and any number of real worker processes sharing one fresh key prefix, with
 * a UserManager to submit imports as. `close()` kills whatever worker is still running.
 */
export interface ImportWorkersHarness {
  readonly subject: TestApp;
  readonly prefix: string;
  /** The UserManager the imports are submitted as (Basic authentication). */
  readonly manager: {
    readonly userId: string;
    readonly email: string;
    readonly password: string;
    readonly authorization: string;
  };
  /** Starts `workers/main.ts` with the harness's Redis and prefix, and waits for "worker ready". */
  startWorker(env?: Record<string, string>): Promise<ServiceProcess>;
  /** Submits a Normal UserSeeding import of `users`; returns its import job id. */
  submitSeeding(users: readonly SeedUser[]): Promise<string>;
  /** The job as GetImportJobResult shows it to its submitter. */
  jobResult(importJobId: string): Promise<ImportJobView>;
  /** Polls until the job is Completed or Failed; returns it. */
  waitUntilFinished(importJobId: string, timeoutMs: number): Promise<ImportJobView>;
  /** How many of `users` have a stream, and how many of those hold anything but exactly one event. */
  userStreams(users: readonly SeedUser[]): Promise<{ existing: number; notExactlyOneEvent: string[] }>;
  /** Every user stream under the prefix (the seeded users plus the manager). */
  countAllUserStreams(): Promise<number>;
  /** Every user event in the global log (all partitions), as projectors see them. */
  userEventsInLog(): Promise<EventEnvelope[]>;
  close(): Promise<void>;
}

export async function createImportWorkersHarness(
  workerEnv: Record<string, string> = {},
): Promise<ImportWorkersHarness> {
  const prefix = uniquePrefix();
  const subject = await createTestApp({ REDIS_KEY_PREFIX: prefix });
  const managerEmail = `manager-${randomUUID().slice(0, 8)}@example.com`;
  const managerId = await subject.createUser({
    email: managerEmail,
    password: MANAGER_PASSWORD,
    roles: ['UserManager'],
  });
  const authorization = `Basic ${Buffer.from(`${managerEmail}:${MANAGER_PASSWORD}`).toString('base64')}`;
  const processes: ServiceProcess[] = [];

  const jobResult = async (importJobId: string): Promise<ImportJobView> => {
    const res = await request(subject.app)
      .post('/api/readmodel')
      .set('Authorization', authorization)
      .send({ query: { queryType: 'GetImportJobResult', importJobId } });
    if (res.status !== 200) throw new Error(`GetImportJobResult answered ${res.status}: ${res.text}`);
    return (res.body as { results: ImportJobView[] }).results[0] as ImportJobView;
  };

  return {
    subject,
    prefix,
    manager: { userId: managerId, email: managerEmail, password: MANAGER_PASSWORD, authorization },
    async startWorker(env = {}) {
      const worker = startServiceProcess('workers/main.ts', {
        ...testRedisEnv(),
        REDIS_KEY_PREFIX: prefix,
        ...workerEnv,
        ...env,
      });
      processes.push(worker);
      await worker.waitForOutput('worker ready', 30_000);
      return worker;
    },
    async submitSeeding(users) {
      const res = await request(subject.app)
        .post('/api/import')
        .set('Authorization', authorization)
        .send({
          requestId: randomUUID(),
          importerType: 'UserSeeding',
          priority: 'Normal',
          importData: { enabled: true, skipIfUsersExist: false, users },
        });
      if (res.status !== 200 || res.body.status !== 'Pending') {
        throw new Error(`import not queued: ${res.status} ${res.text}`);
      }
      return res.body.importJobId as string;
    },
    jobResult,
    async waitUntilFinished(importJobId, timeoutMs) {
      let last: ImportJobView | undefined;
      try {
        await eventually(
          async () => {
            last = await jobResult(importJobId);
            return last.status !== 'Pending';
          },
          timeoutMs,
          250,
        );
      } catch (error) {
        throw new Error(`import ${importJobId} still Pending: ${JSON.stringify(last)}`, { cause: error });
      }
      return last as ImportJobView;
    },
    async userStreams(users) {
      const lengths = await Promise.all(
        users.map((user) => subject.services.store.streamLength('user', userIdForEmail(user.email))),
      );
      return {
        existing: lengths.filter((length) => length > 0).length,
        notExactlyOneEvent: users
          .map((user, i) => ({ email: user.email, length: lengths[i] }))
          .filter(({ length }) => length !== 1)
          .map(({ email, length }) => `${email}: ${length}`),
      };
    },
    async countAllUserStreams() {
      let count = 0;
      for await (const keys of scanKeys(subject.redis, `${prefix}*:stream:user:*`)) count += keys.length;
      return count;
    },
    async userEventsInLog() {
      const partitions = await Promise.all(
        Array.from({ length: LOG_PARTITIONS }, (_, partition) =>
          subject.redis.xrange(subject.services.keys.logPartition(partition), '-', '+'),
        ),
      );
      const events = await resolveLogEntries(subject.redis, subject.services.keys, partitions.flat());
      return events.filter((event) => event.aggregateType === 'user');
    },
    async close() {
      await Promise.all(
        processes.map(async (worker) => {
          if (worker.child.exitCode === null && worker.child.signalCode === null) {
            worker.child.kill('SIGKILL');
          }
          await worker.exited;
        }),
      );
      await subject.services.importQueue.close();
      await subject.close();
    },
  };
}

/**
 * A queued import's job as the ingress stored it in Redis, before any worker takes it: the fields of
 * its hash, and the trace context its options carry to the worker (`opts.tm`, bullmq-otel's carrier;
 * empty when there is none).
 */
export async function storedImportJob(
  app: TestApp,
  importJobId: string,
): Promise<{ fields: Record<string, string>; traceCarrier: Record<string, unknown> }> {
  const fields = await app.redis.hgetall(`${app.services.keys.importQueuePrefix()}:imports:${importJobId}`);
  const options = JSON.parse(fields.opts ?? '{}') as { tm?: string };
  return { fields, traceCarrier: JSON.parse(options.tm ?? '{}') as Record<string, unknown> };
}
