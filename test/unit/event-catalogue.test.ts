import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';

import { repositoryDocument } from '../../ingress/contract';
import { SEALED_PERSONAL_FIELDS } from '../../shared/accounts/personal-data';
import type { EventEnvelope } from '../../shared/event-store/envelope';
import {
  catalogueEntry,
  isPublicEventType,
  PUBLIC_AGGREGATE_TYPES,
  PUBLIC_EVENT_TYPES,
  publicEventSchema,
  toPublicEvent,
} from '../../shared/public-events/event-catalogue';
import {
  ALL_EVENT_TYPES,
  WEBHOOK_COMMAND_DEFINITIONS,
} from '../../shared/webhook-subscription/webhook-subscription.commands';

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

/** Fields no public event may carry, whatever its type (a stamp, the sealed personal data, secrets). */
const NEVER_PUBLIC = ['securityStamp', 'personalData', 'password', 'passwordHash', 'hash', 'secret'];

describe('The public event catalogue (the event stream and webhooks)', () => {
  const ajv = new Ajv2020({ strict: true, strictRequired: false, allErrors: true });
  addFormats(ajv);

  it('When the OpenAPI document is generated, then its webhooks hold every public type with its schema', () => {
    const document = repositoryDocument();
    expect(Object.keys(document.webhooks)).toEqual(PUBLIC_EVENT_TYPES);
    for (const type of PUBLIC_EVENT_TYPES) {
      expect(document.components.schemas[`${type}Webhook`]).toMatchObject(publicEventSchema(type));
    }
  });

  it('When a subscription names its event types, then the catalogue (or "*") is what it may name', () => {
    const create = WEBHOOK_COMMAND_DEFINITIONS.find((d) => d.commandType === 'CreateWebhookSubscription');
    const items = create?.schema.describe().keys?.eventTypes?.items?.[0] as { allow?: string[] };
    expect(items.allow).toEqual([ALL_EVENT_TYPES, ...PUBLIC_EVENT_TYPES]);
  });

  it('When the catalogue is read, then no entry lists a stamp, sealed data, password, hash or secret', () => {
    for (const type of PUBLIC_EVENT_TYPES) {
      expect(Object.keys(catalogueEntry(type).fields).filter((f) => NEVER_PUBLIC.includes(f))).toEqual([]);
    }
    expect(PUBLIC_AGGREGATE_TYPES).not.toContain('webhook-subscription');
  });

  it('When a user event carries a security stamp, a hash or sealed data, then its public form leaves them out and matches its schema', () => {
    const event = envelope('UserPasswordChangedEvent', 'user', {
      at: '2026-11-24T08:00:00.000Z',
      byUserId: '0b5c8f5e-1f4e-4a4e-9b0e-2f6d7c8b9a02',
      securityStamp: 'a-stamp-that-must-not-leave',
      passwordHash: '$argon2id$never',
      personalData: 'pd1.sealed',
    });
    const payload = toPublicEvent(event);
    expect(JSON.stringify(payload)).not.toMatch(/securityStamp|must-not-leave|argon2|passwordHash|pd1/);
    expect(ajv.validate(publicEventSchema('UserPasswordChangedEvent'), payload)).toBe(true);
  });

  it('When an event is of another aggregate type or not public, then it has no public form', () => {
    expect(toPublicEvent(envelope('FantasyTeamLinkedEvent', 'user', {}))).toBeUndefined();
    expect(
      toPublicEvent(envelope('WebhookSubscriptionCreatedEvent', 'webhook-subscription', {})),
    ).toBeUndefined();
    expect(isPublicEventType('toString')).toBe(false);
    expect(isPublicEventType('__proto__')).toBe(false);
  });

  it("When an event's own fields are named aggregateId or version, then the envelope's win", () => {
    const payload = toPublicEvent(
      envelope('UserEnabledEvent', 'user', { aggregateId: 'x', version: 99, at: 'then', byUserId: 'y' }),
    );
    expect(payload?.data).toEqual({
      at: 'then',
      byUserId: 'y',
      aggregateId: '0b5c8f5e-1f4e-4a4e-9b0e-2f6d7c8b9a01',
      version: 3,
    });
  });

  it('When a team event is shaped, then data holds its fields in camelCase plus aggregateId and version', () => {
    const payload = toPublicEvent(
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
    expect(ajv.validate(publicEventSchema('FantasyTeamLinkedEvent'), payload)).toBe(true);
  });

  it('When a reader may not read accounts, then a user event goes out without its personal fields; webhook payloads (the default reader) keep them', () => {
    const created = envelope('UserCreatedEvent', 'user', {
      userId: '0b5c8f5e-1f4e-4a4e-9b0e-2f6d7c8b9a01',
      email: 'ada@example.com',
      userName: 'ada',
      userType: 'Human',
      roles: ['Member'],
      firstName: 'Ada',
      lastName: 'Lovelace',
      emailVerified: false,
      createdAt: '2026-11-24T08:00:00.000Z',
    });
    const personal = ['email', 'userName', 'firstName', 'lastName'];
    expect(catalogueEntry('UserCreatedEvent').personal).toEqual(personal);
    const withheld = toPublicEvent(created, { personalData: false });
    for (const field of personal) expect(withheld?.data).not.toHaveProperty(field);
    expect(withheld?.data).toMatchObject({ roles: ['Member'], userType: 'Human', version: 3 });
    expect(toPublicEvent(created)?.data).toMatchObject({ email: 'ada@example.com', firstName: 'Ada' });
    const valid = ajv.compile(publicEventSchema('UserCreatedEvent'));
    expect([valid(withheld), valid(toPublicEvent(created))]).toEqual([true, true]);
  });

  it('When a user event field is sealed at rest as personal data, then the catalogue marks it personal, so a reader that may not read accounts never receives it', () => {
    const sealed = Object.entries(SEALED_PERSONAL_FIELDS);
    expect(sealed.map(([type]) => type)).toEqual(
      expect.arrayContaining(['UserCreatedEvent', 'UserDisabledEvent']),
    );
    for (const [type, fields] of sealed) {
      expect(isPublicEventType(type)).toBe(true);
      if (!isPublicEventType(type)) continue;
      expect([type, catalogueEntry(type).personal]).toEqual([type, fields]);
      const stored = Object.fromEntries(
        Object.keys(catalogueEntry(type).fields).map((field) => [field, `value-of-${field}`]),
      );
      const withheld = toPublicEvent(envelope(type, 'user', stored), { personalData: false });
      for (const field of fields ?? []) expect(withheld?.data).not.toHaveProperty(field);
    }
    expect(catalogueEntry('UserDisabledEvent').personal).toEqual(['reason']);
    const personalTypes = PUBLIC_EVENT_TYPES.filter((type) => catalogueEntry(type).personal !== undefined);
    expect(personalTypes).toEqual(sealed.map(([type]) => type));
  });
});
