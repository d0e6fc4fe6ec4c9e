import type { Projection } from '../projections/projection';
import { seasonDecider } from './season.decider';
import type { SeasonEvent } from './sport.events';
import { sportProjectionBase } from './sport-projection';

export interface SeasonView {
  readonly season: string;
  readonly round: number;
  readonly finalRound: number;
  readonly version: number;
}

/** What `{sport}:season-rounds` holds for a season. */
export interface SeasonRounds {
  readonly round: number;
  readonly finalRound: number;
}

const NAME = 'seasons';

/** Each season's current and final round, readable by season year in one hash. */
export const seasonsProjection: Projection<SeasonView> = {
  ...sportProjectionBase(NAME),
  aggregateType: seasonDecider.aggregateType,
  documentKey: (keys, seasonAggregateId) => keys.sport.season(seasonAggregateId),
  keyPatterns: (keys) => keys.sport.patterns(NAME, 'season:*', 'season-rounds'),

  evolve(doc, event) {
    if (doc && event.version <= doc.version) return doc; // already applied
    const { season } = event.data as SeasonEvent['data'];
    const after = seasonDecider.evolve(doc, { type: event.eventType, data: event.data } as SeasonEvent);
    return after && { season, ...after, version: event.version };
  },

  indexEntries(view, keys) {
    const rounds: SeasonRounds = { round: view.round, finalRound: view.finalRound };
    return [
      { kind: 'hash', key: keys.sport.seasonRounds(), field: view.season, value: JSON.stringify(rounds) },
    ];
  },
};
