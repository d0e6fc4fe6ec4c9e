import { randomBytes } from 'node:crypto';

import { type ConnectionOptions, type JobsOptions, Queue } from 'bullmq';
import { v5 as uuidv5 } from 'uuid';

import type { Config } from '../config';
import type { Logger } from '../logger';
import { redactSecrets } from '../redaction';
import { closeConnections, isRedisUnavailable, type RedisClient } from '../redis/connections';
import type { Keys } from '../redis/keys';
import { registerScripts } from '../redis/scripts';
import { queueTelemetry } from '../tracing/queue-telemetry';
import { IMPORT_SCRIPTS } from './import.scripts';
import type { ImportPriority, ImportStatus } from './importer';
import type { JobDataCipher } from './job-data-cipher';

export const IMPORT_QUEUE_NAME = 'imports';

/** Fixed forever: import job ids derive from request ids through it. */
const IMPORT_JOB_NAMESPACE = '3b1f0c9e-8a57-5d2e-b6a4-7c0e9d1f2a3b';

/** BullMQ priorities (lower runs first): every High job goes before every Normal one. */
const BULL_PRIORITY: Readonly<Record<ImportPriority, number>> = { High: 1, Normal: 10 };

/**
 * BullMQ's job states, as `getJobCounts` names them, reported as they are. Every import is queued
 * with a priority, so a job waiting to run is `prioritized` instead, counted per priority.
 */
const COUNTED_STATES = ['waiting', 'active', 'delayed', 'paused', 'completed', 'failed'] as const;

/** How many jobs are in one state (and, for `prioritized`, of one priority). */
export interface QueueDepthSample {
  readonly state: (typeof COUNTED_STATES)[number] | 'prioritized';
  readonly priority?: ImportPriority;
  readonly jobs: number;
}

/** An import about to run (inline) or be queued: its data in the clear, in memory only. */
export interface ImportJobData {
  readonly importJobId: string;
  readonly requestId: string;
  readonly importerType: string;
  readonly priority: ImportPriority;
  readonly submitterUserId: string;
  /**
   * The submitter's security stamp when it submitted: the import stops once it changes (a password
   * or role change, a disable). Absent on jobs queued before imports were tied to it.
   */
  readonly submitterSecurityStamp?: string;
  readonly importData: unknown;
}

/**
 * What a BullMQ job holds in Redis. Never the import's data in the clear: `sealedImportData` (see
 * JobDataCipher) while it waits or runs; once it finished, neither that nor any bulk data, only a
 * `summary` (the import's record keeps the result), so finished jobs kept for the dashboard are small.
 */
export interface QueuedImportJob extends Omit<ImportJobData, 'importData'> {
  readonly sealedImportData?: string;
  readonly summary?: {
    readonly status: Exclude<ImportStatus, 'Pending'>;
    readonly rows: number;
    readonly finishedAt: string;
  };
}

/**
 * A job's data as the Admin's dashboard shows it: the sealed data opened, with every password
 * `[redacted]` (the sealed text itself is not shown); a job no key opens says so.
 */
export function jobDataForDisplay(data: QueuedImportJob, cipher: JobDataCipher): unknown {
  const { sealedImportData, ...rest } = data;
  if (sealedImportData === undefined) return redactSecrets(rest);
  try {
    return {
      ...(redactSecrets(rest) as object),
      importData: redactSecrets(cipher.open(sealedImportData, data.importJobId)),
    };
  } catch {
    return { ...(redactSecrets(rest) as object), importData: '[sealed: no configured key opens it]' };
  }
}

/** The job's data once it finished: the summary replaces the sealed data. */
export function finishedJobData(
  job: QueuedImportJob,
  summary: NonNullable<QueuedImportJob['summary']>,
): QueuedImportJob {
  // Named one by one: whatever else the data holds (a job queued by an older version carried its
  // importData in the clear) is dropped with it.
  const { importJobId, requestId, importerType, priority, submitterUserId } = job;
  return { importJobId, requestId, importerType, priority, submitterUserId, summary };
}

/**
 * The same requestId from the same account always names the same job, so a resent request cannot
 * import twice. The submitter is part of the name: another account sending the same requestId gets
 * a job of its own, and can neither read the first caller's record nor take its id.
 */
export function importJobIdFor(submitterUserId: string, requestId: string): string {
  return uuidv5(`${submitterUserId.toLowerCase()}:${requestId.toLowerCase()}`, IMPORT_JOB_NAMESPACE);
}

