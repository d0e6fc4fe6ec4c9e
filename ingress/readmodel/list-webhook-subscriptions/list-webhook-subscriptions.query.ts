import Joi from 'joi';

import { WEBHOOK_COMMAND_ROLES } from '../../../shared/webhook-subscription/webhook-subscription.commands';
import { closedObject, GUID_SCHEMA, type JsonSchema, TIMESTAMP_SCHEMA } from '../../http/json-schema';
import { listingSchema } from '../listing';
import { defineQuery, querySchema, type RegisteredQuery } from '../query-definition';
import { standingOf, type SubscriptionRecords } from '../webhook-subscription-records';

/** The largest page a caller may ask for. */
export const MAX_WEBHOOK_SUBSCRIPTIONS_TAKE = 1000;

interface ListWebhookSubscriptionsBody {
  readonly query: Record<string, never>;
  readonly skip: number;
  readonly take: number;
}

/** One subscription as listed: never its secret. */
export interface WebhookSubscriptionItem {
  readonly id: string;
  readonly url: string;
  readonly eventTypes: readonly string[];
  readonly description: string | null;
  readonly status: 'enabled' | 'disabled' | 'suspended';
  /** Why it is disabled or suspended; null when enabled. */
  readonly statusReason: string | null;
  /** The Admin who created it. */
  readonly createdBy: string;
  /**
   * Whose authority it delivers under: its creator, or the last Admin who enabled it, changed its
   * url or eventTypes, or rotated its secret.
   */
  readonly ownerUserId: string;
  readonly createdAt: string;
  readonly updatedAt: string;
  /** While a rotated-out secret still signs beside the new one: until when. */
  readonly previousSecretUntil: string | null;
}

const ITEM_SCHEMA: JsonSchema = closedObject(
  {
    id: GUID_SCHEMA,
    url: { type: 'string', format: 'uri' },
    eventTypes: { type: 'array', items: { type: 'string' } },
    description: { type: ['string', 'null'] },
    status: {
      enum: ['enabled', 'disabled', 'suspended'],
      description:
        'suspended: stopped by the service because its owner was disabled, erased or lost Admin; an Admin who enables it becomes its owner. Events appended meanwhile are delivered then.',
    },
    statusReason: {
      type: ['string', 'null'],
      description:
        "Why it is disabled (the Admin's reason) or suspended (the owner's change); null when enabled.",
    },
    createdBy: { ...GUID_SCHEMA, description: 'The user id of the Admin who created it.' },
    ownerUserId: {
      ...GUID_SCHEMA,
      description:
        'The user id of the Admin it delivers under: its creator, or the last Admin who enabled it, changed its url or eventTypes, or rotated its secret. It stops delivering when that account is disabled, erased or loses Admin.',
    },
    createdAt: TIMESTAMP_SCHEMA,
    updatedAt: TIMESTAMP_SCHEMA,
    previousSecretUntil: { ...TIMESTAMP_SCHEMA, type: ['string', 'null'] },
  },
  [],
  { title: 'WebhookSubscription' },
);

/**
 * `ListWebhookSubscriptions`: every subscription not deleted, oldest first, a page at a time, to
 * an Admin. Read from the subscriptions' records (current, not a projection); their sealed
 * secrets are never read.
 */
export function listWebhookSubscriptionsQuery(records: SubscriptionRecords): RegisteredQuery {
  return defineQuery<ListWebhookSubscriptionsBody>({
    queryType: 'ListWebhookSubscriptions',
    description: 'Webhook subscriptions (never their secrets), oldest first, paged (skip, take <= 1000).',
    schemes: ['Basic', 'Bearer'],
    roles: WEBHOOK_COMMAND_ROLES,
    schema: querySchema<ListWebhookSubscriptionsBody>(
      'ListWebhookSubscriptions',
      {},
      {
        skip: Joi.number().strict().integer().min(0).max(Number.MAX_SAFE_INTEGER).default(0),
        take: Joi.number().strict().integer().min(1).max(MAX_WEBHOOK_SUBSCRIPTIONS_TAKE).default(100),
      },
    ),
    response: listingSchema('ListWebhookSubscriptionsResult', ITEM_SCHEMA),
    async handle({ body }) {
      const items: WebhookSubscriptionItem[] = (await records.allLive())
        .map(({ id, state }) => ({
          id,
          url: state.url,
          eventTypes: state.eventTypes,
          description: state.description,
          ...standingOf(state),
          createdAt: state.createdAt,
          updatedAt: state.updatedAt,
          previousSecretUntil: state.previousSecretUntil,
        }))
        .sort((a, b) => a.createdAt.localeCompare(b.createdAt) || a.id.localeCompare(b.id));
      return {
        body: { results: items.slice(body.skip, body.skip + body.take), totalCount: items.length },
      };
    },
  });
}
