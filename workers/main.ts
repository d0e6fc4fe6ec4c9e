import { createCoreServices } from '../shared/composition';
import { ImportResults } from '../shared/importers/import-results';
import { installShutdownHooks, loadConfigOrExit } from '../shared/lifecycle';
import { createLogger } from '../shared/logger';
import { ALL_PROJECTIONS } from '../shared/projections/all-projections';
import { Projector } from '../shared/projections/projector';
import { closeConnections, createRedisConnection, waitForRedis } from '../shared/redis/connections';
import { startImportWorker } from './import.worker';

/**
 * The worker process: starts every consumer (the projector now; queue processors later) against
 * one Redis and closes them on SIGTERM, letting in-flight work finish. Run as many replicas as the
 * load needs: projector replicas split the log partitions between them.
 */
async function main(): Promise<void> {
  const config = loadConfigOrExit('worker');
  const logger = createLogger({ level: config.logLevel, processRole: 'worker' });
  // Commands fail fast on the request connection; BullMQ gets its own, which retries forever.
  const redis = createRedisConnection(config.redisUrl, 'request', logger);
  const queueConnection = createRedisConnection(config.redisUrl, 'queue', logger);
  const services = createCoreServices(config, redis);
  const results = new ImportResults(redis, services.keys, config.imports.resultTtlSeconds);
  const projector = new Projector(
    queueConnection,
    services.keys,
    ALL_PROJECTIONS,
    logger,
    {},
    queueConnection.duplicate(),
  );
  let importWorker: ReturnType<typeof startImportWorker> | undefined;

  installShutdownHooks(logger, config.shutdownTimeoutMs, async () => {
    // Workers first: close() waits for jobs in progress, which still need Redis.
    await Promise.all([importWorker?.close(), projector.stop()]);
    await closeConnections(redis, queueConnection);
  });

  await waitForRedis(redis, logger);
  projector.start();
  importWorker = startImportWorker(queueConnection, services, results, config, logger);
  logger.info('worker ready', {
    concurrency: config.workerConcurrency,
    projections: ALL_PROJECTIONS.map((p) => p.name),
  });
}

main().catch((error: unknown) => {
  process.stderr.write(
    `[worker] failed to start: ${error instanceof Error ? error.message : String(error)}\n`,
  );
  process.exit(1);
});
