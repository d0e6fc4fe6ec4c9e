/**
 * Commands of the webhook subscription aggregate (one per subscription, id = its aggregateRootId).
 * The signing secret is never part of a command or an event: the use case makes it and keeps it
 * sealed in the aggregate's record (shared/webhooks/webhook-secrets.ts).
 */
export interface CreateWebhookSubscription {
  readonly type: 'CreateWebhookSubscription';
  readonly data: {
    readonly url: string;
    readonly eventTypes: readonly string[];
    readonly description: string | null;
  };
}

export interface UpdateWebhookSubscription {
  readonly type: 'UpdateWebhookSubscription';
  readonly data: {
    readonly url?: string;
    readonly eventTypes?: readonly string[];
    readonly description?: string | null;
  };
}

export interface RotateWebhookSecret {
  readonly type: 'RotateWebhookSecret';
  /** Until when the secret being replaced still signs beside the new one (ISO 8601). */
  readonly data: { readonly previousSecretUntil: string };
}

export interface DisableWebhookSubscription {
  readonly type: 'DisableWebhookSubscription';
  /** `automatic`: the delivery engine disables an endpoint whose every delivery failed too long. */
  readonly data: { readonly reason: string | null; readonly automatic: boolean };
}

export interface EnableWebhookSubscription {
  readonly type: 'EnableWebhookSubscription';
  readonly data: Record<string, never>;
}

export interface DeleteWebhookSubscription {
  readonly type: 'DeleteWebhookSubscription';
  readonly data: Record<string, never>;
}

export interface ReplayWebhookEvents {
  readonly type: 'ReplayWebhookEvents';
  /** ISO 8601: events appended to the log from then on are delivered again. */
  readonly data: { readonly from: string; readonly replayId: string };
}

/**
 * The service's own command, never a client's (no definition of POST /api/command names it): the
 * subscription's owner no longer holds the authority it was created (or enabled) under: the account
 * was disabled, erased, or lost Admin. Deliveries stop until an Admin enables the subscription again
 * and becomes its owner; its cursor stays where it was, so nothing appended meanwhile is lost.
 */
export interface SuspendWebhookSubscription {
  readonly type: 'SuspendWebhookSubscription';
  /** `ownerUserId`: the owner the suspension is for (a subscription taken over since is left alone). */
  readonly data: { readonly ownerUserId: string; readonly reason: string };
}

export type WebhookSubscriptionCommand =
  | CreateWebhookSubscription
  | UpdateWebhookSubscription
  | RotateWebhookSecret
  | DisableWebhookSubscription
  | EnableWebhookSubscription
  | DeleteWebhookSubscription
  | ReplayWebhookEvents;

/** Every command the subscription decider takes: the clients' and the service's own. */
export type AnyWebhookSubscriptionCommand = WebhookSubscriptionCommand | SuspendWebhookSubscription;

export type WebhookCommandType = WebhookSubscriptionCommand['type'];
