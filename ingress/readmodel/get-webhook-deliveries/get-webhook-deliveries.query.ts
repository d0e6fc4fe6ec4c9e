import Joi from 'joi';

import { guid, text } from '../../../shared/validation';
import {
  DELIVERY_STATUSES,
  type DeliveryLog,
  type DeliveryStatus,
} from '../../../shared/webhooks/delivery-log';
import { WEBHOOK_COMMAND_ROLES } from '../../../shared/webhooks/webhook-commands';
import { closedObject, GUID_SCHEMA, type JsonSchema, TIMESTAMP_SCHEMA } from '../../http/json-schema';
import { listingSchema } from '../listing';
import { defineQuery, querySchema, type RegisteredQuery } from '../query-definition';

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
    error: { type: ['string', 'null'], description: 'The network error or refusal, or null.' },
    durationMs: { type: 'number', minimum: 0 },
  },
  [],
  { title: 'WebhookDeliveryAttempt' },
);

/**
 * `GetWebhookDeliveries`: one subscription's delivery attempts of the last WEBHOOK_DELIVERY_LOG_MS
 * (7 days), newest first, paged, optionally of one status; to an Admin. An unknown subscription
 * has none.
 */
export function getWebhookDeliveriesQuery(deliveryLog: DeliveryLog): RegisteredQuery {
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
    response: listingSchema('GetWebhookDeliveriesResult', ATTEMPT_SCHEMA),
    async handle({ body }) {
      const { subscriptionId, status } = body.query;
      const { totalCount, items } = await deliveryLog.read(subscriptionId, body.skip, body.take, status);
      return { body: { results: items, totalCount } };
    },
  });
}
