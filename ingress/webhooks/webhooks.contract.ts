import {
  catalogueEntry,
  PUBLIC_EVENT_TYPES,
  publicEventSchema,
  type ServiceEventType,
} from '../../shared/public-events/event-catalogue';
import type { ContractKit, Operation } from '../openapi/contract-kit';

const HEADERS = [
  {
    name: 'webhook-id',
    description:
      "The event's id: the same on every attempt and on a replay, so a receiver can drop duplicates.",
    schema: { type: 'string', format: 'uuid' },
  },
  {
    name: 'webhook-timestamp',
    description: 'Unix seconds when this attempt was signed (fresh on every attempt).',
    schema: { type: 'string', pattern: '^[0-9]+$' },
  },
  {
    name: 'webhook-signature',
    description:
      'Space-separated `v1,<base64 HMAC-SHA256 of "id.timestamp.body">`, one per secret that signs: two for 24 h after RotateWebhookSecret.',
    schema: { type: 'string' },
  },
] as const;

function operation(kit: ContractKit, type: ServiceEventType): Operation {
  return {
    summary: type,
    description: `${catalogueEntry(type).description} Sent to subscriptions whose eventTypes list it (or "*"), per Standard Webhooks.`,
    operationId: `webhook${type}`,
    tags: ['Webhooks'],
    parameters: HEADERS.map((header) => ({ ...header, in: 'header', required: true })),
    requestBody: {
      required: true,
      content: {
        'application/json': {
          schema: kit.component(`${type}Webhook`, publicEventSchema(type)),
        },
      },
    },
    responses: {
      '2XX': {
        description: 'Received: any 2xx ends the delivery. Anything else, or no answer in 10 s, is retried.',
      },
    },
  } as unknown as Operation;
}

/**
 * The public event catalogue as OpenAPI 3.1's top-level `webhooks`: one entry per event type a
 * subscription may ask for, its payload's JSON Schema made from the same catalogue the commands
 * validate eventTypes against and the workers shape payloads with.
 */
export function webhooksContract(kit: ContractKit): Record<string, { post: Operation }> {
  return Object.fromEntries(PUBLIC_EVENT_TYPES.map((type) => [type, { post: operation(kit, type) }]));
}
