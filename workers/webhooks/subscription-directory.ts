import type { EventStore } from '../../shared/event-store/event-store';
import type { Logger } from '../../shared/logger';
import type { RedisClient } from '../../shared/redis/connections';
import type { Keys } from '../../shared/redis/keys';
import { SECRETS_FIELD, type WebhookSecrets } from '../../shared/webhook-subscription/webhook-secrets';
import { ALL_EVENT_TYPES } from '../../shared/webhook-subscription/webhook-subscription.commands';
import {
  webhookSubscriptionDecider,
  type WebhookSubscriptionState,
} from '../../shared/webhook-subscription/webhook-subscription.decider';

/** A subscription as the dispatcher delivers to it: its target, what it wants, how to sign. */
export interface ActiveSubscription {
  readonly id: string;
  /** The record's version this was read at: a newer one (a rotation, an update) is read again. */
  readonly version: number;
  readonly url: string;
  /** Enabled by its status; it delivers only while its owner also qualifies (owner-authority.ts). */
  readonly enabled: boolean;
  /** Whose authority it delivers under, and since when (ISO 8601). */
  readonly ownerUserId: string;
  readonly ownerSince: string;
  /** The owner's account version at its take-over (ADR 0038); null for one recorded before. */
  readonly ownerSinceVersion: number | null;
  /** null: every type of the catalogue ("*"). */
  readonly eventTypes: ReadonlySet<string> | null;
  /** When it was created (unix ms): delivery starts with the events appended from then on. */
  readonly createdAtMs: number;
  /** The secrets that sign now: the current one, and the rotated-out one until its time. */
  readonly secrets: readonly string[];
  readonly replay: { readonly replayId: string; readonly fromMs: number } | null;
}

type Existing = NonNullable<WebhookSubscriptionState>;

/** Where subscriptions are read from: the set the commands keep, and the records in their current shape. */
export interface SubscriptionSource {
  readonly redis: RedisClient;
  readonly keys: Keys;
  readonly store: Pick<EventStore, 'loadRecordWith'>;
}

/**
 * Reads every subscription's record (state and sealed secrets) from the set the commands keep.
 * Deleted ones, and ids whose create never landed, are left out; a record whose secrets do not
 * open (the data key changed) is left out with a warning, rather than signed wrongly.
 */
export async function loadSubscriptions(
  source: SubscriptionSource,
  secrets: WebhookSecrets,
  logger: Logger,
  now: number,
): Promise<ActiveSubscription[]> {
  const ids = await source.redis.smembers(source.keys.webhookSubscriptions());
  const loaded = await Promise.all(ids.map((id) => loadSubscription(source, secrets, logger, id, now)));
  return loaded.filter((subscription): subscription is ActiveSubscription => subscription !== null);
}

/** One subscription as loadSubscriptions reads it; null when deleted, never created, or unreadable. */
export async function loadSubscription(
  source: SubscriptionSource,
  secrets: WebhookSecrets,
  logger: Logger,
  id: string,
  now: number,
): Promise<ActiveSubscription | null> {
  // In its current shape: a record written before the owner was kept is folded again from its stream.
  const record = await source.store.loadRecordWith<WebhookSubscriptionState>(
    webhookSubscriptionDecider.aggregateType,
    id,
    webhookSubscriptionDecider.initialState,
    SECRETS_FIELD,
  );
  const subscription: Existing | null = record.state;
  const sealed = record.attachment;
  if (record.version === 0 || !subscription || !sealed || subscription.status === 'deleted') return null;
  try {
    const opened = secrets.open(id, sealed);
    const previousSigns =
      opened.previous !== null &&
      subscription.previousSecretUntil !== null &&
      Date.parse(subscription.previousSecretUntil) > now;
    return {
      id,
      version: record.version,
      url: subscription.url,
      enabled: subscription.status === 'enabled',
      ownerUserId: subscription.ownerUserId,
      ownerSince: subscription.ownerSince,
      ownerSinceVersion: subscription.ownerSinceVersion,
      eventTypes: subscription.eventTypes.includes(ALL_EVENT_TYPES) ? null : new Set(subscription.eventTypes),
      createdAtMs: Date.parse(subscription.createdAt),
      secrets: previousSigns && opened.previous ? [opened.current, opened.previous] : [opened.current],
      replay: subscription.replay
        ? { replayId: subscription.replay.replayId, fromMs: Date.parse(subscription.replay.from) }
        : null,
    };
  } catch (error) {
    logger.warn('webhook subscription skipped: its signing secret does not open', {
      subscriptionId: id,
      error: error instanceof Error ? error.message : String(error),
    });
    return null;
  }
}
