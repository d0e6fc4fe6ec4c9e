import { loadConfigOrExit, installShutdownHooks } from '../shared/lifecycle';
import { createLogger } from '../shared/logger';
import { closeConnections, createRedisConnection } from '../shared/redis/connections';
import { buildApp } from './app';
import { listen } from './server';

/** The HTTP ingress process: config -> logger -> redis -> app -> listen -> shutdown hooks. */
async function main(): Promise<void> {
  const config = loadConfigOrExit('ingress');
  const logger = createLogger({ level: config.logLevel, processRole: 'ingress' });
  const redis = createRedisConnection(config.redisUrl, 'request', logger);

  const app = buildApp({ config, logger, redis });
  const running = await listen(app, config.port, config.host);
  logger.info('ingress listening', { port: running.port, host: config.host });

  installShutdownHooks(logger, config.shutdownTimeoutMs, async () => {
    await running.close(config.shutdownTimeoutMs);
    await closeConnections(redis);
  });
}

main().catch((error: unknown) => {
  process.stderr.write(
    `[ingress] failed to start: ${error instanceof Error ? error.message : String(error)}\n`,
  );
  process.exit(1);
});
