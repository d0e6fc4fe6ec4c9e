import type { DomainEvent } from '../event-store/decider';

interface ByActor {
  readonly at: string;
  readonly byUserId: string;
}

/**
 * An event by which `byUserId` takes the subscription over. `byUserVersion`: the version of that
 * account's stream when it did (ADR 0038); absent in events written before it was recorded.
 */
interface ByOwner extends ByActor {
  readonly byUserVersion?: number;
}

/** Never carries the signing secret (events reach the global log and every consumer of it). */
export type WebhookSubscriptionCreatedEvent = DomainEvent<
  'WebhookSubscriptionCreatedEvent',
  ByOwner & {
    readonly url: string;
    readonly eventTypes: readonly string[];
    readonly description: string | null;
  }
>;

export type WebhookSubscriptionUpdatedEvent = DomainEvent<
  'WebhookSubscriptionUpdatedEvent',
  ByOwner & {
    readonly url: string;
    readonly eventTypes: readonly string[];
    readonly description: string | null;
  }
>;

export type WebhookSecretRotatedEvent = DomainEvent<
  'WebhookSecretRotatedEvent',
  ByOwner & { readonly previousSecretUntil: string }
>;

export type WebhookSubscriptionDisabledEvent = DomainEvent<
  'WebhookSubscriptionDisabledEvent',
  ByActor & { readonly reason: string | null; readonly automatic: boolean }
>;

/** `byUserId`, the enabling Admin, becomes the subscription's owner. */
export type WebhookSubscriptionEnabledEvent = DomainEvent<'WebhookSubscriptionEnabledEvent', ByOwner>;

/**
 * The service stopped deliveries because the owner lost its authority (`byUserId` is the service's
 * id); `reason` names the account change, e.g. `Owner <user id> was disabled`.
 */
export type WebhookSubscriptionSuspendedEvent = DomainEvent<
  'WebhookSubscriptionSuspendedEvent',
  ByActor & { readonly ownerUserId: string; readonly reason: string }
>;

export type WebhookSubscriptionDeletedEvent = DomainEvent<'WebhookSubscriptionDeletedEvent', ByActor>;

export type WebhookReplayRequestedEvent = DomainEvent<
  'WebhookReplayRequestedEvent',
  ByActor & { readonly from: string; readonly replayId: string }
>;

export type WebhookSubscriptionEvent =
  | WebhookSubscriptionCreatedEvent
  | WebhookSubscriptionUpdatedEvent
  | WebhookSecretRotatedEvent
  | WebhookSubscriptionDisabledEvent
  | WebhookSubscriptionEnabledEvent
  | WebhookSubscriptionSuspendedEvent
  | WebhookSubscriptionDeletedEvent
  | WebhookReplayRequestedEvent;
