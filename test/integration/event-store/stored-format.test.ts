import { randomUUID } from 'node:crypto';

import { SYSTEM_ACTOR } from '../../../shared/accounts/account';
import type { EventEnvelope } from '../../../shared/event-store/envelope';
import { beginningPosition } from '../../../shared/event-stream/log-position';
import { type LogEntry, readLogAfter } from '../../../shared/event-stream/log-reader';
import { fantasyTeamDecider } from '../../../shared/fantasy-team/fantasy-team.decider';
import { partitionOf } from '../../../shared/redis/partitions';
import { userDecider } from '../../../shared/user/user.decider';
import { ALL_PROJECTIONS } from '../../../workers/projector/all-projections';
import { rebuildProjection } from '../../../workers/projector/rebuild';
import { acceptedTeamCommand, type Core, coreFixture } from '../../helpers/core-fixture';
import { rewriteInPre0020Format } from '../../helpers/pre-0020-format';
import { redisState } from '../../helpers/redis-state';

const { buildCore } = coreFixture();

const TEAM = fantasyTeamDecider.aggregateType;

const team = acceptedTeamCommand;

/** The whole log, every partition from its start, opened, in the order a reader gets it. */
async function wholeLog(core: Core): Promise<LogEntry[]> {
  const all: LogEntry[] = [];
  let from = new Map(beginningPosition().map((id, partition) => [partition, id]));
  for (;;) {
    const batch = await readLogAfter(
      core.redis,
      core.keys,
      (envelopes) => core.store.opened(envelopes),
      from,
      3,
    );
    all.push(...batch.entries);
    if (batch.entries.length === 0) return all;
    from = new Map(from);
    for (const entry of batch.entries) from.set(entry.partition, entry.id);
  }
}

async function projectionKeys(core: Core): Promise<Record<string, string>> {
  const state = await redisState(core.redis, core.config.redisKeyPrefix);
  return Object.fromEntries(
    Object.entries(state).filter(
      ([key]) => /:(projection|checkpoint|user|users):/.test(key) && !/:(stream|record):/.test(key),
    ),
  );
}

describe('Events stored before ADR 0020 (full envelopes in the streams, copies in the log)', () => {
  it('When a deployment upgrades in place, then every reader reads the old entries as the new ones, and new appends mix in', async () => {
    const core = await buildCore();
    const teamIds = [randomUUID(), randomUUID(), randomUUID()];
    for (const id of teamIds) {
      await team(core, id, { type: 'CreateFantasyTeam', data: { name: 'Old', season: '2026' } });
      await team(core, id, { type: 'LinkFantasyTeam', data: { fantasyTeamExternalId: 7, fantasyUserId: 8 } });
    }
    const tag = randomUUID().slice(0, 8);
    const created = await core.accounts.createUser(
      SYSTEM_ACTOR,
      {
        email: `format-${tag}@example.com`,
        userName: `format-${tag}`,
        firstName: `First${tag}`,
        lastName: `Last${tag}`,
        userType: 'Human',
        roles: ['Member'],
      },
      { requestId: null, correlationId: randomUUID() },
    );
    const { userId } = created;
    for (const projection of ALL_PROJECTIONS) await rebuildProjection(core.redis, core.keys, projection);

    const streams = async () =>
      Promise.all([
        ...teamIds.map((id) => core.store.readStream(TEAM, id)),
        core.store.readStream(userDecider.aggregateType, userId),
      ]);
    const readBefore = await streams();
    const logBefore = await wholeLog(core);
    const projectedBefore = await projectionKeys(core);
    expect(logBefore).toHaveLength(3 * 2 + 1);

    await rewriteInPre0020Format(core.redis, core.keys);
    // Stored as before: the log holds copies, the streams full envelopes.
    const [oldLogEntry] = await core.redis.xrange(core.keys.logPartition(partitionOf(userId)), '-', '+');
    expect(oldLogEntry?.[1][0]).toBe('event');
    const [oldStreamEntry] = await core.redis.xrange(
      core.keys.aggregateStream(TEAM, teamIds[0] as string),
      '-',
      '+',
    );
    expect(JSON.parse(oldStreamEntry?.[1][1] ?? 'null')).toMatchObject({ aggregateType: TEAM, version: 1 });
    // The user's personal fields stay sealed in the copy, as they were.
    expect(oldLogEntry?.[1][1]).not.toContain(`First${tag}`);

    expect(await streams()).toEqual(readBefore);
    expect(await wholeLog(core)).toEqual(logBefore);
    for (const projection of ALL_PROJECTIONS) await rebuildProjection(core.redis, core.keys, projection);
    expect(await projectionKeys(core)).toEqual(projectedBefore);

    // New appends to an old stream: the new entries compact, read in one sequence with the old.
    await team(core, teamIds[0] as string, { type: 'UnlinkFantasyTeam', data: { unlinkReason: null } });
    const mixed = await core.store.readStream(TEAM, teamIds[0] as string);
    expect(mixed.map((event: EventEnvelope) => [event.version, event.eventType, event.aggregateId])).toEqual([
      [1, 'FantasyTeamCreatedEvent', teamIds[0]],
      [2, 'FantasyTeamLinkedEvent', teamIds[0]],
      [3, 'FantasyTeamUnlinkedEvent', teamIds[0]],
    ]);
    const logAfter = await wholeLog(core);
    expect(logAfter.slice(0, logBefore.length)).toEqual(logBefore);
    expect(logAfter.at(-1)?.envelope).toEqual(mixed[2]);
  });
});
