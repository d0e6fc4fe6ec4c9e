import { randomBytes } from 'node:crypto';
import { Queue, type ConnectionOptions, type JobsOptions } from 'bullmq';
import type { Redis } from 'ioredis';
import { v5 as uuidv5 } from 'uuid';

import type { Config } from '../config';
import type { Keys } from '../redis/keys';
import { registerScripts } from '../redis/scripts';
import type { ImportPriority } from './importer';

export const IMPORT_QUEUE_NAME = 'imports';

/** Fixed forever: import job ids derive from request ids through it. */
const IMPORT_JOB_NAMESPACE = '3b1f0c9e-8a57-5d2e-b6a4-7c0e9d1f2a3b';

/** BullMQ priorities (lower runs first): every High job goes before every Normal one. */
const BULL_PRIORITY: Readonly<Record<ImportPriority, number>> = { High: 1, Normal: 10 };

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

/** The producer side: enqueue imports and claim the inline slot for High ones. */
export class ImportQueue {
  readonly queue: Queue<ImportJobData>;
  private readonly claimKey: string;

  constructor(
    connection: ConnectionOptions,
    private readonly redis: Redis,
    keys: Keys,
    config: Config,
  ) {
    this.queue = new Queue<ImportJobData>(IMPORT_QUEUE_NAME, {
      connection,
      ...importQueueOptions(config, keys),
    });
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

  async inlineRunning(): Promise<boolean> {
    return (await this.redis.exists(this.claimKey)) === 1;
  }

  async close(): Promise<void> {
    await this.queue.close();
  }
}
