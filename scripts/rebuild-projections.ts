import { loadConfigOrExit } from '../shared/lifecycle';
import { createLogger } from '../shared/logger';
import { closeConnections, createRedisConnection, waitForRedis } from '../shared/redis/connections';
import { createKeys } from '../shared/redis/keys';
import { ALL_PROJECTIONS } from '../workers/projector/all-projections';
import { rebuildProjection } from '../workers/projector/rebuild';

/**
 * `npm run projections:rebuild [-- <name>...]`: rebuilds every projection (or those named, e.g.
 * `users`) from the aggregates' streams and the global event log.
 */
async function main(): Promise<void> {
  const names = process.argv.slice(2);
  const unknown = names.filter((name) => !ALL_PROJECTIONS.some((projection) => projection.name === name));
  if (unknown.length > 0) {
    const known = ALL_PROJECTIONS.map((projection) => projection.name).join(', ');
    throw new Error(`no projection named ${unknown.join(', ')} (there are ${known})`);
  }
  const config = loadConfigOrExit('script', 'rebuild');
  const logger = createLogger({ level: config.logLevel, processRole: 'rebuild' });
  const redis = createRedisConnection(config.redis, 'queue', logger);
  await waitForRedis(redis, logger);
  const keys = createKeys(config.redisKeyPrefix);
  for (const projection of ALL_PROJECTIONS) {
    if (names.length > 0 && !names.includes(projection.name)) continue;
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