/**
 * The import queue's options; with tracing on (the `OTEL_*` variables in `env`), BullMQ's telemetry,
 * so a job carries the trace context it was added in.
 */
export function importQueueOptions(config: Config, keys: Keys, env: NodeJS.ProcessEnv = process.env) {
  return {
    prefix: keys.importQueuePrefix(),
    ...queueTelemetry(env),
    defaultJobOptions: {
      // Transient failures (Redis away) are retried; business failures never throw, so never retry.
      attempts: 5,
      backoff: { type: 'exponential', delay: 1_000 },
      removeOnComplete: { count: config.imports.keepCompletedJobs },
      removeOnFail: { count: config.imports.keepFailedJobs },
    } satisfies JobsOptions,
  };
}

/**
 * Listens to a BullMQ queue's or worker's 'error' events, which it re-emits from its connections:
 * without a listener an EventEmitter throws them, and a connection closed while BullMQ still
 * initialises it (a process stopping early) would crash the process. While Redis is away BullMQ
 * reports every failed reconnect; the connection itself logs losing and regaining Redis once each,
 * so those are debug lines, not a warning per retry.
 */
export function reportQueueErrors(
  emitter: { on(event: 'error', listener: (error: Error) => void): unknown },
  logger: Logger,
  what: string,
): void {
  emitter.on('error', (error: Error) => {
    if (isRedisUnavailable(error)) logger.debug(`${what} waiting for redis`, { error: error.message });
    else logger.warn(`${what} error`, { error: error.message });
  });
}

/** The producer side: enqueue imports and claim the inline slot for High ones. */
export class ImportQueue {
  private current: Queue<QueuedImportJob>;
  private readonly claimKey: string;

  constructor(
    private readonly connection: ConnectionOptions,
    private readonly redis: RedisClient,
    private readonly keys: Keys,
    private readonly config: Config,
    private readonly logger: Logger,
    /** Seals the data of every job it adds; a queue without one (metrics only) cannot enqueue. */
    private readonly cipher?: JobDataCipher,
    /** True when `connection` is the queue's alone: close() then closes it too. */
    private readonly ownsConnection = false,
  ) {
    this.current = this.makeQueue();
    this.claimKey = keys.importInlineClaim();
    registerScripts(redis, IMPORT_SCRIPTS);
  }

  /** The BullMQ queue: the one set up by ready(), once that has resolved. */
  get queue(): Queue<QueuedImportJob> {
    return this.current;
  }

  private makeQueue(): Queue<QueuedImportJob> {
    const queue = new Queue<QueuedImportJob>(IMPORT_QUEUE_NAME, {
      connection: this.connection,
      ...importQueueOptions(this.config, this.keys),
    });
    reportQueueErrors(queue, this.logger, 'import queue');
    return queue;
  }

  /**
   * Resolves once BullMQ has set the queue up. BullMQ does that once, when the queue is made (it
   * reads the server's INFO), and never again: a set-up that failed with Redis (that round trip past
   * the connection's command timeout on a busy machine, or the connection lost meanwhile) would fail
   * every later add, and every import would answer 503 until the process restarted. Such a queue is
   * made anew until one is set up, as waitForRedis waits out an outage at start. Called at start,
   * before anything else holds `queue`.
   */
  async ready(retryMs = SET_UP_RETRY_MS): Promise<void> {
    for (;;) {
      try {
        await this.current.waitUntilReady();
        return;
      } catch (error) {
        // A connection closed for good (the process is stopping) will not set anything up.
        const closed = isRedisClient(this.connection) && this.connection.status === 'end';
        if (!isRedisUnavailable(error) || closed) throw error;
        this.logger.warn('import queue set-up failed with redis; setting it up again', {
          error: (error as Error).message,
          retryInMs: retryMs,
        });
        // BullMQ leaves a connection it was given open (it is shared): only the queue goes.
        await this.current.close().catch(() => undefined);
        await new Promise((resolve) => setTimeout(resolve, retryMs));
        this.current = this.makeQueue();
      }
    }
  }

  /** BullMQ's reason when it holds the job as failed (no retry follows), else null. */
  async failedReason(importJobId: string): Promise<string | null> {
    const job = await this.queue.getJob(importJobId);
    if (!job || (await job.getState()) !== 'failed') return null;
    return job.failedReason || 'the job failed';
  }

  /** Adds the job, its data sealed: no password or other import data reaches Redis in the clear. */
  async enqueue(job: ImportJobData): Promise<void> {
    if (!this.cipher) throw new Error('this import queue has no cipher: it cannot enqueue');
    const { importData, ...identity } = job;
    const data: QueuedImportJob = {
      ...identity,
      sealedImportData: this.cipher.seal(importData, job.importJobId),
    };
    await this.queue.add(data.importerType, data, {
      jobId: data.importJobId,
      priority: BULL_PRIORITY[data.priority],
    });
  }

