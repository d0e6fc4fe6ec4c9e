import { randomBytes } from 'node:crypto';
import { Queue, type ConnectionOptions, type JobsOptions } from 'bullmq';
import { v5 as uuidv5 } from 'uuid';

import type { Config } from '../config';
import type { Logger } from '../logger';
import { isRedisUnavailable, type RedisClient } from '../redis/connections';
import type { Keys } from '../redis/keys';
import { registerScripts } from '../redis/scripts';
import type { ImportPriority } from './importer';

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

/** What a queued import carries to the worker. */
export interface ImportJobData {
  readonly importJobId: string;
  readonly requestId: string;
  readonly importerType: string;
  readonly priority: ImportPriority;
  readonly submitterUserId: string;
  readonly importData: unknown;
}

/** The same requestId always names the same job: a resent request cannot import twice. */
export function importJobIdFor(requestId: string): string {
  return uuidv5(requestId.toLowerCase(), IMPORT_JOB_NAMESPACE);
}

export function importQueueOptions(config: Config, keys: Keys) {
  return {
    prefix: keys.importQueuePrefix(),
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
  readonly queue: Queue<ImportJobData>;
  private readonly claimKey: string;

  constructor(
    connection: ConnectionOptions,
    private readonly redis: RedisClient,
    keys: Keys,
    config: Config,
    logger: Logger,
  ) {
    this.queue = new Queue<ImportJobData>(IMPORT_QUEUE_NAME, {
      connection,
      ...importQueueOptions(config, keys),
    });
    reportQueueErrors(this.queue, logger, 'import queue');
    this.claimKey = keys.importInlineClaim();
    registerScripts(redis);
  }

  async enqueue(data: ImportJobData): Promise<void> {
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

  async close(): Promise<void> {
    await this.queue.close();
  }
}
