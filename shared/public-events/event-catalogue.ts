import { SEALED_PERSONAL_FIELDS } from '../accounts/personal-data';
import type { EventEnvelope } from '../event-store/envelope';
import type { FantasyTeamEvent } from '../fantasy-team/fantasy-team.events';
import type { PlayerEvent, PlayerIdentifierEvent, SeasonEvent } from '../sport/sport.events';
import { IDENTITY_FIELDS } from '../sport/sport.model';
import type { UserEvent } from '../user/user.events';

/** Every event type the service writes that an integration may hear: the domain's unions, one place. */
export type ServiceEvent = FantasyTeamEvent | UserEvent | PlayerEvent | PlayerIdentifierEvent | SeasonEvent;
export type ServiceEventType = ServiceEvent['type'];

/** A JSON Schema (2020-12, as OpenAPI 3.1 embeds it), kept as plain data. */
export type CatalogueSchema = Readonly<Record<string, unknown>>;

/**
 * One public event type: the aggregate it belongs to, a line for the documents, and the fields of
 * its `data` that leave the service. The field list is an allow-list: the event stream and webhooks
 * send exactly these fields of the stored event (plus `aggregateId` and `version`), so a field
 * added to an event later (or one that must never leave, like a user event's security stamp) goes
 * out only once it is listed here. Keyed by the event's own data type, so a field that the event
 * does not have cannot be listed.
 */
export interface CatalogueEntry<Data = Record<string, unknown>> {
  readonly aggregateType: string;
  readonly description: string;
  readonly fields: { readonly [Field in keyof Data & string]?: CatalogueSchema };
  /** Fields that may be absent (older events, or personal fields a reader may not read). */
  readonly optional?: readonly (keyof Data & string)[];
  /**
   * An account's personal data: sent only to a reader that may read accounts (see EventReader);
   * every other reader gets the event without them. Each is optional too. Not written in the
   * catalogue: exactly the fields sealed at rest (SEALED_PERSONAL_FIELDS, personal-data.ts).
   */
  readonly personal?: readonly (keyof Data & string)[];
}

/**
 * Who an event goes out to. Webhook payloads carry personal fields (a subscription is held by an
 * Admin, and stops delivering when its owner stops being one); on the event stream, only a reader
 * holding a role of ACCOUNT_READER_ROLES (UserManager or Admin, those who may run GetUser) gets
 * them: a ServiceAccount gets user events without them.
 */
export interface EventReader {
  readonly personalData: boolean;
}

/** A reader that may read accounts' personal data (an Admin's webhook subscription, an Admin's stream). */
export const PERSONAL_DATA_READER: EventReader = Object.freeze({ personalData: true });

/** What a personal field's schema says about who receives it. */
const PERSONAL_FIELD_NOTE =
  'Personal data: sent only to readers that may read accounts (GetUser: UserManager or Admin) and in webhook payloads; absent for other readers of the event stream (e.g. a ServiceAccount). Null once the account is erased.';

type Catalogue = {
  readonly [Type in ServiceEventType]: Omit<
    CatalogueEntry<Extract<ServiceEvent, { type: Type }>['data']>,
    'personal'
  >;
};

const string: CatalogueSchema = { type: 'string' };
const nullableString: CatalogueSchema = { type: ['string', 'null'] };
const guid: CatalogueSchema = { type: 'string', format: 'uuid' };
const timestamp: CatalogueSchema = { type: 'string', format: 'date-time' };
const integer: CatalogueSchema = { type: 'integer' };
const positiveLong: CatalogueSchema = { type: 'integer', minimum: 1 };
const number: CatalogueSchema = { type: 'number' };
const roles: CatalogueSchema = { type: 'array', items: { type: 'string' } };
const identifierKind: CatalogueSchema = { type: 'string', enum: ['feed', 'fantasy'] };

/** A player's identity in every system, as player events carry it (sport.model.ts). */
const identity = {
  feedId: integer,
  feedFirstName: string,
  feedLastName: string,
  feedFullName: string,
  feedShortName: string,
  leaguePlayerId: string,
  leagueFirstName: string,
  leagueLastName: string,
  fantasyId: integer,
  platformFullName: string,
  platformSlug: string,
} as const satisfies Record<(typeof IDENTITY_FIELDS)[number], CatalogueSchema>;

/**
 * The public event catalogue: which event types the event stream sends and a webhook subscription
 * may ask for, with the JSON schema of each one's `data`. Types the service keeps to itself (a
 * webhook subscription's own events) are not in the domain unions above, so never here.
 */