  /**
   * Takes the inline slot if nothing is waiting, delayed, prioritized, paused or active, and no
   * other inline import runs. Returns a release function, or null when the queue is busy.
   */
  async claimInline(ttlMs: number): Promise<(() => Promise<void>) | null> {
    const keys = this.queue.keys;
    const token = randomBytes(12).toString('base64url');
    const claimed = await this.redis.claimInlineImport(
      keys.wait ?? '',
      keys.active ?? '',
      keys.prioritized ?? '',
      keys.delayed ?? '',
      keys.paused ?? '',
      this.claimKey,
      token,
      ttlMs,
    );
    if (claimed !== 1) return null;
    return async () => {
      await this.redis.releaseLock(this.claimKey, token);
    };
  }

  /**
   * Queues a job whose inline run failed part-way (its record is still Pending) and gives the inline
   * claim back, retrying every `retryMs` while Redis is away, for up to `giveUpAfterMs`. The workers
   * then finish it: every step of an import is idempotent, and the job id derives from the request
   * id, so a job queued meanwhile by a resend is not queued twice. Resolves true once handed over,
   * false if it gave up; never rejects.
   */
  async handOver(
    job: ImportJobData,
    release: () => Promise<void>,
    { retryMs = 1_000, giveUpAfterMs = 10 * 60 * 1000 } = {},
  ): Promise<boolean> {
    const giveUpAt = Date.now() + giveUpAfterMs;
    for (;;) {
      try {
        await this.enqueue(job);
        await release();
        return true;
      } catch {
        if (Date.now() >= giveUpAt) return false;
        // Unreferenced: a pending hand-over must not keep a stopping process alive.
        await new Promise((resolve) => setTimeout(resolve, retryMs).unref());
      }
    }
  }

  /**
   * Jobs per state, the `prioritized` ones (waiting to run) per priority: two reads, made when
   * metrics are scraped. `completed` and `failed` count what BullMQ keeps (IMPORT_KEEP_*_JOBS).
   */
  async depth(): Promise<QueueDepthSample[]> {
    const priorities = Object.entries(BULL_PRIORITY) as [ImportPriority, number][];
    const [counts, perPriority] = await Promise.all([
      this.queue.getJobCounts(...COUNTED_STATES),
      this.queue.getCountsPerPriority(priorities.map(([, bullPriority]) => bullPriority)),
    ]);
    return [
      ...COUNTED_STATES.map((state) => ({ state, jobs: counts[state] ?? 0 })),
      ...priorities.map(([priority, bullPriority]) => ({
        state: 'prioritized' as const,
        priority,
        jobs: perPriority[String(bullPriority)] ?? 0,
      })),
    ];
  }

  async inlineRunning(): Promise<boolean> {
    return (await this.redis.exists(this.claimKey)) === 1;
  }

  /**
   * Closes the queue, and first its connection when it owns one. A queue closed right after it was
   * made may still be in BullMQ's set-up on that connection, which re-emits a failure as an 'error'
   * of the connection wrapper; closing the queue removes that wrapper's listeners, so a later
   * failure would be an unhandled rejection. Closing the connection first makes a running set-up
   * fail while the queue still listens; it is awaited, with a bound, since a cluster client closed
   * while connecting never settles (ADR 0022). A queue on a shared connection was set up long ago.
   */
  async close(): Promise<void> {
    if (this.ownsConnection && isRedisClient(this.connection)) {
      await closeConnections(this.connection);
      await settledWithin(this.queue.waitUntilReady(), SET_UP_SETTLE_MS);
    }
    await this.queue.close();
  }
}

/** How long ready() waits before it sets up again a queue whose set-up failed with Redis. */
const SET_UP_RETRY_MS = 500;

/** How long close() waits for BullMQ's set-up on a closed connection to settle. */
const SET_UP_SETTLE_MS = 2_000;

/** Resolves once `promise` settles, or after `ms`, whichever comes first; never rejects. */
async function settledWithin(promise: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    promise.catch(() => undefined),
    new Promise((resolve) => {
      timer = setTimeout(resolve, ms);
    }),
  ]);
  clearTimeout(timer);
}

function isRedisClient(connection: ConnectionOptions): connection is RedisClient {
  return typeof (connection as Partial<RedisClient>).quit === 'function';
}
