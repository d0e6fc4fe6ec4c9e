import Joi from 'joi';

import { PUBLIC_EVENT_TYPES } from '../public-events/event-catalogue';
import { guid, text } from '../validation';
import type { WebhookCommandType } from './webhook-subscription.commands';

/**
 * One entry per webhook command of POST /api/command (the third command family): the schema of
 * its `command` object. Each acts on the subscription named by `aggregateRootId` (a GUID the
 * caller chooses when creating it) and is run by webhook-commands.ts, for Admins only.
 */
export interface WebhookCommandDefinition {
  readonly commandType: WebhookCommandType;
  readonly description: string;
  readonly schema: Joi.ObjectSchema;
}

/** `eventTypes: ["*"]` asks for every type of the catalogue (those added later too). */
export const ALL_EVENT_TYPES = '*';

/** The most event types one subscription lists (the catalogue is smaller; "*" asks for all). */
const MAX_EVENT_TYPES = 100;

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
    description: "Changes a subscription's url, eventTypes or description (the secret stays).",
    schema: Joi.object({ aggregateRootId, url, eventTypes, description }),
  },
  {
    commandType: 'RotateWebhookSecret',
    description:
      'Makes a new signing secret, answered once as `signingSecret`; the old one keeps signing beside it for 24 h (two v1 signatures).',
    schema: Joi.object({ aggregateRootId }),
  },
  {
    commandType: 'DisableWebhookSubscription',
    description: 'Stops deliveries; events appended meanwhile are delivered once it is enabled again.',
    schema: Joi.object({ aggregateRootId, reason: text({ max: 1000 }).allow(null, '').default(null) }),
  },
  {
    commandType: 'EnableWebhookSubscription',
    description: 'Resumes deliveries where they stopped.',
    schema: Joi.object({ aggregateRootId }),
  },
  {
    commandType: 'DeleteWebhookSubscription',
    description: 'Ends the subscription for good: nothing more is delivered.',
    schema: Joi.object({ aggregateRootId }),
  },
  {
    commandType: 'ReplayWebhookEvents',
    description:
      'Delivers again every subscribed event appended to the log from `from` on (each with its original webhook-id).',
    schema: Joi.object({
      aggregateRootId,
      from: text().isoDate().required().description('ISO 8601 instant, not in the future.'),
    }),
  },
];
