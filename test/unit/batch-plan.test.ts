import type { EventEnvelope } from '../../shared/event-store/envelope';
import {
  fantasyTeamProjection,
  type FantasyTeamView,
} from '../../shared/fantasy-team/fantasy-team.projection';
import { createKeys } from '../../shared/redis/keys';
import { documentKeysOf, planBatch } from '../../workers/projector/batch-plan';

const keys = createKeys('plan:');
const TEAM = '0b0f6e1c-58d6-4b1c-9a43-3d4a1a1a1a1a';
const OWNER = '11111111-1111-4111-8111-111111111111';
const PARTITION = 3;

const envelope = (
  version: number,
  eventType: string,
  data: unknown,
  aggregateType = 'fantasy-team',
): EventEnvelope => ({
  eventId: `event-${aggregateType}-${version}`,
  eventType,
  aggregateType,
  aggregateId: TEAM,
  version,
  occurredAt: '2026-01-01T00:00:00.000Z',
  data,
  metadata: { actorUserId: OWNER, requestId: null, correlationId: 'c' },
});
const created = envelope(1, 'FantasyTeamCreatedEvent', {
  ownerUserId: OWNER,
  name: 'Plan',
  season: '2026',
  createdAt: '2026-01-01T00:00:00.000Z',
});
const linked = envelope(2, 'FantasyTeamLinkedEvent', {
  fantasyTeamExternalId: 7,
  fantasyUserId: 8,
  linkedAt: '2026-01-01T00:00:00.000Z',
});

const view: FantasyTeamView = {
  id: TEAM,
  ownerUserId: OWNER,
  name: 'Plan',
  season: '2026',
  fantasyTeamExternalId: 7,
  fantasyUserId: 8,
  archived: false,
  roster: [],
  version: 2,
};

/** The batch script's arguments, its writes parsed. */
function planned(events: readonly EventEnvelope[], stored: ReadonlyMap<string, string | null>) {
  const [numberOfKeys, ...rest] = planBatch(
    fantasyTeamProjection,
    keys,
    PARTITION,
    events,
    stored,
  ).scriptArguments('0-0', '1-9', events.length);
  const scriptKeys = rest.slice(0, numberOfKeys);
  const [expected, next, writes, count] = rest.slice(numberOfKeys);
  return { scriptKeys, expected, next, writes: JSON.parse(writes ?? '[]') as unknown[][], count };
}

describe('Batch planning (no Redis)', () => {
  const docKey = keys.projectionDocument('fantasy-team', TEAM);

  it('When events touch one document several times, then it is named once', () => {
    expect(documentKeysOf(fantasyTeamProjection, keys, [created, linked])).toEqual([docKey]);
  });

  it('When a new team is created and linked, then one document write holds the folded view, fenced by the checkpoint', () => {
    const plan = planned([created, linked], new Map([[docKey, null]]));
    const checkpointKey = keys.projectionCheckpoint('fantasy-team', PARTITION);
    expect(plan.scriptKeys).toEqual([checkpointKey, keys.projectionAppliedCount(checkpointKey), docKey]);
    expect(plan).toMatchObject({ expected: '0-0', next: '1-9', count: '2' });
    expect(plan.writes).toEqual([['set', 3, JSON.stringify(view)]]);
  });

  it('When the stored document already holds the events, then nothing but the checkpoint is written', () => {
    const plan = planned([created, linked], new Map([[docKey, JSON.stringify(view)]]));
    expect(plan.writes).toEqual([]);
  });
});
