import type { PlayerIdentifierKind, PlayerIdentity, PlayerSeasonStats } from './sport.model';

/** Registers a player, or brings its identity and one season's stats up to date. */
export interface SeedPlayer {
  readonly type: 'SeedPlayer';
  readonly data: {
    readonly platformId: string;
    readonly identity: PlayerIdentity;
    readonly season: string;
    readonly stats: PlayerSeasonStats;
  };
}

export interface ClaimPlayerIdentifier {
  readonly type: 'ClaimPlayerIdentifier';
  readonly data: { readonly kind: PlayerIdentifierKind; readonly value: number; readonly platformId: string };
}

export interface ReleasePlayerIdentifier {
  readonly type: 'ReleasePlayerIdentifier';
  readonly data: { readonly kind: PlayerIdentifierKind; readonly value: number; readonly platformId: string };
}

export interface SetSeasonRound {
  readonly type: 'SetSeasonRound';
  readonly data: { readonly season: string; readonly round: number; readonly finalRound: number };
}

export type PlayerCommand = SeedPlayer;
export type PlayerIdentifierCommand = ClaimPlayerIdentifier | ReleasePlayerIdentifier;
export type SeasonCommand = SetSeasonRound;