const CATALOGUE: Catalogue = {
  FantasyTeamCreatedEvent: {
    aggregateType: 'fantasy-team',
    description: 'A fantasy team was created (aggregateId: the team id).',
    fields: { ownerUserId: guid, name: string, season: string, createdAt: timestamp },
  },
  FantasyTeamOwnerErasedEvent: {
    aggregateType: 'fantasy-team',
    description:
      "The team's owner was erased: ownerUserId is now the owner's tombstone id, which names no account.",
    fields: { ownerUserId: guid, erasedAt: timestamp },
  },
  FantasyTeamLinkedEvent: {
    aggregateType: 'fantasy-team',
    description: 'The team was linked to a fantasy identity (spec section 6).',
    fields: { fantasyTeamExternalId: positiveLong, fantasyUserId: positiveLong, linkedAt: timestamp },
  },
  FantasyTeamUnlinkedEvent: {
    aggregateType: 'fantasy-team',
    description: 'The team was unlinked from its fantasy identity (spec section 6).',
    fields: { unlinkedAt: timestamp, unlinkReason: nullableString },
  },
  FantasyTeamRosterSetEvent: {
    aggregateType: 'fantasy-team',
    description: "The team's roster was replaced.",
    fields: {
      players: {
        type: 'array',
        items: {
          type: 'object',
          properties: { participantId: guid, selectionStatus: integer },
          required: ['participantId', 'selectionStatus'],
          additionalProperties: false,
        },
      },
      setAt: timestamp,
    },
  },
  FantasyTeamArchivedEvent: {
    aggregateType: 'fantasy-team',
    description: 'The team was archived: no command changes it any more.',
    fields: { reason: nullableString, archivedAt: timestamp },
  },
  // User events carry no password, hash or security stamp: only the fields listed go out.
  UserCreatedEvent: {
    aggregateType: 'user',
    description:
      'An account was created (aggregateId: the user id). Its personal fields (email, userName, firstName, lastName) go out in webhook payloads (a subscription is held by an Admin) and, on the event stream, only to a reader that may read accounts (GetUser: UserManager or Admin): a ServiceAccount receives the event without them. Once the account is erased (UserDeletedEvent), they are sent as null, a replay included.',
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
  UserPasswordChangedEvent: {
    aggregateType: 'user',
    description: "The account's password changed (the password itself is never sent).",
    fields: { at: timestamp, byUserId: guid },
  },
  UserRolesSetEvent: {
    aggregateType: 'user',
    description: "The account's roles were replaced.",
    fields: { at: timestamp, byUserId: guid, roles },
  },
  UserDisabledEvent: {
    aggregateType: 'user',
    description:
      "The account was disabled. Its reason is personal data (an operator may write a name in it): sent, like a creation's personal fields, only to a reader that may read accounts and in webhook payloads; a ServiceAccount receives the event without it. Null once the account is erased.",
    fields: { at: timestamp, byUserId: guid, reason: nullableString },
  },
  UserEnabledEvent: {
    aggregateType: 'user',
    description: 'The account was enabled again.',
    fields: { at: timestamp, byUserId: guid },
  },
  UserDeletedEvent: {
    aggregateType: 'user',
    description: 'The account was erased; its teams passed to tombstoneId.',
    fields: { at: timestamp, byUserId: guid, tombstoneId: guid },
  },
  PlayerRegisteredEvent: {
    aggregateType: 'player',
    description: 'A player was registered (aggregateId: derived from its platformId).',
    fields: { ...identity, platformId: guid, registeredAt: timestamp },
  },
  PlayerUpdatedEvent: {
    aggregateType: 'player',
    description: "A player's identity changed: the whole new identity, and which fields changed.",
    fields: {
      ...identity,
      platformId: guid,
      changedFields: { type: 'array', items: { type: 'string', enum: [...IDENTITY_FIELDS] } },
      previousFeedId: integer,
      previousFantasyId: integer,
      updatedAt: timestamp,
    },
  },
  PlayerSeasonStatsSetEvent: {
    aggregateType: 'player',
    description: "A player's numbers for a season were set (spec 2.3, without the team's selectionStatus).",
    fields: {
      platformId: guid,
      season: string,
      rating: { type: ['number', 'null'] },
      price: number,
      fantasyPositions: { type: 'array', items: integer },
      breakdown: {
        type: ['object', 'null'],
        description: 'Keyed by round number.',
        additionalProperties: {
          type: 'object',
          properties: { projectedPoints: number, priceDelta: number },
          required: ['projectedPoints', 'priceDelta'],
          additionalProperties: false,
        },
      },
      setAt: timestamp,
    },
  },
  PlayerIdentifierClaimedEvent: {
    aggregateType: 'player-identifier',
    description: 'A feed or fantasy id was claimed by the player of platformId.',
    fields: { kind: identifierKind, value: integer, platformId: guid, claimedAt: timestamp },
  },
  PlayerIdentifierReleasedEvent: {
    aggregateType: 'player-identifier',
    description: 'A feed or fantasy id was released by the player of platformId.',
    fields: { kind: identifierKind, value: integer, platformId: guid, releasedAt: timestamp },
  },
  SeasonRoundSetEvent: {
    aggregateType: 'season',
    description: "A season's current and final rounds were set.",
    fields: { season: string, round: integer, finalRound: integer, setAt: timestamp },
  },
};

/** The public event types, in the catalogue's order (the order the documents list them). */
export const PUBLIC_EVENT_TYPES: readonly ServiceEventType[] = Object.keys(CATALOGUE) as ServiceEventType[];

/** Each entry with its personal fields: those sealed at rest, one list for both (personal-data.ts). */
const ENTRIES = Object.fromEntries(
  PUBLIC_EVENT_TYPES.map((type): [ServiceEventType, CatalogueEntry] => {
    const personal: readonly string[] | undefined = (
      SEALED_PERSONAL_FIELDS as Readonly<Record<string, readonly string[]>>
    )[type];
    return [type, { ...(CATALOGUE[type] as CatalogueEntry), ...(personal ? { personal } : {}) }];
  }),
) as Readonly<Record<ServiceEventType, CatalogueEntry>>;

export function isPublicEventType(type: string): type is ServiceEventType {
  return Object.hasOwn(CATALOGUE, type);
}

/** The catalogue's entry of a public event type. */
export function catalogueEntry(type: ServiceEventType): CatalogueEntry {
  return ENTRIES[type];
}

/** The aggregate types whose events the catalogue holds: a reader may skip the others unread. */
export const PUBLIC_AGGREGATE_TYPES: readonly string[] = [
  ...new Set(PUBLIC_EVENT_TYPES.map((type) => catalogueEntry(type).aggregateType)),
];

/**
 * An event as integrations receive it (Standard Webhooks' payload shape): its type, when it
 * happened, and its listed fields in camelCase plus the aggregate's id and the event's version in
 * the aggregate's stream.
 */
export interface PublicEvent {
  readonly type: ServiceEventType;
  readonly timestamp: string;
  readonly data: Readonly<Record<string, unknown>> & {
    readonly aggregateId: string;
    readonly version: number;
  };
}

/**
 * The public form of an envelope for `reader`, opened beforehand (after erasure an account's
 * personal fields are null); undefined for an event that is not public (or not of its type's
 * aggregate). Only the catalogue's fields are copied, personal ones only for a reader of personal
 * data, and the event's own fields cannot override aggregateId or version.
 */
export function toPublicEvent(
  envelope: EventEnvelope,
  reader: EventReader = PERSONAL_DATA_READER,
): PublicEvent | undefined {
  const type = envelope.eventType;
  if (!isPublicEventType(type)) return undefined;
  const entry = catalogueEntry(type);
  if (entry.aggregateType !== envelope.aggregateType) return undefined;
  const stored = (envelope.data ?? {}) as Readonly<Record<string, unknown>>;
  const withheld = new Set<string>(reader.personalData ? [] : (entry.personal ?? []));
  const data: Record<string, unknown> = {};
  for (const field of Object.keys(entry.fields)) {
    if (stored[field] !== undefined && !withheld.has(field)) data[field] = stored[field];
  }
  return {
    type,
    timestamp: envelope.occurredAt,
    data: { ...data, aggregateId: envelope.aggregateId, version: envelope.version },
  };
}

/** The JSON Schema of one type's public form, for the OpenAPI document. */
export function publicEventSchema(type: ServiceEventType): CatalogueSchema {
  const entry = catalogueEntry(type);
  const personal = new Set<string>(entry.personal ?? []);
  const optional = new Set<string>([...(entry.optional ?? []), ...personal]);
  const fields = Object.fromEntries(
    Object.entries(entry.fields).map(([field, schema]) => [
      field,
      personal.has(field) ? { ...schema, description: PERSONAL_FIELD_NOTE } : schema,
    ]),
  );
  return {
    type: 'object',
    properties: {
      type: { const: type },
      timestamp,
      data: {
        type: 'object',
        properties: {
          ...fields,
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
