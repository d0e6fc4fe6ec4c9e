import { accept, type Decider, reject } from '../event-store/decider';
import type { SeasonCommand } from './sport.commands';
import type { SeasonEvent } from './sport.events';
import { SPORT_MESSAGES } from './sport.messages';

export type SeasonState = { readonly round: number; readonly finalRound: number } | null;

/** A season's current and final round; setting the same again raises nothing. */
export const seasonDecider: Decider<SeasonState, SeasonCommand, SeasonEvent> = {
  aggregateType: 'season',
  initialState: null,

  decide(command, state, context) {
    const { season, round, finalRound } = command.data;
    if (round > finalRound) return reject(SPORT_MESSAGES.roundAfterFinal(round, finalRound));
    if (state?.round === round && state.finalRound === finalRound) return accept();
    return accept({
      type: 'SeasonRoundSetEvent',
      data: { season, round, finalRound, setAt: context.now.toISOString() },
    });
  },

  evolve(_state, event) {
    return { round: event.data.round, finalRound: event.data.finalRound };
  },
};
