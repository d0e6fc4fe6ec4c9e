import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';

import { repositoryDocument } from '../../ingress/contract';
import type { EventEnvelope } from '../../shared/event-store/envelope';
import { isPublicEventType, toPublicEvent } from '../../shared/event-stream/public-events';
import { payloadOf, payloadSchema, WEBHOOK_CATALOGUE } from '../../shared/webhooks/webhook-catalogue';
import { WEBHOOK_COMMAND_DEFINITIONS } from '../../shared/webhooks/webhook-command-definitions';

const envelope = (eventType: string, aggregateType: string, data: object): EventEnvelope => ({
  eventId: '3f1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d',
  eventType,
  aggregateType,
  aggregateId: '0b5c8f5e-1f4e-4a4e-9b0e-2f6d7c8b9a01',
  version: 3,
  occurredAt: '2026-11-24T08:00:00.000Z',
  data,
  metadata: { actorUserId: 'x', requestId: null, correlationId: null },
});

describe('The webhook event catalogue', () => {
  const ajv = new Ajv2020({ strict: true, strictRequired: false, allErrors: true });
  addFormats(ajv);

  it('When the OpenAPI document is generated, then its webhooks hold every catalogue type with its payload schema', () => {
    const document = repositoryDocument();
    expect(Object.keys(document.webhooks)).toEqual(WEBHOOK_CATALOGUE.map((entry) => entry.eventType));
    for (const entry of WEBHOOK_CATALOGUE) {
      expect(document.components.schemas[`${entry.eventType}Webhook`]).toMatchObject(payloadSchema(entry));
    }
  });

  it('When a create names its event types, then the catalogue (or "*") is what it may name', () => {
    const create = WEBHOOK_COMMAND_DEFINITIONS.find((d) => d.commandType === 'CreateWebhookSubscription');
    const items = create?.schema.describe().keys?.eventTypes?.items?.[0] as { allow?: string[] };
    expect(items.allow).toEqual(['*', ...WEBHOOK_CATALOGUE.map((entry) => entry.eventType)]);
  });

  it('When a user event carries a security stamp, then the payload leaves it out and matches its schema', () => {
    const event = envelope('UserPasswordChangedEvent', 'user', {
      at: '2026-11-24T08:00:00.000Z',
      byUserId: '0b5c8f5e-1f4e-4a4e-9b0e-2f6d7c8b9a02',
      securityStamp: 'a-stamp-that-must-not-leave',
      passwordHash: '$argon2id$never',
    });
    const payload = payloadOf(event);
    expect(JSON.stringify(payload)).not.toMatch(/securityStamp|must-not-leave|argon2|passwordHash/);
    const entry = WEBHOOK_CATALOGUE.find((e) => e.eventType === 'UserPasswordChangedEvent');
    expect(ajv.validate(payloadSchema(entry!), payload)).toBe(true);
  });

  it('When an event is of another aggregate type or not in the catalogue, then it has no payload', () => {
    expect(payloadOf(envelope('FantasyTeamLinkedEvent', 'user', {}))).toBeUndefined();
    expect(
      payloadOf(envelope('WebhookSubscriptionCreatedEvent', 'webhook-subscription', {})),
    ).toBeUndefined();
  });

  it('When the event stream and webhooks both send an event, then webhooks send no type and no field the stream withholds', () => {
    for (const entry of WEBHOOK_CATALOGUE) expect(isPublicEventType(entry.eventType)).toBe(true);
    const event = envelope('UserCreatedEvent', 'user', {
      userId: '0b5c8f5e-1f4e-4a4e-9b0e-2f6d7c8b9a01',
      email: null,
      userName: null,
      userType: 'Human',
      roles: ['Member'],
      firstName: null,
      lastName: null,
      emailVerified: false,
      createdAt: '2026-11-24T08:00:00.000Z',
      securityStamp: 'withheld',
      personalData: 'sealed',
    });
    expect(payloadOf(event)).toEqual(toPublicEvent(event));
  });

  it('When a team event is shaped, then data holds its fields in camelCase plus aggregateId and version', () => {
    const payload = payloadOf(
      envelope('FantasyTeamLinkedEvent', 'fantasy-team', {
        fantasyTeamExternalId: 7,
        fantasyUserId: 9,
        linkedAt: '2026-11-24T08:00:00.000Z',
      }),
    );
    expect(payload).toEqual({
      type: 'FantasyTeamLinkedEvent',
      timestamp: '2026-11-24T08:00:00.000Z',
      data: {
        fantasyTeamExternalId: 7,
        fantasyUserId: 9,
        linkedAt: '2026-11-24T08:00:00.000Z',
        aggregateId: '0b5c8f5e-1f4e-4a4e-9b0e-2f6d7c8b9a01',
        version: 3,
      },
    });
    const entry = WEBHOOK_CATALOGUE.find((e) => e.eventType === 'FantasyTeamLinkedEvent');
    expect(ajv.validate(payloadSchema(entry!), payload)).toBe(true);
  });
});
