import { accept, type Decider, type Decision } from '../event-store/decider';
import type { PlayerCommand } from './sport.commands';
import type { PlayerEvent, PlayerSeasonStatsSetEvent } from './sport.events';
import {
  canonicalIdentity,
  canonicalStats,
  IDENTITY_FIELDS,
  type PlayerIdentity,
  type PlayerSeasonStats,
} from './sport.model';

/** A player as folded from its events; null before it is registered. */
export type PlayerState = {
  readonly platformId: string;
  readonly identity: PlayerIdentity;
  /** Stats by season (`"2026"`). */
  readonly seasons: Readonly<Record<string, PlayerSeasonStats>>;
} | null;

function sameStats(a: PlayerSeasonStats | undefined, b: PlayerSeasonStats): boolean {
  return a !== undefined && JSON.stringify(canonicalStats(a)) === JSON.stringify(canonicalStats(b));
}

/**
 * A player, keyed by its platform id. Seeding is idempotent: the same identity and stats again
 * raise no event, so a re-import (or a retried job) changes nothing. The identifiers it holds
 * alone (feed id, fantasy id) are claimed beforehand on their own aggregates, by the importer.
 */
export const playerDecider: Decider<PlayerState, PlayerCommand, PlayerEvent> = {
  aggregateType: 'player',
  initialState: null,

  decide(command, state, context): Decision<PlayerEvent> {
    const now = context.now.toISOString();
    const { platformId, season } = command.data;
    const identity = canonicalIdentity(command.data.identity);
    const stats = canonicalStats(command.data.stats);
    const events: PlayerEvent[] = [];

    if (state === null) {
      events.push({ type: 'PlayerRegisteredEvent', data: { platformId, ...identity, registeredAt: now } });
    } else {
      const changedFields = IDENTITY_FIELDS.filter((field) => state.identity[field] !== identity[field]);
      if (changedFields.length) {
        events.push({
          type: 'PlayerUpdatedEvent',
          data: {
            platformId,
            ...identity,
            changedFields,
            previousFeedId: state.identity.feedId,
            previousFantasyId: state.identity.fantasyId,
            updatedAt: now,
          },
        });
      }
    }
    if (!sameStats(state?.seasons[season], stats)) {
      const statsSet: PlayerSeasonStatsSetEvent = {
        type: 'PlayerSeasonStatsSetEvent',
        data: { platformId, season, ...stats, setAt: now },
      };
      events.push(statsSet);
    }
    return accept(...events);
  },

  evolve(state, event) {
    switch (event.type) {
      case 'PlayerRegisteredEvent':
        return { platformId: event.data.platformId, identity: canonicalIdentity(event.data), seasons: {} };
      case 'PlayerUpdatedEvent':
        return state && { ...state, identity: canonicalIdentity(event.data) };
      case 'PlayerSeasonStatsSetEvent': {
        const { rating, price, fantasyPositions, breakdown } = event.data;
        return (
          state && {
            ...state,
            seasons: {
              ...state.seasons,
              [event.data.season]: { rating, price, fantasyPositions, breakdown },
            },
          }
        );
      }
      default: {
        const _exhaustive: never = event;
        return state;
      }
    }
  },
};
