import { v5 as uuidv5 } from 'uuid';

/** The spec's defaults (section 8): a season without rounds set is at round 1 of 27. */
export const DEFAULT_ROUND = 1;
export const DEFAULT_FINAL_ROUND = 27;

/** Who a player is in each system: the feed, the league database, the fantasy game, the platform. */
export interface PlayerIdentity {
  readonly feedId: number;
  readonly feedFirstName: string;
  readonly feedLastName: string;
  readonly feedFullName: string;
  readonly feedShortName: string;
  readonly leaguePlayerId: string;
  readonly leagueFirstName: string;
  readonly leagueLastName: string;
  readonly fantasyId: number;
  readonly platformFullName: string;
  readonly platformSlug: string;
}

/** Field order of an identity: events and documents list them this way, so their JSON is stable. */
export const IDENTITY_FIELDS = [
  'feedId',
  'feedFirstName',
  'feedLastName',
  'feedFullName',
  'feedShortName',
  'leaguePlayerId',
  'leagueFirstName',
  'leagueLastName',
  'fantasyId',
  'platformFullName',
  'platformSlug',
] as const satisfies readonly (keyof PlayerIdentity)[];

/** One round of a player's breakdown (spec 2.3: projected points and price delta). */
export interface RoundBreakdown {
  readonly projectedPoints: number;
  readonly priceDelta: number;
}

/** A player's numbers for one season (spec 2.3 without selectionStatus, which is the team's). */
export interface PlayerSeasonStats {
  readonly rating: number | null;
  readonly price: number;
  readonly fantasyPositions: readonly number[];
  /** Keyed by round number (as text, as JSON keys are). */
  readonly breakdown: Readonly<Record<string, RoundBreakdown>> | null;
}

/** The identity in IDENTITY_FIELDS order: the one shape events carry. */
export function canonicalIdentity(identity: PlayerIdentity): PlayerIdentity {
  return Object.fromEntries(
    IDENTITY_FIELDS.map((field) => [field, identity[field]]),
  ) as unknown as PlayerIdentity;
}

/** Stats with their members in one order and the breakdown's rounds sorted numerically. */
export function canonicalStats(stats: PlayerSeasonStats): PlayerSeasonStats {
  const breakdown =
    stats.breakdown === null
      ? null
      : Object.fromEntries(
          Object.keys(stats.breakdown)
            .sort((a, b) => Number(a) - Number(b))
            .map((round) => {
              const { projectedPoints, priceDelta } = stats.breakdown?.[round] as RoundBreakdown;
              return [round, { projectedPoints, priceDelta }];
            }),
        );
  return {
    rating: stats.rating,
    price: stats.price,
    fantasyPositions: [...stats.fantasyPositions],
    breakdown,
  };
}

/** The identifiers one player may hold alone: a feed id or a fantasy id maps to one platformId. */
export type PlayerIdentifierKind = 'feed' | 'fantasy';

/** Fixed forever: changing either would give every existing aggregate a new id. */
const IDENTIFIER_NAMESPACE = '2b7e4c1a-9d3f-5a60-8c21-4e5f6a7b8c9d';
const SEASON_NAMESPACE = '7c0d2e9b-1a4f-5b38-9e6d-0f1a2b3c4d5e';

/**
 * The aggregate that claims one identifier: derived from it, so two players claiming feed id 7
 * race on one stream and the version fence lets exactly one win (like e-mails, ADR 0004).
 */
export function playerIdentifierId(kind: PlayerIdentifierKind, value: number): string {
  return uuidv5(`${kind}:${value}`, IDENTIFIER_NAMESPACE);
}

/** A season's aggregate id, derived from its year. */
export function seasonId(season: string): string {
  return uuidv5(`season:${season}`, SEASON_NAMESPACE);
}
