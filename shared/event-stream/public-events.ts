import type { FantasyTeamEvent } from '../domain/fantasy-team/fantasy-team.events';
import type { PlayerEvent, PlayerIdentifierEvent, SeasonEvent } from '../domain/sport/sport.events';
import type { UserEvent } from '../domain/user/user.events';
import type { EventEnvelope } from '../event-store/envelope';

/** Every event type the service writes: the domain's unions, one place. */
export type ServiceEvent = FantasyTeamEvent | UserEvent | PlayerEvent | PlayerIdentifierEvent | SeasonEvent;
export type ServiceEventType = ServiceEvent['type'];

/**
 * The event types an integration may receive (the event stream's `types`, webhooks' `eventTypes`),
 * each with a line for the catalogue. Keyed by the union, so an event type added to the domain
 * without a line here fails the type check rather than going out (or being refused) unnoticed.
 */
const CATALOGUE: Readonly<Record<ServiceEventType, string>> = {
  FantasyTeamCreatedEvent: 'A fantasy team was created for its owner.',
  FantasyTeamLinkedEvent: 'A fantasy team was linked to an external fantasy team and user.',
  FantasyTeamUnlinkedEvent: 'A fantasy team was unlinked from its external team.',
  FantasyTeamRosterSetEvent: "A fantasy team's roster was set.",
  FantasyTeamArchivedEvent: 'A fantasy team was archived.',
  FantasyTeamOwnerErasedEvent:
    "A fantasy team's owner was erased: the team now belongs to the owner's tombstone id.",
  UserCreatedEvent:
    'An account was created (no password, hash or security stamp; personal fields null once erased).',
  UserPasswordChangedEvent: "An account's password changed (the password itself never leaves the service).",
  UserRolesSetEvent: "An account's roles were set.",
  UserDisabledEvent: 'An account was disabled.',
  UserEnabledEvent: 'An account was enabled again.',
  UserDeletedEvent: 'An account was deleted (erased).',
  PlayerRegisteredEvent: 'A player was registered.',
  PlayerUpdatedEvent: "A player's identity changed.",
  PlayerSeasonStatsSetEvent: "A player's statistics for a season were set.",
  PlayerIdentifierClaimedEvent: 'A player identifier was claimed by a player.',
  PlayerIdentifierReleasedEvent: 'A player identifier was released.',
  SeasonRoundSetEvent: "A season's current round was set.",
};

/** The public event types, in the catalogue's order. */
export const PUBLIC_EVENT_TYPES: readonly ServiceEventType[] = Object.keys(CATALOGUE) as ServiceEventType[];

/** The catalogue line of an event type. */
export function describeEventType(type: ServiceEventType): string {
  return CATALOGUE[type];
}

export function isPublicEventType(type: string): type is ServiceEventType {
  return Object.hasOwn(CATALOGUE, type);
}

/**
 * Fields that never leave the service in any event, whatever its type: a security stamp (it would
 * let a reader tell when tokens were revoked, and it is half of what a token is checked against),
 * and the sealed form of personal fields (`personalData`, ADR 0014) should an envelope ever reach
 * here unopened. Passwords and hashes are never in an event to begin with (user.events.ts); they
 * are listed too so that a future event carrying one cannot leak it.
 */
export const WITHHELD_FIELDS: readonly string[] = [
  'securityStamp',
  'personalData',
  'password',
  'passwordHash',
  'hash',
];

/**
 * An event as integrations receive it (Standard Webhooks' payload shape): its type, when it
 * happened, and its fields in camelCase plus the aggregate's id and the event's version in the
 * aggregate's stream.
 */
export interface PublicEvent {
  readonly type: string;
  readonly timestamp: string;
  readonly data: Readonly<Record<string, unknown>> & {
    readonly aggregateId: string;
    readonly version: number;
  };
}

/**
 * The public form of an envelope, opened beforehand (after erasure an account's personal fields
 * are null). Withheld fields are dropped; the event's own fields cannot override aggregateId or
 * version.
 */
export function toPublicEvent(envelope: EventEnvelope): PublicEvent {
  const fields: Record<string, unknown> = {};
  const data = (envelope.data ?? {}) as Readonly<Record<string, unknown>>;
  for (const [name, value] of Object.entries(data)) {
    if (!WITHHELD_FIELDS.includes(name)) fields[name] = value;
  }
  return {
    type: envelope.eventType,
    timestamp: envelope.occurredAt,
    data: { ...fields, aggregateId: envelope.aggregateId, version: envelope.version },
  };
}
