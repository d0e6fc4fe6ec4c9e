import { type Job, Worker } from 'bullmq';

import type { Config } from '../../shared/config';
import type { CoreServices } from '../../shared/core-services';
import { processImport } from '../../shared/importers/import-processor';
import {
  finishedJobData,
  IMPORT_QUEUE_NAME,
  importQueueOptions,
  type QueuedImportJob,
  reportQueueErrors,
} from '../../shared/importers/import-queue';
import type { ImportRecord, ImportResults } from '../../shared/importers/import-results';
import type { JobDataCipher } from '../../shared/importers/job-data-cipher';
import type { Logger } from '../../shared/logger';
import type { Metrics } from '../../shared/metrics/metrics';
import type { RedisClient } from '../../shared/redis/connections';
import { runWithContext } from '../../shared/request-context';
import { queueTelemetry } from '../../shared/tracing/queue-telemetry';

/** Why a job that ran no import ended Failed: its data is gone or no key opens it. */
export const UNREADABLE_JOB_MESSAGE =
  "The import's data could not be read (the data encryption key changed since it was queued, or the job lost its data); nothing was imported";

/**
 * BullMQ's job is terminal once it failed for good: out of attempts, an UnrecoverableError, or
 * failed by the stalled-job limit. The last reaches a worker as an immediate failure of the job it
 * next picks up (BullMQ 5 marks it and fails it then, attemptsMade far below attempts), so the test is
 * BullMQ's own: moveToFailed set finishedOn only when it did not schedule a retry.
 */
function failedForGood(job: Job<QueuedImportJob>): boolean {
  return typeof job.finishedOn === 'number' && job.finishedOn > 0;
}

/**
 * The BullMQ consumer of the import queue. A business failure (a missing role, an existing user)
 * is a Failed result, never a thrown error, so BullMQ retries only what is transient (Redis away).
 * A worker that dies mid-job loses its lock; BullMQ's stalled check hands the job to another, which
 * re-runs it: users created by the first attempt are recognised by the job id and not created again.
 * Whatever way a job ends, its record ends Completed or Failed and its data is replaced by a summary.
 */
export function startImportWorker(
  connection: RedisClient,
  services: CoreServices,
  results: ImportResults,
  cipher: JobDataCipher,
  config: Config,
  logger: Logger,
  metrics: Metrics,
): Worker<QueuedImportJob> {
  const dropData = (job: Job<QueuedImportJob>, record: ImportRecord | null) =>
    job.updateData(
      finishedJobData(job.data, {
        status: record?.status === 'Completed' ? 'Completed' : 'Failed',
        rows: record?.progress.total ?? 0,
        finishedAt: record?.completedAt ?? new Date().toISOString(),
      }),
    );

  const run = async (job: Job<QueuedImportJob>): Promise<ImportRecord | null> => {
    const { importJobId, sealedImportData } = job.data;
    const existing = await results.get(importJobId);
    if (existing && existing.status !== 'Pending') return existing;
    let importData: unknown;
    // Queued by a version before sealing: its data is in the clear; run it, then drop it as any.
    const legacy = job.data as QueuedImportJob & { readonly importData?: unknown };
    try {
      if (sealedImportData === undefined && legacy.importData !== undefined) importData = legacy.importData;
      else if (sealedImportData === undefined) throw new Error('the job holds no import data');
      else importData = cipher.open(sealedImportData, importJobId);
    } catch (error) {
      logger.warn('import data unreadable', { importJobId, error: (error as Error).message });
      return results.failIfPending(importJobId, UNREADABLE_JOB_MESSAGE);
    }
    return processImport({ ...job.data, importData }, services, results, config, {
      onProgress: (done, total) => job.updateProgress({ done, total }),
      onFinished: (finished) => metrics.recordImport('queued', finished),
    });
  };

  const worker = new Worker<QueuedImportJob>(
    IMPORT_QUEUE_NAME,
    (job: Job<QueuedImportJob>) =>
      runWithContext({ requestId: job.data.requestId, userId: job.data.submitterUserId }, async () => {
        logger.info('import started', { importJobId: job.data.importJobId, attempt: job.attemptsStarted });
        const record = await run(job);
        // Finished jobs are kept for the dashboard: without their data, sealed or not.
        await dropData(job, record);
        logger.info('import finished', {
          importJobId: job.data.importJobId,
          status: record?.status ?? null,
          commandsExecuted: record?.commandsExecuted ?? 0,
          executionDuration: record?.executionDuration ?? null,
        });
        return { status: record?.status ?? 'Failed', importResultId: record?.importResultId ?? null };
      }),
    {
      connection,
      prefix: importQueueOptions(config, services.keys).prefix,
      // With tracing on, each job runs in a span continuing the trace it was added in, and so do its commands.
      ...queueTelemetry(),
      concurrency: config.workerConcurrency,
      lockDuration: config.imports.jobLockMs,
      stalledInterval: Math.max(1_000, Math.floor(config.imports.jobLockMs / 2)),
      maxStalledCount: 3,
    },
  );
  worker.on('failed', (job, error) => {
    logger.warn('import attempt failed', { importJobId: job?.data.importJobId, error: error.message });
    if (!job || !failedForGood(job)) return;
    // No retry follows: the record must not stay Pending forever, nor the job keep its data.
    void results
      .failIfPending(
        job.data.importJobId,
        `Import failed after ${job.attemptsStarted} attempt(s): ${error.message}`,
      )
      .then((record) => dropData(job, record))
      .catch((cause: unknown) => logger.warn('could not record the failed import', { error: String(cause) }));
  });
  reportQueueErrors(worker, logger, 'import worker');
  return worker;
}
