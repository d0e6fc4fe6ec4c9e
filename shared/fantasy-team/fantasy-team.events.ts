import type { DomainEvent } from '../event-store/decider';
import type { RosterSlot } from './fantasy-team.commands';

/** Timestamps are ISO 8601 UTC with offset (`...Z`), as spec section 6 asks. */
export type FantasyTeamCreatedEvent = DomainEvent<
  'FantasyTeamCreatedEvent',
  { readonly ownerUserId: string; readonly name: string; readonly season: string; readonly createdAt: string }
>;

export type FantasyTeamLinkedEvent = DomainEvent<
  'FantasyTeamLinkedEvent',
  { readonly fantasyTeamExternalId: number; readonly fantasyUserId: number; readonly linkedAt: string }
>;

export type FantasyTeamUnlinkedEvent = DomainEvent<
  'FantasyTeamUnlinkedEvent',
  { readonly unlinkedAt: string; readonly unlinkReason: string | null }
>;

export type FantasyTeamRosterSetEvent = DomainEvent<
  'FantasyTeamRosterSetEvent',
  { readonly players: readonly RosterSlot[]; readonly setAt: string }
>;

export type FantasyTeamArchivedEvent = DomainEvent<
  'FantasyTeamArchivedEvent',
  { readonly reason: string | null; readonly archivedAt: string }
>;

/** The team's owner was erased: the team now belongs to the owner's tombstone id (ADR 0014). */
export type FantasyTeamOwnerErasedEvent = DomainEvent<
  'FantasyTeamOwnerErasedEvent',
  { readonly ownerUserId: string; readonly erasedAt: string }
>;

export type FantasyTeamEvent =
  | FantasyTeamCreatedEvent
  | FantasyTeamOwnerErasedEvent
  | FantasyTeamLinkedEvent
  | FantasyTeamUnlinkedEvent
  | FantasyTeamRosterSetEvent
  | FantasyTeamArchivedEvent;
