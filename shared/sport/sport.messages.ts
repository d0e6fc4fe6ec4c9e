import type { PlayerIdentifierKind } from './sport.model';

/** Rejection texts of the sport aggregates: per-player errors of a PlayerSeeding import quote them. */
const IDENTIFIER_LABEL: Readonly<Record<PlayerIdentifierKind, string>> = {
  feed: 'Feed id',
  fantasy: 'Fantasy id',
};

export const SPORT_MESSAGES = {
  identifierTaken: (kind: PlayerIdentifierKind, value: number, platformId: string) =>
    `${IDENTIFIER_LABEL[kind]} ${value} is already mapped to player ${platformId}`,
  identifierNotHeld: (kind: PlayerIdentifierKind, value: number, platformId: string) =>
    `${IDENTIFIER_LABEL[kind]} ${value} is not mapped to player ${platformId}`,
  roundAfterFinal: (round: number, finalRound: number) =>
    `Round ${round} is after the final round ${finalRound}`,
} as const;
