import { randomUUID } from 'node:crypto';

import keySlot from 'cluster-key-slot';

import { fantasyTeamProjection } from '../../shared/fantasy-team/fantasy-team.projection';
import { IMPORT_QUEUE_NAME } from '../../shared/importers/import-queue';
import { createKeys } from '../../shared/redis/keys';
import { LOG_PARTITIONS, partitionOf } from '../../shared/redis/partitions';
import { playersProjection } from '../../shared/sport/players.projection';
import { seasonsProjection } from '../../shared/sport/seasons.projection';
import type { UserView } from '../../shared/user/user-view';
import { usersProjection } from '../../shared/user/users.projection';
import { ALL_PROJECTIONS } from '../../workers/projector/all-projections';

/**
 * Redis Cluster refuses a script or a multi-key command whose keys lie in different hash slots
 * (CROSSSLOT). These tests hold the key layout to that for every such call the service makes,
 * with the slot function ioredis itself routes by, so a standalone run catches a layout mistake
 * before the cluster suite (`npm run test:cluster`) does.
 */
const keys = createKeys('fts:');
const ids = Array.from({ length: 200 }, () => randomUUID());
const SAMPLE_USER: UserView = {
  id: randomUUID(),
  email: 'slot@example.com',
  userName: 'slot',
  userType: 'Human',
  roles: ['Member'],
  firstName: null,
  lastName: null,
  emailVerified: false,
  disabled: false,
  createdAt: '2026-01-01T00:00:00.000Z',
  updatedAt: '2026-01-01T00:00:00.000Z',
  version: 1,
};

function slotsOf(...keysOfOneCall: string[]): Set<number> {
  return new Set(keysOfOneCall.map((key) => keySlot(key)));
}

