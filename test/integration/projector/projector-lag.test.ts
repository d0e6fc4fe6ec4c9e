import { randomUUID } from 'node:crypto';

import { fantasyTeamProjection } from '../../../shared/fantasy-team/fantasy-team.projection';
import type { ProjectorLag } from '../../../shared/metrics/metrics';
import { LOG_PARTITIONS, partitionOf } from '../../../shared/redis/partitions';
import { ALL_PROJECTIONS } from '../../../workers/projector/all-projections';
import { applyNextBatch } from '../../../workers/projector/apply-batch';
import { readProjectorLag } from '../../../workers/projector/projector-lag';
import { rebuildProjection } from '../../../workers/projector/rebuild';
import { createTestApp, type TestApp } from '../../helpers/app-fixture';
import { runTeamCommand } from '../../helpers/projector-fixtures';

/** The lag of the team projection on one partition, or undefined when it has no sample. */
const teamLag = (lag: readonly ProjectorLag[], partition: number) =>
  lag.find((sample) => sample.projection === fantasyTeamProjection.name && sample.partition === partition)
    ?.entriesBehind;

/**
 * readProjectorLag against a real Redis, with no projector running: batches are applied by hand,
 * so each step's lag is known exactly.
 */
describe('Projector lag', () => {
  let subject: TestApp;
  let teamId: string;
  let partition: number;
  let head: number;

  beforeEach(async () => {
    subject = await createTestApp();
    teamId = randomUUID();
    partition = partitionOf(teamId);
    const { commands } = subject.services;
    await runTeamCommand(
      commands,
      teamId,
      { type: 'CreateFantasyTeam', data: { name: 'Lag', season: '2026' } },
      'owner',
    );
    await runTeamCommand(
      commands,
      teamId,
      { type: 'LinkFantasyTeam', data: { fantasyTeamExternalId: 1, fantasyUserId: 2 } },
      'owner',
    );
    await runTeamCommand(
      commands,
      teamId,
      { type: 'UnlinkFantasyTeam', data: { unlinkReason: null } },
      'owner',
    );
    head = await subject.redis.xlen(subject.services.keys.logPartition(partition));
  });
  afterEach(() => subject.close());

  const lagNow = () => readProjectorLag(subject.redis, subject.services.keys, ALL_PROJECTIONS);
  const applyBatch = (checkpoint: string, batchSize: number) =>
    applyNextBatch(
      subject.redis,
      subject.services.keys,
      fantasyTeamProjection,
      partition,
      checkpoint,
      batchSize,
    );

  it('When nothing is projected yet, then every (projection, partition) is behind by its whole log partition', async () => {
    expect(head).toBeGreaterThanOrEqual(3);
    const lag = await lagNow();
    expect(lag).toHaveLength(ALL_PROJECTIONS.length * LOG_PARTITIONS);
    for (const sample of lag) {
      expect(sample.entriesBehind).toBe(
        await subject.redis.xlen(subject.services.keys.logPartition(sample.partition)),
      );
    }
  });

  it('When batches are applied, then the lag drops by the entries each one covered, to 0', async () => {
    const first = await applyBatch('0-0', 2);
    if (first === 'fenced') throw new Error('fenced');
    expect(teamLag(await lagNow(), partition)).toBe(head - 2);

    const rest = await applyBatch(first.checkpoint, 1000);
    if (rest === 'fenced') throw new Error('fenced');
    expect(teamLag(await lagNow(), partition)).toBe(0);

    // One more event: one behind again.
    await runTeamCommand(
      subject.services.commands,
      teamId,
      { type: 'LinkFantasyTeam', data: { fantasyTeamExternalId: 3, fantasyUserId: 4 } },
      'owner',
    );
    expect(teamLag(await lagNow(), partition)).toBe(1);
  });

  it('When a fenced batch is refused, then the count does not move', async () => {
    const first = await applyBatch('0-0', 2);
    if (first === 'fenced') throw new Error('fenced');
    // A batch read after a checkpoint that is no longer current (another replica moved it).
    expect(await applyBatch('0-0', 1000)).toBe('fenced');
    expect(teamLag(await lagNow(), partition)).toBe(head - 2);
  });

  it('When a checkpoint predates the applied count, then that partition has no lag sample until a rebuild', async () => {
    const first = await applyBatch('0-0', 1000);
    if (first === 'fenced') throw new Error('fenced');
    const { keys } = subject.services;
    await subject.redis.del(
      keys.projectionAppliedCount(fantasyTeamProjection.checkpointKey(keys, partition)),
    );
    expect(teamLag(await lagNow(), partition)).toBeUndefined();

    await rebuildProjection(subject.redis, keys, fantasyTeamProjection);
    const lag = await lagNow();
    expect(lag.filter((sample) => sample.projection === fantasyTeamProjection.name)).toHaveLength(
      LOG_PARTITIONS,
    );
    expect(teamLag(lag, partition)).toBe(0);
  });
});
