import type { Logger } from '../../shared/logger';
import type { RedisClient } from '../../shared/redis/connections';
import type { Keys } from '../../shared/redis/keys';

/**
 * Whether the users projection is still stored as before ADR 0032 (every key under the one
 * `{users}` tag), warned about at a worker's start. The projector fills the new layout by itself
 * (its checkpoints there are new, so it reads each log partition from its start), but only a
 * rebuild folds the streams (a trimmed log lacks the oldest accounts) and deletes the old keys.
 * One EXISTS: every account is in the old every-account index.
 */
export async function checkLegacyUsersLayout(
  redis: RedisClient,
  keys: Keys,
  logger: Logger,
): Promise<boolean> {
  if ((await redis.exists(keys.users.legacyIndex())) === 0) return false;
  logger.warn('The users projection is still stored as before ADR 0032: rebuild it', {
    key: keys.users.legacyIndex(),
    run: 'npm run projections:rebuild -- users',
    see: 'docs/operators.md',
  });
  return true;
}
