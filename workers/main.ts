import { installShutdownHooks, loadConfigOrExit } from '../shared/lifecycle';
import { createLogger } from '../shared/logger';
import { closeConnections, createRedisConnection, waitForRedis } from '../shared/redis/connections';

/**
 * The worker process: starts every consumer (queue processors, projectors) against one Redis and
 * closes them on SIGTERM, letting in-flight jobs finish. Run as many replicas as the load needs.
 */
async function main(): Promise<void> {
  const config = loadConfigOrExit('worker');
  const logger = createLogger({ level: config.logLevel, processRole: 'worker' });
  const redis = createRedisConnection(config.redisUrl, 'queue', logger);

  installShutdownHooks(logger, config.shutdownTimeoutMs, async () => {
    await closeConnections(redis);
  });

  await waitForRedis(redis, logger);
  logger.info('worker ready', { concurrency: config.workerConcurrency });
}

main().catch((error: unknown) => {
  process.stderr.write(
    `[worker] failed to start: ${error instanceof Error ? error.message : String(error)}\n`,
  );
  process.exit(1);
});
