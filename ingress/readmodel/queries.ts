import type { Redis } from 'ioredis';

import type { Keys } from '../../shared/redis/keys';
import { currentUserQuery } from './current-user/current-user.query';
import { getFantasyTeamQuery } from './get-fantasy-team/get-fantasy-team.query';
import type { RegisteredQuery } from './query-definition';

/** Every read-model query the service answers. Adding one is a folder plus a line here. */
export function allQueries(redis: Redis, keys: Keys): readonly RegisteredQuery[] {
  return [currentUserQuery, getFantasyTeamQuery(redis, keys)];
}
