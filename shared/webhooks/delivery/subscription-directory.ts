import {
  webhookSubscriptionDecider,
  type WebhookSubscriptionState,
} from '../../domain/webhook-subscription/webhook-subscription.decider';
import type { Logger } from '../../logger';
import type { RedisClient } from '../../redis/connections';
import type { Keys } from '../../redis/keys';
import { ALL_EVENT_TYPES } from '../webhook-command-definitions';
import { SECRETS_FIELD, type WebhookSecrets } from '../webhook-secrets';

/** A subscription as the dispatcher delivers to it: its target, what it wants, how to sign. */
export interface ActiveSubscription {
  readonly id: string;
  /** The record's version this was read at: a newer one (a rotation, an update) is read again. */
  readonly version: number;
  readonly url: string;
  readonly enabled: boolean;
  /** null: every type of the catalogue ("*"). */
  readonly eventTypes: ReadonlySet<string> | null;
  /** When it was created (unix ms): delivery starts with the events appended from then on. */
  readonly createdAtMs: number;
  /** The secrets that sign now: the current one, and the rotated-out one until its time. */
  readonly secrets: readonly string[];
  readonly replay: { readonly replayId: string; readonly fromMs: number } | null;
}

type Existing = NonNullable<WebhookSubscriptionState>;

/**
 * Reads every subscription's record (state and sealed secrets) from the set the commands keep.
 * Deleted ones, and ids whose create never landed, are left out; a record whose secrets do not
 * open (the data key changed) is left out with a warning, rather than signed wrongly.
 */
export async function loadSubscriptions(
  redis: RedisClient,
  keys: Keys,
  secrets: WebhookSecrets,
  logger: Logger,
  now: number,
): Promise<ActiveSubscription[]> {
  const ids = await redis.smembers(keys.webhookSubscriptions());
  const loaded = await Promise.all(ids.map((id) => loadSubscription(redis, keys, secrets, logger, id, now)));
  return loaded.filter((subscription): subscription is ActiveSubscription => subscription !== null);
}

/** One subscription as loadSubscriptions reads it; null when deleted, never created, or unreadable. */
export async function loadSubscription(
  redis: RedisClient,
  keys: Keys,
  secrets: WebhookSecrets,
  logger: Logger,
  id: string,
  now: number,
): Promise<ActiveSubscription | null> {
  const [version, state, sealed] = await redis.hmget(
    keys.aggregateRecord(webhookSubscriptionDecider.aggregateType, id),
    'version',
    'state',
    SECRETS_FIELD,
  );
  if (!version || !state || !sealed) return null;
  const subscription = JSON.parse(state) as Existing | null;
  if (!subscription || subscription.status === 'deleted') return null;
  try {
    const opened = secrets.open(id, sealed);
    const previousSigns =
      opened.previous !== null &&
      subscription.previousSecretUntil !== null &&
      Date.parse(subscription.previousSecretUntil) > now;
    return {
      id,
      version: Number(version),
      url: subscription.url,
      enabled: subscription.status === 'enabled',
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
