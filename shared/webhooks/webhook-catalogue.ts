import type { EventEnvelope } from '../event-store/envelope';

/** A JSON Schema (2020-12, as OpenAPI 3.1 embeds it), kept as plain data. */
export type CatalogueSchema = Readonly<Record<string, unknown>>;

const string: CatalogueSchema = { type: 'string' };
const nullableString: CatalogueSchema = { type: ['string', 'null'] };
const guid: CatalogueSchema = { type: 'string', format: 'uuid' };
const timestamp: CatalogueSchema = { type: 'string', format: 'date-time' };
const positiveLong: CatalogueSchema = { type: 'integer', minimum: 1 };
const roles: CatalogueSchema = { type: 'array', items: { type: 'string' } };

/**
 * One event type a subscriber may ask for: the aggregate it belongs to and the fields of its
 * `data`. The field list is an allow-list: a delivery sends exactly these fields of the stored
 * event (plus `aggregateId` and `version`), so a field added to an event later (or one that must
 * never leave, like a user event's security stamp) goes out only once it is listed here.
 */
export interface CatalogueEntry {
  readonly eventType: string;
  readonly aggregateType: string;
  readonly description: string;
  readonly fields: Readonly<Record<string, CatalogueSchema>>;
  /** Fields that may be absent (older events). */
  readonly optional?: readonly string[];
}

const teamEvents: readonly CatalogueEntry[] = [
  {
    eventType: 'FantasyTeamCreatedEvent',
    aggregateType: 'fantasy-team',
    description: 'A fantasy team was created (aggregateId: the team id).',
    fields: { ownerUserId: guid, name: string, season: string, createdAt: timestamp },
  },
  {
    eventType: 'FantasyTeamOwnerErasedEvent',
    aggregateType: 'fantasy-team',
    description:
      "The team's owner was erased: ownerUserId is now the owner's tombstone id, which names no account.",
    fields: { ownerUserId: guid, erasedAt: timestamp },
  },
  {
    eventType: 'FantasyTeamLinkedEvent',
    aggregateType: 'fantasy-team',
    description: 'The team was linked to a fantasy identity (spec section 6).',
    fields: { fantasyTeamExternalId: positiveLong, fantasyUserId: positiveLong, linkedAt: timestamp },
  },
  {
    eventType: 'FantasyTeamUnlinkedEvent',
    aggregateType: 'fantasy-team',
    description: 'The team was unlinked from its fantasy identity (spec section 6).',
    fields: { unlinkedAt: timestamp, unlinkReason: nullableString },
  },
  {
    eventType: 'FantasyTeamRosterSetEvent',
    aggregateType: 'fantasy-team',
    description: "The team's roster was replaced.",
    fields: {
      players: {
        type: 'array',
        items: {
          type: 'object',
          properties: { participantId: guid, selectionStatus: { type: 'integer' } },
          required: ['participantId', 'selectionStatus'],
          additionalProperties: false,
        },
      },
      setAt: timestamp,
    },
  },
  {
    eventType: 'FantasyTeamArchivedEvent',
    aggregateType: 'fantasy-team',
    description: 'The team was archived: no command changes it any more.',
    fields: { reason: nullableString, archivedAt: timestamp },
  },
];

// User events carry no password, hash or security stamp: only the fields listed go out.
const userEvents: readonly CatalogueEntry[] = [
  {
    eventType: 'UserCreatedEvent',
    aggregateType: 'user',
    description:
      'An account was created (aggregateId: the user id). Once the account is erased (UserDeletedEvent), its personal fields (email, userName, firstName, lastName) are sent as null, a replay included.',
    fields: {
      userId: guid,
      email: nullableString,
      userName: nullableString,
      userType: { type: 'string', enum: ['Human', 'ServiceAccount'] },
      roles,
      firstName: nullableString,
      lastName: nullableString,
      emailVerified: { type: 'boolean' },
      createdAt: timestamp,
    },
    optional: ['email', 'userName', 'firstName', 'lastName'],
  },
  {
    eventType: 'UserPasswordChangedEvent',
    aggregateType: 'user',
    description: "The account's password changed (the password itself is never sent).",
    fields: { at: timestamp, byUserId: guid },
  },
  {
    eventType: 'UserRolesSetEvent',
    aggregateType: 'user',
    description: "The account's roles were replaced.",
    fields: { at: timestamp, byUserId: guid, roles },
  },
  {
    eventType: 'UserDisabledEvent',
    aggregateType: 'user',
    description: 'The account was disabled (reason: null once the account is erased).',
    fields: { at: timestamp, byUserId: guid, reason: nullableString },
  },
  {
    eventType: 'UserEnabledEvent',
    aggregateType: 'user',
    description: 'The account was enabled again.',
    fields: { at: timestamp, byUserId: guid },
  },
  {
    eventType: 'UserDeletedEvent',
    aggregateType: 'user',
    description: 'The account was erased; its teams passed to tombstoneId.',
    fields: { at: timestamp, byUserId: guid, tombstoneId: guid },
  },
];

/** Every event type a webhook subscription may ask for, in the order the document lists them. */
export const WEBHOOK_CATALOGUE: readonly CatalogueEntry[] = [...teamEvents, ...userEvents];

/** `eventTypes: ["*"]` asks for every type of the catalogue (those added later too). */
export const ALL_EVENT_TYPES = '*';

const BY_TYPE = new Map(WEBHOOK_CATALOGUE.map((entry) => [entry.eventType, entry]));

export function catalogueEntry(eventType: string): CatalogueEntry | undefined {
  return BY_TYPE.get(eventType);
}

/** The aggregate types whose events the catalogue holds: the others are skipped unread. */
export const CATALOGUE_AGGREGATE_TYPES: readonly string[] = [
  ...new Set(WEBHOOK_CATALOGUE.map((entry) => entry.aggregateType)),
];

/** The Standard Webhooks payload: `{type, timestamp, data}`. */
export interface WebhookPayload {
  readonly type: string;
  readonly timestamp: string;
  readonly data: Readonly<Record<string, unknown>>;
}

/**
 * The payload of an event of the catalogue (undefined for any other): its listed fields, in
 * camelCase as stored, plus `aggregateId` and `version`.
 */
export function payloadOf(event: EventEnvelope): WebhookPayload | undefined {
  const entry = BY_TYPE.get(event.eventType);
  if (!entry || entry.aggregateType !== event.aggregateType) return undefined;
  const stored = (event.data ?? {}) as Record<string, unknown>;
  const data: Record<string, unknown> = {};
  for (const field of Object.keys(entry.fields)) {
    if (stored[field] !== undefined) data[field] = stored[field];
  }
  return {
    type: event.eventType,
    timestamp: event.occurredAt,
    data: { ...data, aggregateId: event.aggregateId, version: event.version },
  };
}

/** The JSON Schema of one entry's payload, for the OpenAPI document's `webhooks`. */
export function payloadSchema(entry: CatalogueEntry): CatalogueSchema {
  const optional = new Set(entry.optional ?? []);
  return {
    type: 'object',
    properties: {
      type: { const: entry.eventType },
      timestamp: timestamp,
      data: {
        type: 'object',
        properties: {
          ...entry.fields,
          aggregateId: guid,
          version: { type: 'integer', minimum: 1, description: "The event's version in its aggregate." },
        },
        required: [
          ...Object.keys(entry.fields).filter((field) => !optional.has(field)),
          'aggregateId',
          'version',
        ],
        additionalProperties: false,
      },
    },
    required: ['type', 'timestamp', 'data'],
    additionalProperties: false,
  };
}
