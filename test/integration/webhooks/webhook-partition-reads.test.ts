/**
 * PartitionReads: the webhook dispatcher reads a log partition once for all the subscriptions'
 * lanes that stand at the same entry, and never serves a read that may miss an announced append.
 * Real Redis; the spy only counts the XRANGEs of the log partition the reads send (they still go to
 * Redis).
 */
import { randomUUID } from 'node:crypto';

import { SYSTEM_ACTOR } from '../../../shared/accounts/account';
import { fantasyTeamDecider } from '../../../shared/fantasy-team/fantasy-team.decider';
import { partitionOf } from '../../../shared/redis/partitions';
import { PartitionReads } from '../../../workers/webhooks/partition-reads';
import { type Core, coreFixture } from '../../helpers/core-fixture';

const { buildCore } = coreFixture();

const BATCH = 3;
const START = '0-0';

describe('Reading a log partition for the webhook lanes', () => {
  let core: Core;
  /** Team ids that all live in one partition. */
  let teams: string[];
  let partition: number;
  let reads: PartitionReads;
  let xranges: jest.SpyInstance;

  const create = (teamId: string) =>
    core.commands.handle(fantasyTeamDecider, {
      aggregateId: teamId,
      command: { type: 'CreateFantasyTeam', data: { name: 'Lane team', season: '2026' } },
      context: { now: new Date(), actorUserId: SYSTEM_ACTOR.userId, actorRoles: ['Admin'] },
      metadata: { actorUserId: SYSTEM_ACTOR.userId, requestId: null, correlationId: 'partition-reads' },
    });

  beforeEach(async () => {
    core = await buildCore();
    const first = randomUUID();
    partition = partitionOf(first);
    teams = [first];
    while (teams.length < 6) {
      const id = randomUUID();
      if (partitionOf(id) === partition) teams.push(id);
    }
    reads = new PartitionReads(core.redis, core.keys, BATCH);
    xranges = jest.spyOn(core.redis, 'xrange');
  });
  afterEach(() => xranges.mockRestore());
  /** XRANGEs of the log partition (reading the events its entries refer to is not counted). */
  const logReads = () =>
    xranges.mock.calls.filter(([key]) => key === core.keys.logPartition(partition)).length;

  it('When the lanes of several subscriptions ask for the same entries at once, then one XRANGE serves them all', async () => {
    await create(teams[0] as string);
    await create(teams[1] as string);
    const asked = await Promise.all(Array.from({ length: 10 }, () => reads.after(partition, START)));
    expect(logReads()).toBe(1);
    for (const batch of asked) {
      expect(batch.entries.map((entry) => entry.event.aggregateId)).toEqual([teams[0], teams[1]]);
      expect(batch.more).toBe(false);
    }
    // A lane that delivered the first entry is served the rest from the same read.
    const rest = await reads.after(partition, asked[0]?.entries[0]?.id as string);
    expect(rest.entries.map((entry) => entry.event.aggregateId)).toEqual([teams[1]]);
    expect(logReads()).toBe(1);
  });

  it('When lanes are served by one read, then what must be read after the entries is read once, after them, for all', async () => {
    await create(teams[0] as string);
    const calls: number[] = [];
    const withVersions = new PartitionReads(core.redis, core.keys, BATCH, () => {
      calls.push(logReads()); // log XRANGEs sent by then
      return Promise.resolve(new Map([['subscription', 7]]));
    });
    const asked = await Promise.all(Array.from({ length: 5 }, () => withVersions.after(partition, START)));
    expect(calls).toEqual([1]);
    for (const batch of asked) expect(batch.readAfter.get('subscription')).toBe(7);
  });

  it('When an append is announced, then the next ask reads again and sees it', async () => {
    await create(teams[0] as string);
    const before = await reads.after(partition, START);
    const last = before.entries.at(-1)?.id as string;
    expect((await reads.after(partition, last)).entries).toEqual([]);
    await create(teams[1] as string);
    reads.announced(partition);
    const after = await reads.after(partition, last);
    expect(after.entries.map((entry) => entry.event.aggregateId)).toEqual([teams[1]]);
  });

  it('When an append is announced while a read is in flight, then that read is not kept for later asks', async () => {
    await create(teams[0] as string);
    const inFlight = reads.after(partition, START);
    reads.announced(partition);
    await inFlight;
    await reads.after(partition, START);
    expect(logReads()).toBe(2);
  });

  it('When a read fills its batch, then it says more may follow, and an ask past it reads on from Redis', async () => {
    for (const team of teams.slice(0, 5)) await create(team);
    const first = await reads.after(partition, START);
    expect(first.entries).toHaveLength(BATCH);
    expect(first.more).toBe(true);
    const next = await reads.after(partition, first.entries.at(-1)?.id as string);
    expect(next.entries.map((entry) => entry.event.aggregateId)).toEqual(teams.slice(3, 5));
    expect(logReads()).toBe(2);
  });

  it('When a lane asks from an entry the last read does not hold, then it reads for itself', async () => {
    for (const team of teams.slice(0, 2)) await create(team);
    const all = await reads.after(partition, START);
    const [first] = all.entries;
    const fresh = new PartitionReads(core.redis, core.keys, BATCH);
    await fresh.after(partition, first?.id as string);
    await fresh.after(partition, START);
    expect(logReads()).toBe(3);
  });
});
