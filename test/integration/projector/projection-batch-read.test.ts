import { randomUUID } from 'node:crypto';

import { resolveLogEntries } from '../../../shared/event-stream/log-reader';
import { fantasyTeamProjection } from '../../../shared/fantasy-team/fantasy-team.projection';
import { partitionOf } from '../../../shared/redis/partitions';
import { registerScripts } from '../../../shared/redis/scripts';
import { applyNextBatch, readCheckpoint } from '../../../workers/projector/apply-batch';
import { NO_CHECKPOINT } from '../../../workers/projector/batch-plan';
import { PROJECTION_SCRIPTS } from '../../../workers/projector/projection.scripts';
import { acceptedTeamCommand, type Core, coreFixture } from '../../helpers/core-fixture';

const { buildCore } = coreFixture();

/** Two team ids of one log partition (ids are hashed to partitions: draw until two meet). */
function teamsOfOnePartition(): [string, string, number] {
  const first = randomUUID();
  for (;;) {
    const second = randomUUID();
    if (partitionOf(second) === partitionOf(first)) return [first, second, partitionOf(first)];
  }
}

/** Creates the team `teamId` named `name` (its first event, version 1). */
function createTeam(core: Core, teamId: string, name: string): Promise<unknown> {
  return acceptedTeamCommand(core, teamId, { type: 'CreateFantasyTeam', data: { name, season: '2026' } });
}

/** The fantasy-team document of `teamId` as stored, parsed. */
async function documentOf(core: Core, teamId: string): Promise<unknown> {
  const json = await core.redis.get(fantasyTeamProjection.documentKey(core.keys, teamId));
  return json === null ? null : JSON.parse(json);
}

