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
