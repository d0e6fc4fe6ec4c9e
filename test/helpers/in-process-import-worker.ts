import type { Worker } from 'bullmq';

import type { QueuedImportJob } from '../../shared/importers/import-queue';
import { closeConnections, createRedisConnection, type RedisClient } from '../../shared/redis/connections';
import { startImportWorker } from '../../workers/imports/import.worker';
import type { TestApp } from './app-fixture';

/**
 * The import queue's worker in the test's own process, on the app's services and a queue connection
 * of its own (as the worker process has one): started and stopped at will, so a test can leave
 * imports waiting in the queue and then let them run.
 */
export class InProcessImportWorker {
  private readonly connection: RedisClient;
  private worker: Worker<QueuedImportJob> | undefined;

  constructor(private readonly subject: TestApp) {
    this.connection = createRedisConnection(subject.config.redis, 'queue', subject.logger);
  }

  /** Starts consuming the queue, unless already started. */
  start(): Worker<QueuedImportJob> {
    const { services, config, logger, metrics } = this.subject;
    this.worker ??= startImportWorker(
      this.connection,
      services,
      services.importResults,
      services.jobCipher,
      config,
      logger,
      metrics,
    );
    return this.worker;
  }

  /** Stops consuming, once the jobs in progress have finished; start() starts a new worker. */
  async stop(): Promise<void> {
    await this.worker?.close();
    this.worker = undefined;
  }

  /** Stops the worker and closes its connection. */
  async close(): Promise<void> {
    await this.stop();
    await closeConnections(this.connection);
  }
}
