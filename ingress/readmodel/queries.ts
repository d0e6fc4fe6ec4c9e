import { currentUserQuery } from './current-user/current-user.query';
import type { RegisteredQuery } from './query-definition';

/** Every read-model query the service answers. Adding one is a folder plus a line here. */
export function allQueries(): readonly RegisteredQuery[] {
  return [currentUserQuery];
}
