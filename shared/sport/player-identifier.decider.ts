import { accept, type Decider, reject } from '../event-store/decider';
import type { PlayerIdentifierCommand } from './sport.commands';
import type { PlayerIdentifierEvent } from './sport.events';
import { SPORT_MESSAGES } from './sport.messages';

/** Which player holds the identifier now; null platformId once released. */
export type PlayerIdentifierState = {
  readonly platformId: string | null;
} | null;

/**
 * One feed id or fantasy id, held by at most one player. Claiming what the player already holds,
 * or releasing what it no longer holds, raises nothing, so an import can be re-run safely.
 */
export const playerIdentifierDecider: Decider<
  PlayerIdentifierState,
  PlayerIdentifierCommand,
  PlayerIdentifierEvent
> = {
  aggregateType: 'player-identifier',
  initialState: null,

  decide(command, state, context) {
    const { kind, value, platformId } = command.data;
    const holder = state?.platformId ?? null;
    const now = context.now.toISOString();
    switch (command.type) {
      case 'ClaimPlayerIdentifier':
        if (holder === platformId) return accept();
        if (holder !== null) return reject(SPORT_MESSAGES.identifierTaken(kind, value, holder));
        return accept({
          type: 'PlayerIdentifierClaimedEvent',
          data: { kind, value, platformId, claimedAt: now },
        });
      case 'ReleasePlayerIdentifier':
        if (holder !== platformId) return accept();
        return accept({
          type: 'PlayerIdentifierReleasedEvent',
          data: { kind, value, platformId, releasedAt: now },
        });
      default: {
        const _exhaustive: never = command;
        return _exhaustive;
      }
    }
  },

  evolve(_state, event) {
    switch (event.type) {
      case 'PlayerIdentifierClaimedEvent':
        return { platformId: event.data.platformId };
      case 'PlayerIdentifierReleasedEvent':
        return { platformId: null };
      default: {
        const _exhaustive: never = event;
        return _state;
      }
    }
  },
};
