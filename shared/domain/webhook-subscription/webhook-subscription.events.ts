import type { DomainEvent } from '../decider';

interface ByActor {
  readonly at: string;
  readonly byUserId: string;
}

/** Never carries the signing secret (events reach the global log and every consumer of it). */
export type WebhookSubscriptionCreatedEvent = DomainEvent<
  'WebhookSubscriptionCreatedEvent',
  ByActor & {
    readonly url: string;
    readonly eventTypes: readonly string[];
    readonly description: string | null;
  }
>;

export type WebhookSubscriptionUpdatedEvent = DomainEvent<
  'WebhookSubscriptionUpdatedEvent',
  ByActor & {
    readonly url: string;
    readonly eventTypes: readonly string[];
    readonly description: string | null;
  }
>;

export type WebhookSecretRotatedEvent = DomainEvent<
  'WebhookSecretRotatedEvent',
  ByActor & { readonly previousSecretUntil: string }
>;

export type WebhookSubscriptionDisabledEvent = DomainEvent<
  'WebhookSubscriptionDisabledEvent',
  ByActor & { readonly reason: string | null; readonly automatic: boolean }
>;

export type WebhookSubscriptionEnabledEvent = DomainEvent<'WebhookSubscriptionEnabledEvent', ByActor>;

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
  | WebhookSubscriptionDeletedEvent
  | WebhookReplayRequestedEvent;
