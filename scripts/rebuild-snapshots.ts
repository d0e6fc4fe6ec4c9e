import { createEventStore } from '../shared/core-services';
import { loadConfigOrExit } from '../shared/lifecycle';
import { createLogger } from '../shared/logger';
import { closeConnections, createRedisConnection, waitForRedis } from '../shared/redis/connections';
import { createKeys } from '../shared/redis/keys';
import { rebuildSnapshots } from './lib/rebuild-snapshots';

/**
 * `npm run snapshots:rebuild`: after a decider's `stateVersion` was bumped, folds every record of
 * another shape again from its stream. Until then such records are re-folded on each load.
 */
async function main(): Promise<void> {
  const config = loadConfigOrExit('script', 'rebuild');
  const logger = createLogger({ level: config.logLevel, processRole: 'rebuild' });
  const redis = createRedisConnection(config.redis, 'queue', logger);
  await waitForRedis(redis, logger);
  // The store of the services: sealed events are opened before they are folded again.
  const store = createEventStore(redis, createKeys(config.redisKeyPrefix));
  const started = Date.now();
  for (const rebuilt of await rebuildSnapshots(store)) {
    logger.info('snapshots rebuilt', { ...rebuilt, durationMs: Date.now() - started });
  }
  await closeConnections(redis);
}

main().catch((error: unknown) => {
  process.stderr.write(`[rebuild] ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
