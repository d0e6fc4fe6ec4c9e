import { loadConfigOrExit } from '../shared/lifecycle';
import { createLogger } from '../shared/logger';
import { closeConnections, createRedisConnection, waitForRedis } from '../shared/redis/connections';
import { createKeys } from '../shared/redis/keys';
import { ALL_PROJECTIONS } from '../workers/projector/all-projections';
import { rebuildProjection } from '../workers/projector/rebuild';

/** `npm run projections:rebuild`: rebuilds every projection from the global event log. */
async function main(): Promise<void> {
  const config = loadConfigOrExit('script', 'rebuild');
  const logger = createLogger({ level: config.logLevel, processRole: 'rebuild' });
  const redis = createRedisConnection(config.redis, 'queue', logger);
  await waitForRedis(redis, logger);
  const keys = createKeys(config.redisKeyPrefix);
  for (const projection of ALL_PROJECTIONS) {
    const started = Date.now();
    const replayed = await rebuildProjection(redis, keys, projection);
    logger.info('projection rebuilt', {
      projection: projection.name,
      replayed,
      durationMs: Date.now() - started,
    });
  }
  await closeConnections(redis);
}

main().catch((error: unknown) => {
  process.stderr.write(`[rebuild] ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
