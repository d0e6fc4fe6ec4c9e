import Joi from 'joi';

import { guid, text } from '../../../shared/validation';
import {
  DELIVERY_STATUSES,
  type DeliveryLog,
  type DeliveryStatus,
} from '../../../shared/webhook-subscription/delivery-log';
import { WEBHOOK_COMMAND_ROLES } from '../../../shared/webhook-subscription/webhook-subscription.commands';
import { closedObject, GUID_SCHEMA, type JsonSchema, TIMESTAMP_SCHEMA } from '../../http/json-schema';
import { listingSchema } from '../listing';
import { defineQuery, querySchema, type RegisteredQuery } from '../query-definition';
import { standingOf, type SubscriptionRecords } from '../webhook-subscription-records';

export const MAX_WEBHOOK_DELIVERIES_TAKE = 1000;

interface GetWebhookDeliveriesBody {
  readonly query: { readonly subscriptionId: string; readonly status?: DeliveryStatus };
  readonly skip: number;
  readonly take: number;
}

const ATTEMPT_SCHEMA: JsonSchema = closedObject(
  {
    eventId: GUID_SCHEMA,
    eventType: { type: 'string' },
    attempt: { type: 'integer', minimum: 1, description: '1 for the first attempt at the event.' },
    at: TIMESTAMP_SCHEMA,
    status: {
      enum: [...DELIVERY_STATUSES],
      description: 'delivered: 2xx; retrying: failed, tried again later; failed: the last attempt failed.',
    },
    httpStatus: { type: ['integer', 'null'], description: "The receiver's status, or null when none came." },
    error: {
      type: ['string', 'null'],
      description:
        'What failed, as a class (`connect timeout`, `connection refused`, `target refused: private address`, `TLS error`...), never an address; null when an answer came (see httpStatus).',
    },
    durationMs: { type: 'number', minimum: 0 },
  },
  [],
  { title: 'WebhookDeliveryAttempt' },
);

/** Whose the subscription is and whether it delivers, beside its attempts. */
const SUBSCRIPTION_SCHEMA: JsonSchema = {
  ...closedObject(
    {
      status: { enum: ['enabled', 'disabled', 'suspended', 'deleted'] },
      statusReason: {
        type: ['string', 'null'],
        description: "Why it is disabled or suspended (the owner's change); null otherwise.",
      },
      createdBy: { ...GUID_SCHEMA, description: 'The user id of the Admin who created it.' },
      ownerUserId: {
        ...GUID_SCHEMA,
        description:
          'The user id of the Admin it delivers under: its creator, or the last Admin who enabled it, changed its url or eventTypes, or rotated its secret.',
      },
    },
    [],
    { title: 'WebhookSubscriptionOwnership' },
  ),
  type: ['object', 'null'],
  description: 'The subscription as it stands now; null when there is none.',
};

/**
 * `GetWebhookDeliveries`: one subscription's delivery attempts of the last WEBHOOK_DELIVERY_LOG_MS
 * (7 days), newest first, paged, optionally of one status; to an Admin, with who created and who
 * owns the subscription. An unknown subscription has none (and `subscription: null`).
 */
export function getWebhookDeliveriesQuery(
  deliveryLog: DeliveryLog,
  records: SubscriptionRecords,
): RegisteredQuery {
  return defineQuery<GetWebhookDeliveriesBody>({
    queryType: 'GetWebhookDeliveries',
    description:
      "A webhook subscription's delivery attempts (7 days), newest first, paged (skip, take <= 1000), filtered by status.",
    schemes: ['Basic', 'Bearer'],
    roles: WEBHOOK_COMMAND_ROLES,
    schema: querySchema<GetWebhookDeliveriesBody>(
      'GetWebhookDeliveries',
      {
        subscriptionId: guid().required(),
        status: text().valid(...DELIVERY_STATUSES),
      },
      {
        skip: Joi.number().strict().integer().min(0).max(Number.MAX_SAFE_INTEGER).default(0),
        take: Joi.number().strict().integer().min(1).max(MAX_WEBHOOK_DELIVERIES_TAKE).default(100),
      },
    ),
    response: listingSchema('GetWebhookDeliveriesResult', ATTEMPT_SCHEMA, {
      subscription: SUBSCRIPTION_SCHEMA,
    }),
    async handle({ body }) {
      const { subscriptionId, status } = body.query;
      const [{ totalCount, items }, state] = await Promise.all([
        deliveryLog.read(subscriptionId, body.skip, body.take, status),
        records.get(subscriptionId),
      ]);
      const subscription = state && standingOf(state);
      return { body: { results: items, totalCount, subscription } };
    },
  });
}
