import type { AccountService } from '../../shared/accounts/account.service';
import type { EventStore } from '../../shared/event-store/event-store';
import type { ImportResults } from '../../shared/importers/import-results';
import type { RedisClient } from '../../shared/redis/connections';
import type { Keys } from '../../shared/redis/keys';
import type { DeliveryLog } from '../../shared/webhook-subscription/delivery-log';
import { availableImportersQuery } from './available-importers/available-importers.query';
import { currentUserQuery } from './current-user/current-user.query';
import { getFantasyTeamQuery } from './get-fantasy-team/get-fantasy-team.query';
import { getImportJobResultQuery } from './get-import-job-result/get-import-job-result.query';
import { getMappedPlayersQuery } from './get-mapped-players/get-mapped-players.query';
import { getTeamRatingInputQuery } from './get-team-rating-input/get-team-rating-input.query';
import { getUserQuery } from './get-user/get-user.query';
import { getWebhookDeliveriesQuery } from './get-webhook-deliveries/get-webhook-deliveries.query';
import { listUsersQuery } from './list-users/list-users.query';
import type { UsersReader } from './list-users/users.reader';
import { listWebhookSubscriptionsQuery } from './list-webhook-subscriptions/list-webhook-subscriptions.query';
import type { RegisteredQuery } from './query-definition';
import type { ProjectionWaits } from './read-your-writes';
import { SubscriptionRecords } from './webhook-subscription-records';

export interface QueryDependencies {
  readonly redis: RedisClient;
  readonly keys: Keys;
  readonly importResults: ImportResults;
  /** GetUser reads the account's record (current, not a projection). */
  readonly accounts: Pick<AccountService, 'findById' | 'userIds'>;
  /** ListUsers' reader of the users projection (its script registered on the connection). */
  readonly usersReader: UsersReader;
  /** The webhook queries read the subscriptions' records (current, not a projection) from it. */
  readonly store: Pick<EventStore, 'loadRecord'>;
  /** GetWebhookDeliveries reads the delivery log the workers write. */
  readonly deliveryLog: DeliveryLog;
  /** Holds the reads with `minVersion` until the projection has their version (ADR 0019). */
  readonly projectionWaits: ProjectionWaits;
}

/** Every read-model query the service answers. Adding one is a folder plus a line here. */
export function allQueries(deps: QueryDependencies): readonly RegisteredQuery[] {
  const subscriptionRecords = new SubscriptionRecords(deps.store, deps.redis, deps.keys);
  return [
    getTeamRatingInputQuery(deps.redis, deps.keys, deps.projectionWaits),
    getMappedPlayersQuery(deps.redis, deps.keys, deps.projectionWaits),
    currentUserQuery,
    getFantasyTeamQuery(deps.redis, deps.keys, deps.projectionWaits),
    availableImportersQuery,
    getImportJobResultQuery(deps.importResults),
    getUserQuery(deps.accounts, deps.projectionWaits),
    listUsersQuery(deps.usersReader),
    listWebhookSubscriptionsQuery(subscriptionRecords),
    getWebhookDeliveriesQuery(deps.deliveryLog, subscriptionRecords),
  ];
}
