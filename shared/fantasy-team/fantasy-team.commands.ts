/** Selection status codes of a roster slot (spec 3.1). */
export const SELECTION_STATUS = { Captain: 0, ViceCaptain: 1, Selected: 2, Reserve: 3, Bench: 4 } as const;
export type SelectionStatus = (typeof SELECTION_STATUS)[keyof typeof SELECTION_STATUS];

export const MAX_ROSTER_SIZE = 30;
export const DEFAULT_SEASON = '2026';

export interface RosterSlot {
  /** The platform participant id (GUID, lower case). */
  readonly participantId: string;
  readonly selectionStatus: SelectionStatus;
}

export interface CreateFantasyTeam {
  readonly type: 'CreateFantasyTeam';
  readonly data: { readonly name: string; readonly season: string };
}

export interface LinkFantasyTeam {
  readonly type: 'LinkFantasyTeam';
  readonly data: { readonly fantasyTeamExternalId: number; readonly fantasyUserId: number };
}

export interface UnlinkFantasyTeam {
  readonly type: 'UnlinkFantasyTeam';
  readonly data: { readonly unlinkReason: string | null };
}

export interface SetFantasyTeamRoster {
  readonly type: 'SetFantasyTeamRoster';
  readonly data: { readonly players: readonly RosterSlot[] };
}

export interface ArchiveFantasyTeam {
  readonly type: 'ArchiveFantasyTeam';
  readonly data: { readonly reason: string | null };
}

export type FantasyTeamCommand =
  CreateFantasyTeam | LinkFantasyTeam | UnlinkFantasyTeam | SetFantasyTeamRoster | ArchiveFantasyTeam;

/**
 * The service's own command, never a client's (no definition of POST /api/command names it): when an
 * account is erased, each team it owns passes to its tombstone id, an id that names no account, so
 * the team stays and no longer points at the person (ADR 0014). Archived teams pass too.
 */
export interface EraseFantasyTeamOwner {
  readonly type: 'EraseFantasyTeamOwner';
  readonly data: { readonly fromUserId: string; readonly tombstoneId: string };
}

/** Every command the team decider takes: the clients' and the service's own. */
export type AnyFantasyTeamCommand = FantasyTeamCommand | EraseFantasyTeamOwner;
