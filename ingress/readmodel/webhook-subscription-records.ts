import type { EventStore } from '../../shared/event-store/event-store';
import type { RedisClient } from '../../shared/redis/connections';
import type { Keys } from '../../shared/redis/keys';
import {
  webhookSubscriptionDecider,
  type WebhookSubscriptionState,
} from '../../shared/webhook-subscription/webhook-subscription.decider';

/** A subscription as its record holds it now (after its creation). */
export type StoredSubscription = NonNullable<WebhookSubscriptionState>;

/** A subscription not deleted. */
export type LiveSubscription = StoredSubscription & {
  readonly status: Exclude<StoredSubscription['status'], 'deleted'>;
};

function isLive(state: StoredSubscription | null): state is LiveSubscription {
  return state !== null && state.status !== 'deleted';
}

/** Whether a subscription delivers, and whose it is: what both webhook queries answer of it. */
export function standingOf<State extends StoredSubscription>(
  state: State,
): Pick<State, 'status' | 'statusReason' | 'createdBy' | 'ownerUserId'> {
  return {
    status: state.status,
    statusReason: state.statusReason,
    createdBy: state.createdBy,
    ownerUserId: state.ownerUserId,
  };
}

/**
 * The webhook subscriptions' records, for the queries: read in their current shape (a record
 * written before a shape change is folded again from its stream, as the event store loads it), and
 * never their sealed secrets.
 */
export class SubscriptionRecords {
  constructor(
    private readonly store: Pick<EventStore, 'loadRecord'>,
    private readonly redis: RedisClient,
    private readonly keys: Keys,
  ) {}

  /** One subscription; null when it was never created. A deleted one is answered too. */
  async get(id: string): Promise<StoredSubscription | null> {
    const { state } = await this.store.loadRecord(
      webhookSubscriptionDecider.aggregateType,
      id.toLowerCase(),
      webhookSubscriptionDecider.initialState,
    );
    return state;
  }

  /** Every subscription not deleted, with its id (in no order). */
  async allLive(): Promise<{ readonly id: string; readonly state: LiveSubscription }[]> {
    const ids = await this.redis.smembers(this.keys.webhookSubscriptions());
    const states = await Promise.all(ids.map((id) => this.get(id)));
    return ids.flatMap((id, i) => {
      const state = states[i];
      return state && isLive(state) ? [{ id, state }] : [];
    });
  }
}
