import type { DomainEvent } from '../event-store/decider';
import type { PlayerIdentifierKind, PlayerIdentity, PlayerSeasonStats } from './sport.model';

export type PlayerRegisteredEvent = DomainEvent<
  'PlayerRegisteredEvent',
  PlayerIdentity & { readonly platformId: string; readonly registeredAt: string }
>;

/** The whole new identity, which fields changed, and the identifiers it held before (to release them). */
export type PlayerUpdatedEvent = DomainEvent<
  'PlayerUpdatedEvent',
  PlayerIdentity & {
    readonly platformId: string;
    readonly changedFields: readonly (keyof PlayerIdentity)[];
    readonly previousFeedId: number;
    readonly previousFantasyId: number;
    readonly updatedAt: string;
  }
>;

export type PlayerSeasonStatsSetEvent = DomainEvent<
  'PlayerSeasonStatsSetEvent',
  PlayerSeasonStats & { readonly platformId: string; readonly season: string; readonly setAt: string }
>;

export type PlayerIdentifierClaimedEvent = DomainEvent<
  'PlayerIdentifierClaimedEvent',
  {
    readonly kind: PlayerIdentifierKind;
    readonly value: number;
    readonly platformId: string;
    readonly claimedAt: string;
  }
>;

export type PlayerIdentifierReleasedEvent = DomainEvent<
  'PlayerIdentifierReleasedEvent',
  {
    readonly kind: PlayerIdentifierKind;
    readonly value: number;
    readonly platformId: string;
    readonly releasedAt: string;
  }
>;

export type SeasonRoundSetEvent = DomainEvent<
  'SeasonRoundSetEvent',
  { readonly season: string; readonly round: number; readonly finalRound: number; readonly setAt: string }
>;

export type PlayerEvent = PlayerRegisteredEvent | PlayerUpdatedEvent | PlayerSeasonStatsSetEvent;
export type PlayerIdentifierEvent = PlayerIdentifierClaimedEvent | PlayerIdentifierReleasedEvent;
export type SeasonEvent = SeasonRoundSetEvent;
