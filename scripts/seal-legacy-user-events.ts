import { createEventStore } from '../shared/core-services';
import { loadConfigOrExit } from '../shared/lifecycle';
import { createLogger } from '../shared/logger';
import { closeConnections, createRedisConnection, waitForRedis } from '../shared/redis/connections';
import { createKeys } from '../shared/redis/keys';
import { sealLegacyUserEvents } from './lib/legacy-sealing';

/**
 * `npm run users:seal-legacy`: seals the personal fields of user events written before sealing, in
 * the streams and in the log, so that erasing any account erases them (ADR 0014, "Legacy events").
 * Run it once after every process runs a version that seals; it runs beside live traffic and may run
 * again. Then have Redis rewrite its files (BGREWRITEAOF, BGSAVE): they still hold the old text.
 */
async function main(): Promise<void> {
  const config = loadConfigOrExit('script', 'seal-legacy');
  const logger = createLogger({ level: config.logLevel, processRole: 'seal-legacy' });
  const redis = createRedisConnection(config.redis, 'background', logger);
  await waitForRedis(redis, logger);
  const started = Date.now();
  const done = await sealLegacyUserEvents(createEventStore(redis, createKeys(config.redisKeyPrefix)));
  logger.info('legacy user events sealed', { ...done, durationMs: Date.now() - started });
  await closeConnections(redis);
}

main().catch((error: unknown) => {
  process.stderr.write(`[seal-legacy] ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