describe('The key layout on Redis Cluster', () => {
  it('When an aggregate is appended to (append-events-6.lua, lock-and-load-3.lua), then its stream, log partition, record, lock and request ids share one slot', () => {
    for (const id of ids) {
      const slots = slotsOf(
        keys.aggregateStream('fantasy-team', id),
        keys.logPartition(partitionOf(id)),
        keys.aggregateRecord('fantasy-team', id),
        keys.aggregateLock('fantasy-team', id),
        keys.aggregateRequests('fantasy-team', id),
        keys.aggregateRequestTimes('fantasy-team', id),
      );
      expect(slots.size).toBe(1);
    }
  });

  it('When a log partition is rewritten (swap-log-partition-2.lua), then the partition and its copy share one slot', () => {
    for (let partition = 0; partition < LOG_PARTITIONS; partition++) {
      expect(slotsOf(keys.logPartition(partition), keys.logPartitionRewrite(partition)).size).toBe(1);
    }
  });

  it('When an aggregate id holds braces of its own, then its keys still hash by the partition tag', () => {
    const id = 'team-{p99}-{x}';
    expect(slotsOf(keys.aggregateStream('user', id), keys.logPartition(partitionOf(id))).size).toBe(1);
  });

  it('When a team projection batch is applied (apply-projection-batch-n.lua), then the documents of one partition and its checkpoint share one slot', () => {
    for (let partition = 0; partition < LOG_PARTITIONS; partition++) {
      const documents = ids
        .filter((id) => partitionOf(id) === partition)
        .map((id) => fantasyTeamProjection.documentKey(keys, id));
      expect(documents.length).toBeGreaterThan(0);
      expect(slotsOf(fantasyTeamProjection.checkpointKey(keys, partition), ...documents).size).toBe(1);
    }
  });

  it('When a sport projection batch is applied, then every sport key (documents, indexes, every checkpoint) shares one slot', () => {
    const sportKeys: string[] = [];
    // Every builder under keys.sport, called with sample arguments: a key added there later is covered too.
    for (const build of Object.values(keys.sport) as ((
      ...args: (string | number)[]
    ) => string | string[])[]) {
      for (const sample of ['2026', randomUUID(), 'latest']) sportKeys.push(...[build(sample, 7)].flat());
    }
    for (const projection of [playersProjection, seasonsProjection]) {
      for (let partition = 0; partition < LOG_PARTITIONS; partition++) {
        sportKeys.push(projection.checkpointKey(keys, partition));
      }
      for (const id of ids.slice(0, 20)) sportKeys.push(projection.documentKey(keys, id));
    }
    expect(slotsOf(...sportKeys).size).toBe(1);
  });

  it("When a users projection batch of one partition is applied, then its checkpoint, the documents and every e-mail index entry of its accounts share the partition's slot", () => {
    const users = Array.from({ length: 400 }, (_, n) => ({
      ...SAMPLE_USER,
      id: randomUUID(),
      email: `slot${n}@example.com`,
      roles: n % 2 ? (['Member'] as const) : (['Admin', 'UserManager', 'Member', 'ServiceAccount'] as const),
      userType: n % 3 ? ('Human' as const) : ('ServiceAccount' as const),
      disabled: n % 5 === 0,
    }));
    const slotsSeen = new Set<number>();
    for (let partition = 0; partition < LOG_PARTITIONS; partition++) {
      const batchKeys = [usersProjection.checkpointKey(keys, partition)];
      batchKeys.push(keys.projectionAppliedCount(batchKeys[0] ?? ''));
      for (const user of users.filter((candidate) => partitionOf(candidate.id) === partition)) {
        batchKeys.push(usersProjection.documentKey(keys, user.id));
        batchKeys.push(...(usersProjection.indexEntries?.(user, keys) ?? []).map((entry) => entry.key));
      }
      expect(batchKeys.length).toBeGreaterThan(2);
      // The read script finds a document as documentsIn + id: the same key.
      const user = users.find((candidate) => partitionOf(candidate.id) === partition);
      expect(usersProjection.documentsIn?.(keys, partition) + (user?.id ?? '')).toBe(
        usersProjection.documentKey(keys, user?.id ?? ''),
      );
      const slots = slotsOf(...batchKeys);
      expect(slots).toEqual(slotsOf(keys.logPartition(partition)));
      for (const slot of slots) slotsSeen.add(slot);
    }
    // Spread like the aggregates: 16 slots, none of them the sport projection's.
    expect(slotsSeen.size).toBe(LOG_PARTITIONS);
    expect(slotsSeen.has(keySlot(keys.sport.playersByFeedId()))).toBe(false);
  });

  it('When every projection is listed, then each is covered by one of the tests above', () => {
    expect(new Set(ALL_PROJECTIONS)).toEqual(
      new Set([fantasyTeamProjection, playersProjection, seasonsProjection, usersProjection]),
    );
  });

  it('When a High import claims the inline slot (claim-inline-import-6.lua), then the BullMQ queue keys and the claim share one slot', () => {
    // BullMQ names a queue's keys `<prefix>:<queue>:<type>`.
    const queueKeys = ['wait', 'active', 'prioritized', 'delayed', 'paused', 'meta', 'id', 'events'].map(
      (type) => `${keys.importQueuePrefix()}:${IMPORT_QUEUE_NAME}:${type}`,
    );
    expect(slotsOf(...queueKeys, keys.importInlineClaim()).size).toBe(1);
  });

  it('When an import record is read with its progress (one MGET), then both keys share one slot', () => {
    for (const id of ids.slice(0, 50)) {
      expect(slotsOf(keys.importResult(id), keys.importProgress(id)).size).toBe(1);
    }
  });

  it('When the 16 log partitions are placed on a three-master cluster, then every master holds some of them', () => {
    // redis-cli --cluster create splits the 16384 slots into three equal ranges.
    const masterOf = (slot: number) => Math.min(2, Math.floor(slot / Math.ceil(16_384 / 3)));
    const masters = new Set(
      Array.from({ length: LOG_PARTITIONS }, (_, p) => masterOf(keySlot(keys.logPartition(p)))),
    );
    expect(masters.size).toBe(3);
  });
});
