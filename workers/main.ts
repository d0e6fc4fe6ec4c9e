import { installShutdownHooks, loadConfigOrExit } from '../shared/lifecycle';
import { createLogger } from '../shared/logger';
import { ALL_PROJECTIONS } from '../shared/projections/all-projections';
import { Projector } from '../shared/projections/projector';
import { createKeys } from '../shared/redis/keys';
import { closeConnections, createRedisConnection, waitForRedis } from '../shared/redis/connections';

/**
 * The worker process: starts every consumer (the projector now; queue processors later) against
 * one Redis and closes them on SIGTERM, letting in-flight work finish. Run as many replicas as the
 * load needs: projector replicas split the log partitions between them.
 */
async function main(): Promise<void> {
  const config = loadConfigOrExit('worker');
  const logger = createLogger({ level: config.logLevel, processRole: 'worker' });
  const redis = createRedisConnection(config.redisUrl, 'queue', logger);
  const keys = createKeys(config.redisKeyPrefix);
  const projector = new Projector(redis, keys, ALL_PROJECTIONS, logger);

  installShutdownHooks(logger, config.shutdownTimeoutMs, async () => {
    await projector.stop();
    await closeConnections(redis);
  });

  await waitForRedis(redis, logger);
  projector.start();
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
