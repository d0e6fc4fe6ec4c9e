import Joi from 'joi';

import { PUBLIC_EVENT_TYPES } from '../public-events/event-catalogue';
import type { Role } from '../roles';
import { guid, text } from '../validation';

/**
 * Commands of the webhook subscription aggregate (one per subscription, id = its aggregateRootId).
 * The signing secret is never part of a command or an event: the use case makes it and keeps it
 * sealed in the aggregate's record (shared/webhook-subscription/webhook-secrets.ts).
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

/**
 * One entry per webhook command of POST /api/command (the third command family): the schema of
 * its `command` object. Each acts on the subscription named by `aggregateRootId` (a GUID the
 * caller chooses when creating it) and is run by webhook-commands.ts, for Admins only.
 */
export interface WebhookCommandDefinition {
  readonly commandType: WebhookCommandType;
  readonly description: string;
  /** Who may send it (none: any authenticated account); the aggregate's rules decide the rest. */
  readonly roles: readonly Role[];
  readonly schema: Joi.ObjectSchema;
}

/** `eventTypes: ["*"]` asks for every type of the catalogue (those added later too). */
export const ALL_EVENT_TYPES = '*';

/** The most event types one subscription lists (the catalogue is smaller; "*" asks for all). */
const MAX_EVENT_TYPES = 100;

/** Webhook commands are for Admins only: a subscription sees every event of its types. */
export const WEBHOOK_COMMAND_ROLES: readonly Role[] = ['Admin'];

const aggregateRootId = guid().required();
const url = text({ max: 2048 })
  .uri({ scheme: ['https', 'http'] })
  .description(
    'Where events are POSTed: https only (http, and private addresses, only with WEBHOOK_ALLOW_PRIVATE_TARGETS=true).',
  );
const eventTypes = Joi.array()
  .items(text().valid(ALL_EVENT_TYPES, ...PUBLIC_EVENT_TYPES))
  .min(1)
  .max(MAX_EVENT_TYPES)
  .unique()
  .description('Event types of the catalogue (the OpenAPI document\'s `webhooks`), or ["*"] for all.');
const description = text({ max: 500 }).allow(null, '');

export const WEBHOOK_COMMAND_DEFINITIONS: readonly WebhookCommandDefinition[] = [
  {
    commandType: 'CreateWebhookSubscription',
    roles: WEBHOOK_COMMAND_ROLES,
    description:
      'Subscribes a URL to events. The answer carries the signing secret (`signingSecret`) once: it is never shown again.',
    schema: Joi.object({
      aggregateRootId,
      url: url.required(),
      eventTypes: eventTypes.required(),
      description: description.default(null),
    }),
  },
  {
    commandType: 'UpdateWebhookSubscription',
    roles: WEBHOOK_COMMAND_ROLES,
    description: "Changes a subscription's url, eventTypes or description (the secret stays).",
    schema: Joi.object({ aggregateRootId, url, eventTypes, description }),
  },
  {
    commandType: 'RotateWebhookSecret',
    roles: WEBHOOK_COMMAND_ROLES,
    description:
      'Makes a new signing secret, answered once as `signingSecret`; the old one keeps signing beside it for 24 h (two v1 signatures).',
    schema: Joi.object({ aggregateRootId }),
  },
  {
    commandType: 'DisableWebhookSubscription',
    roles: WEBHOOK_COMMAND_ROLES,
    description: 'Stops deliveries; events appended meanwhile are delivered once it is enabled again.',
    schema: Joi.object({ aggregateRootId, reason: text({ max: 1000 }).allow(null, '').default(null) }),
  },
  {
    commandType: 'EnableWebhookSubscription',
    roles: WEBHOOK_COMMAND_ROLES,
    description: 'Resumes deliveries where they stopped.',
    schema: Joi.object({ aggregateRootId }),
  },
  {
    commandType: 'DeleteWebhookSubscription',
    roles: WEBHOOK_COMMAND_ROLES,
    description: 'Ends the subscription for good: nothing more is delivered.',
    schema: Joi.object({ aggregateRootId }),
  },
  {
    commandType: 'ReplayWebhookEvents',
    roles: WEBHOOK_COMMAND_ROLES,
    description:
      'Delivers again every subscribed event appended to the log from `from` on (each with its original webhook-id).',
    schema: Joi.object({
      aggregateRootId,
      from: text().isoDate().required().description('ISO 8601 instant, not in the future.'),
    }),
  },
];
