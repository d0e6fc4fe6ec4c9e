import type { RosterSlot } from '../../domain/fantasy-team/fantasy-team.commands';
import { fantasyTeamDecider, type FantasyTeamState } from '../../domain/fantasy-team/fantasy-team.decider';
import type { FantasyTeamEvent } from '../../domain/fantasy-team/fantasy-team.events';
import type { EventEnvelope } from '../../event-store/envelope';
import type { Projection } from '../projection';

/** The team as GetFantasyTeam answers it. */
export interface FantasyTeamView {
  readonly id: string;
  readonly name: string;
  readonly season: string;
  readonly ownerUserId: string;
  readonly fantasyTeamExternalId: number;
  readonly fantasyUserId: number;
  readonly archived: boolean;
  readonly roster: readonly RosterSlot[];
  readonly version: number;
}

/** Reuses the aggregate's own evolve, so the view can never disagree with the write side. */
export const fantasyTeamProjection: Projection<FantasyTeamView> = {
  name: 'fantasy-team',
  aggregateType: fantasyTeamDecider.aggregateType,
  // A team's document lives in its aggregate's partition, beside the partition's checkpoint.
  checkpointKey: (keys, partition) => keys.projectionCheckpoint('fantasy-team', partition),
  documentKey: (keys, teamId) => keys.projectionDocument('fantasy-team', teamId),
  keyPatterns: (keys) => keys.projectionPatterns('fantasy-team'),
  evolve(doc, event) {
    if (doc && event.version <= doc.version) return doc; // already applied
    const before: FantasyTeamState = doc && {
      ownerUserId: doc.ownerUserId,
      name: doc.name,
      season: doc.season,
      fantasyTeamExternalId: doc.fantasyTeamExternalId,
      fantasyUserId: doc.fantasyUserId,
      archived: doc.archived,
      roster: doc.roster,
    };
    const after = fantasyTeamDecider.evolve(before, {
      type: event.eventType,
      data: event.data,
    } as FantasyTeamEvent);
    if (after === null) return null;
    return { id: event.aggregateId, ...after, version: event.version };
  },
};

export type FantasyTeamEnvelope = EventEnvelope<FantasyTeamEvent>;
