import type { EventEnvelope } from '../event-store/envelope';
import type { Projection } from '../projections/projection';
import { fantasyTeamDecider, type FantasyTeamState } from './fantasy-team.decider';
import type { FantasyTeamEvent } from './fantasy-team.events';

/**
 * The team as GetFantasyTeam answers it: the decider's own state (whatever its fields are), with
 * the team's id before and its version after.
 */
export type FantasyTeamView = { readonly id: string } & NonNullable<FantasyTeamState> & {
    readonly version: number;
  };

/** The decider's state inside a view: the view less what the projection adds. */
function stateOf(view: FantasyTeamView): FantasyTeamState {
  const { id: _id, version: _version, ...state } = view;
  return state;
}

/** Reuses the aggregate's own evolve, so the view can never disagree with the write side. */
export const fantasyTeamProjection: Projection<FantasyTeamView> = {
  name: 'fantasy-team',
  aggregateType: fantasyTeamDecider.aggregateType,
  // A team's document lives in its aggregate's partition, beside the partition's checkpoint.
  checkpointKey: (keys, partition) => keys.projectionCheckpoint('fantasy-team', partition),
  documentKey: (keys, teamId) => keys.projectionDocument('fantasy-team', teamId),
  documentsIn: (keys, partition) => keys.projectionDocumentsIn('fantasy-team', partition),
  keyPatterns: (keys) => keys.projectionPatterns('fantasy-team'),
  evolve(doc, event) {
    if (doc && event.version <= doc.version) return doc; // already applied
    const after = fantasyTeamDecider.evolve(doc && stateOf(doc), {
      type: event.eventType,
      data: event.data,
    } as FantasyTeamEvent);
    if (after === null) return null;
    return { id: event.aggregateId, ...after, version: event.version };
  },
};

export type FantasyTeamEnvelope = EventEnvelope<FantasyTeamEvent>;