describe("A projection's batch read (the events and documents in the script that reads the log)", () => {
  it('When a batch holds references, an entry of another type and a copy of its event (before ADR 0020), then one script reads it and the projection applies its own events in log order', async () => {
    const core = await buildCore();
    const [linkedTeam, copiedTeam, partition] = teamsOfOnePartition();
    await createTeam(core, linkedTeam, 'Ref');
    await createTeam(core, copiedTeam, 'Copy');
    await acceptedTeamCommand(core, linkedTeam, {
      type: 'LinkFantasyTeam',
      data: { fantasyTeamExternalId: 7, fantasyUserId: 8 },
    });
    // The log rewritten: the second team's entry as a copy of its event, and between them an entry
    // of another type whose stream does not exist (reading it would fail the batch).
    const log = core.keys.logPartition(partition);
    const entries = await core.redis.xrange(log, '-', '+');
    const [created, copied, linked] = await resolveLogEntries(core.redis, core.keys, entries);
    await core.redis.del(log);
    await core.redis.xadd(log, '1-1', ...(entries[0]?.[1] ?? []));
    await core.redis.xadd(log, '1-2', 'type', 'user', 'id', randomUUID(), 'version', '1');
    await core.redis.xadd(log, '1-3', 'event', JSON.stringify(copied));
    await core.redis.xadd(log, '1-4', ...(entries[2]?.[1] ?? []));

    registerScripts(core.redis, PROJECTION_SCRIPTS);
    const streamReads = jest.spyOn(core.redis, 'xrange');
    const documentReads = jest.spyOn(core.redis, 'mget');
    const batchReads = jest.spyOn(core.redis, 'readProjectionBatch');
    try {
      const result = await applyNextBatch(
        core.redis,
        core.keys,
        fantasyTeamProjection,
        partition,
        NO_CHECKPOINT,
        200,
      );
      expect(result).toMatchObject({
        entries: 4,
        checkpoint: '1-4',
        projected: new Map([
          [linkedTeam, 2],
          [copiedTeam, 1],
        ]),
      });
      // The projection's own events, in log order (the entry of another type is skipped).
      const applied = result === 'fenced' ? [] : result.events;
      expect(applied.map((event) => [event.aggregateId, event.version])).toEqual([
        [linkedTeam, 1],
        [copiedTeam, 1],
        [linkedTeam, 2],
      ]);
      expect(batchReads).toHaveBeenCalledTimes(1);
      expect(streamReads).not.toHaveBeenCalled();
      // The copy names its team only once read: that batch reads its documents after it (ADR 0006).
      expect(documentReads).toHaveBeenCalledTimes(1);
    } finally {
      streamReads.mockRestore();
      documentReads.mockRestore();
      batchReads.mockRestore();
    }
    expect(await documentOf(core, linkedTeam)).toMatchObject({
      id: linkedTeam,
      version: 2,
      fantasyTeamExternalId: 7,
      name: 'Ref',
    });
    expect(await documentOf(core, copiedTeam)).toMatchObject({ id: copiedTeam, version: 1, name: 'Copy' });
    expect([created?.version, linked?.version]).toEqual([1, 2]);
  });

  it('When a batch holds only references, then its documents are read in the same script: no other read', async () => {
    const core = await buildCore();
    const [first, second, partition] = teamsOfOnePartition();
    await createTeam(core, first, 'One');
    await createTeam(core, second, 'Two');
    const entries = await core.redis.xrange(core.keys.logPartition(partition), '-', '+');
    const checkpoint = entries[0]?.[0] ?? NO_CHECKPOINT;
    // The first team's document, as an earlier batch left it: the next batch must evolve it, not
    // start it again (a document not read would be planned as absent).
    await applyNextBatch(core.redis, core.keys, fantasyTeamProjection, partition, NO_CHECKPOINT, 1);
    await acceptedTeamCommand(core, first, {
      type: 'LinkFantasyTeam',
      data: { fantasyTeamExternalId: 3, fantasyUserId: 4 },
    });

    const reads = ['xrange', 'mget', 'get', 'exists', 'hmget'] as const;
    const spies = reads.map((command) => jest.spyOn(core.redis, command));
    try {
      const result = await applyNextBatch(
        core.redis,
        core.keys,
        fantasyTeamProjection,
        partition,
        checkpoint,
        200,
      );
      expect(result).toMatchObject({ entries: 2 });
      for (const spy of spies) expect(spy).not.toHaveBeenCalled();
    } finally {
      for (const spy of spies) spy.mockRestore();
    }
    expect(await documentOf(core, first)).toMatchObject({
      name: 'One',
      version: 2,
      fantasyTeamExternalId: 3,
    });
    expect(await documentOf(core, second)).toMatchObject({ name: 'Two', version: 1 });
  });

  it('When a log entry refers to an event its stream does not hold, then the batch fails and its checkpoint stays', async () => {
    const core = await buildCore();
    const [team, , partition] = teamsOfOnePartition();
    await createTeam(core, team, 'Gap');
    await core.redis.xadd(
      core.keys.logPartition(partition),
      '*',
      'type',
      'fantasy-team',
      'id',
      team,
      'version',
      '9',
    );
    await expect(
      applyNextBatch(core.redis, core.keys, fantasyTeamProjection, partition, NO_CHECKPOINT, 200),
    ).rejects.toThrow(`refers to fantasy-team ${team} version 9, which its stream does not hold`);
    expect(await readCheckpoint(core.redis, core.keys, fantasyTeamProjection, partition)).toBe(NO_CHECKPOINT);
  });

  it("When a team's event lies behind more entries of other types than a batch applies, then one read steps over them and applies it, up to its entries limit (issue 43)", async () => {
    const core = await buildCore();
    const [team, other, partition] = teamsOfOnePartition();
    const log = core.keys.logPartition(partition);
    // 450 entries of another type (an import's accounts; their streams are never read), then the team.
    for (let i = 0; i < 450; i++)
      await core.redis.xadd(log, '*', 'type', 'user', 'id', randomUUID(), 'version', '1');
    await createTeam(core, team, 'Behind');
    await createTeam(core, other, 'After');

    // Without the larger limit a batch is batchSize entries of any type, as rebuilds read it.
    const bounded = await applyNextBatch(
      core.redis,
      core.keys,
      fantasyTeamProjection,
      partition,
      NO_CHECKPOINT,
      200,
    );
    expect(bounded).toMatchObject({ entries: 200, full: true, projected: new Map() });
    const checkpoint = bounded === 'fenced' ? NO_CHECKPOINT : bounded.checkpoint;

    const stepped = await applyNextBatch(
      core.redis,
      core.keys,
      fantasyTeamProjection,
      partition,
      checkpoint,
      1,
      undefined,
      2_000,
    );
    // The other 250 stepped over and stopped at its one event of the type (batchSize 1): the next
    // entry waits, so the batch is full.
    expect(stepped).toMatchObject({ entries: 251, full: true, projected: new Map([[team, 1]]) });
    expect(await documentOf(core, team)).toMatchObject({ name: 'Behind', version: 1 });
    expect(await documentOf(core, other)).toBeNull();
  });
});
