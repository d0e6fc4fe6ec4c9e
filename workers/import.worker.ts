import { Worker, type Job } from 'bullmq';
import type { RedisClient } from '../shared/redis/connections';

import type { CoreServices } from '../shared/composition';
import type { Config } from '../shared/config';
import {
  IMPORT_QUEUE_NAME,
  importQueueOptions,
  reportQueueErrors,
  type ImportJobData,
} from '../shared/importers/import-queue';
import type { ImportResults } from '../shared/importers/import-results';
import { processImport } from '../shared/importers/import-processor';
import type { Logger } from '../shared/logger';
import type { Metrics } from '../shared/metrics/metrics';
import { redactSecrets } from '../shared/redaction';
import { runWithContext } from '../shared/request-context';

/**
 * The BullMQ consumer of the import queue. A business failure (a missing role, an existing user)
 * is a Failed result, never a thrown error, so BullMQ retries only what is transient (Redis away).
 * A worker that dies mid-job loses its lock; BullMQ's stalled check hands the job to another, which
 * re-runs it: users created by the first attempt are recognised by the job id and not created again.
 */
export function startImportWorker(
  connection: RedisClient,
  services: CoreServices,
  results: ImportResults,
  config: Config,
  logger: Logger,
  metrics: Metrics,
): Worker<ImportJobData> {
  const worker = new Worker<ImportJobData>(
    IMPORT_QUEUE_NAME,
    (job: Job<ImportJobData>) =>
      runWithContext({ requestId: job.data.requestId, userId: job.data.submitterUserId }, async () => {
        logger.info('import started', { importJobId: job.data.importJobId, attempt: job.attemptsStarted });
        const record = await processImport(job.data, services, results, config, {
          onProgress: (done, total) => job.updateProgress({ done, total }),
          onFinished: (finished) => metrics.recordImport('queued', finished),
        });
        // The job's data may carry seeded passwords; BullMQ keeps finished jobs, so keep none of them.
        await job.updateData({ ...job.data, importData: redactSecrets(job.data.importData) });
        logger.info('import finished', {
          importJobId: record.importJobId,
          status: record.status,
          commandsExecuted: record.commandsExecuted,
          executionDuration: record.executionDuration,
        });
        return { status: record.status, importResultId: record.importResultId };
      }),
    {
      connection,
      prefix: importQueueOptions(config, services.keys).prefix,
      concurrency: config.workerConcurrency,
      lockDuration: config.imports.jobLockMs,
      stalledInterval: Math.max(1_000, Math.floor(config.imports.jobLockMs / 2)),
      maxStalledCount: 3,
    },
  );
  worker.on('failed', (job, error) => {
    logger.warn('import attempt failed', { importJobId: job?.data.importJobId, error: error.message });
    if (!job || job.attemptsMade < (job.opts.attempts ?? 1)) return;
    // Out of retries: the record must not stay Pending forever, nor the job keep its secrets.
    void Promise.all([
      results.failIfPending(
        job.data.importJobId,
        `Import failed after ${job.attemptsMade} attempts: ${error.message}`,
      ),
      job.updateData({ ...job.data, importData: redactSecrets(job.data.importData) }),
    ]).catch((cause: unknown) => logger.warn('could not record the failed import', { error: String(cause) }));
  });
  reportQueueErrors(worker, logger, 'import worker');
  return worker;
}
