import { bootstrapAdmin } from '../shared/accounts/bootstrap-admin';
import { installShutdownHooks, loadConfigOrExit } from '../shared/lifecycle';
import { createLogger } from '../shared/logger';
import { closeConnections, createRedisConnection, waitForRedis } from '../shared/redis/connections';
import { buildApp } from './app';
import { listen, type RunningServer } from './server';
import { createIngressServices, type IngressServices } from './services';

/** The HTTP ingress process: config -> logger -> redis -> services -> app -> listen. */
async function main(): Promise<void> {
  const config = loadConfigOrExit('ingress');
  const logger = createLogger({ level: config.logLevel, processRole: 'ingress' });
  const redis = createRedisConnection(config.redisUrl, 'request', logger);
  let running: RunningServer | undefined;
  let services: IngressServices | undefined;

  // Hooks first: a process still waiting for Redis must stop cleanly on SIGTERM too.
  installShutdownHooks(logger, config.shutdownTimeoutMs, async () => {
    await running?.close(config.shutdownTimeoutMs);
    await services?.close();
    await closeConnections(redis);
  });

  await waitForRedis(redis, logger);
  services = await createIngressServices(config, redis, logger);
  await bootstrapAdmin(config, services.accounts, logger);

  running = await listen(buildApp({ config, logger, redis, services }), config.port, config.host);
  logger.info('ingress listening', { port: running.port, host: config.host });
}

main().catch((error: unknown) => {
  process.stderr.write(
    `[ingress] failed to start: ${error instanceof Error ? error.message : String(error)}\n`,
  );
  process.exit(1);
});
