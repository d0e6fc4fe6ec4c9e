import { randomUUID } from 'node:crypto';

import { SYSTEM_ACTOR } from '../../../shared/accounts/account';
import { partitionCounters } from '../../../shared/event-stream/log-reader';
import { partitionsTrimmedPast, trimLog } from '../../../shared/event-stream/log-retention';
import { LOG_PARTITIONS, partitionOf } from '../../../shared/redis/partitions';
import { webhookSubscriptionDecider } from '../../../shared/webhook-subscription/webhook-subscription.decider';
import { ALL_PROJECTIONS } from '../../../workers/projector/all-projections';
import { applyNextBatch } from '../../../workers/projector/apply-batch';
import { NO_CHECKPOINT } from '../../../workers/projector/batch-plan';
import { projectionsLogConsumer } from '../../../workers/projector/projections-log-consumer';
import { readProjectorLag } from '../../../workers/projector/projector-lag';
import { rebuildProjection } from '../../../workers/projector/rebuild';
import { webhookLogConsumer } from '../../../workers/webhooks/webhook-log-consumer';
import { acceptedTeamCommand, type Core, coreFixture } from '../../helpers/core-fixture';
import { redisState } from '../../helpers/redis-state';

const { buildCore } = coreFixture();

const context = () => ({ now: new Date(), actorUserId: SYSTEM_ACTOR.userId, actorRoles: ['Admin'] });
const metadata = { actorUserId: SYSTEM_ACTOR.userId, requestId: null, correlationId: 'retention-test' };

const team = acceptedTeamCommand;

/** Teams created, linked, unlinked, linked, unlinked; and accounts created and disabled. */
async function someHistory(core: Core): Promise<string[]> {
  const teamIds = Array.from({ length: 12 }, () => randomUUID());
  for (const [n, id] of teamIds.entries()) {
    await team(core, id, { type: 'CreateFantasyTeam', data: { name: `Team ${n}`, season: '2026' } });
    await team(core, id, {
      type: 'LinkFantasyTeam',
      data: { fantasyTeamExternalId: n + 1, fantasyUserId: 100 + n },
    });
    await team(core, id, { type: 'UnlinkFantasyTeam', data: { unlinkReason: null } });
    await team(core, id, {
      type: 'LinkFantasyTeam',
      data: { fantasyTeamExternalId: n + 50, fantasyUserId: 200 + n },
    });
  }
  for (let n = 0; n < 6; n++) {
    const tag = randomUUID().slice(0, 8);
    await core.accounts.createUser(
      SYSTEM_ACTOR,
      {
        email: `retained-${tag}@example.com`,
        userName: `retained-${tag}`,
        firstName: `First${tag}`,
        lastName: `Last${tag}`,
        userType: 'Human',
        roles: ['Member'],
      },
      { requestId: null, correlationId: randomUUID() },
    );
  }
  return teamIds;
}

/** Every projection caught up with the log, as the projector leaves them. */
async function project(core: Core): Promise<void> {
  for (const projection of ALL_PROJECTIONS) {
    for (let partition = 0; partition < LOG_PARTITIONS; partition++) {
      let checkpoint =
        (await core.redis.get(projection.checkpointKey(core.keys, partition))) ?? NO_CHECKPOINT;
      for (;;) {
        const result = await applyNextBatch(core.redis, core.keys, projection, partition, checkpoint, 7);
        if (result === 'fenced') throw new Error('nothing else applies batches here');
        if (result.entries === 0) break;
        checkpoint = result.checkpoint;
      }
    }
  }
}

/** Every key of every projection (documents, indexes, checkpoints, counts), each value's digest. */
async function projectionKeys(core: Core): Promise<Record<string, string>> {
  const state = await redisState(core.redis, core.config.redisKeyPrefix);
  return Object.fromEntries(
    Object.entries(state).filter(
      ([key]) =>
        !/:(stream|record|log|lock|requests|request-times|lease)(:|$)/.test(key) && !key.includes(':log:'),
    ),
  );
}

async function logLength(core: Core): Promise<number> {
  const lengths = await Promise.all(
    Array.from({ length: LOG_PARTITIONS }, (_, partition) =>
      core.redis.xlen(core.keys.logPartition(partition)),
    ),
  );
  return lengths.reduce((sum, length) => sum + length, 0);
}

const consumers = (core: Core) => [
  projectionsLogConsumer(core.redis, core.keys, ALL_PROJECTIONS),
  webhookLogConsumer(core.redis, core.keys),
];

describe('Log retention (LOG_RETENTION)', () => {
  it('When the log is trimmed, then every projection rebuilt from the aggregate streams is byte-identical to the one built from the whole log, and its lag reads 0', async () => {
    const core = await buildCore();
    await someHistory(core);
    await project(core);
    const live = await projectionKeys(core);
    expect(Object.keys(live).length).toBeGreaterThan(20);

    // Rebuilt with the whole log there.
    for (const projection of ALL_PROJECTIONS) await rebuildProjection(core.redis, core.keys, projection);
    expect(await projectionKeys(core)).toEqual(live);

    // Trimmed: everything is older than a 0 ms window and every projection has passed it.
    const before = await logLength(core);
    const trims = await trimLog(core.redis, core.keys, consumers(core), 0, Date.now() + 1_000);
    const removed = trims.reduce((sum, trim) => sum + trim.removed, 0);
    expect(removed).toBeGreaterThan(0);
    expect(await logLength(core)).toBe(before - removed);

    for (const projection of ALL_PROJECTIONS) await rebuildProjection(core.redis, core.keys, projection);
    expect(await projectionKeys(core)).toEqual(live);
    const lag = await readProjectorLag(core.redis, core.keys, ALL_PROJECTIONS);
    expect(lag.filter((entry) => entry.entriesBehind !== 0)).toEqual([]);

    // And it goes on from there: a new event reaches the rebuilt projection.
    const later = randomUUID();
    await team(core, later, { type: 'CreateFantasyTeam', data: { name: 'Later', season: '2026' } });
    await project(core);
    expect(await core.redis.get(core.keys.projectionDocument('fantasy-team', later))).toContain('"Later"');
  });

  it('When a projection has not passed an entry, then the entry is kept however old it is', async () => {
    const core = await buildCore();
    const [first] = await someHistory(core);
    await project(core);
    const partition = partitionOf(first as string);
    const checkpointKey = ALL_PROJECTIONS[0]?.checkpointKey(core.keys, partition) as string;
    const entries = await core.redis.xrange(core.keys.logPartition(partition), '-', '+');
    expect(entries.length).toBeGreaterThan(2);
    // The fantasy-team projection stands at the partition's second entry.
    const held = entries[1]?.[0] as string;
    await core.redis.set(checkpointKey, held);

    await trimLog(core.redis, core.keys, consumers(core), 0, Date.now() + 1_000);
    const kept = await core.redis.xrange(core.keys.logPartition(partition), '-', '+');
    expect(kept.map(([id]) => id)).toEqual(entries.slice(1).map(([id]) => id));
    // A reader at the first entry would skip nothing that is gone; one before it would.
    const at = (id: string) =>
      Array.from({ length: LOG_PARTITIONS }, (_, p) =>
        p === partition
          ? { ms: Number(id.split('-')[0]), seq: Number(id.split('-')[1]) }
          : { ms: Number.MAX_SAFE_INTEGER, seq: 0 },
      );
    expect(await partitionsTrimmedPast(core.redis, core.keys, at(entries[0]?.[0] as string))).toEqual([]);
    expect(await partitionsTrimmedPast(core.redis, core.keys, at('0-0'))).toEqual([partition]);
  });

  it('When the window has not passed, or a webhook subscription has not read an entry, then nothing of it is trimmed', async () => {
    const core = await buildCore();
    await someHistory(core);
    await project(core);
    const before = await logLength(core);
    // A day's window: everything is younger.
    const trims = await trimLog(core.redis, core.keys, consumers(core), 86_400_000);
    expect(trims.every((trim) => trim.removed === 0)).toBe(true);

    // A subscription created before every entry, whose dispatcher has not run: it needs them all.
    const subscriptionId = randomUUID();
    const created = await core.commands.handle(webhookSubscriptionDecider, {
      aggregateId: subscriptionId,
      command: {
        type: 'CreateWebhookSubscription',
        data: { url: 'https://hooks.example.com/in', eventTypes: ['*'], description: null },
      },
      context: { ...context(), now: new Date(Date.now() - 60_000) },
      metadata,
    });
    expect(created.accepted).toBe(true);
    await core.redis.sadd(core.keys.webhookSubscriptions(), subscriptionId);
    const blocked = await trimLog(core.redis, core.keys, consumers(core), 0, Date.now() + 1_000);
    expect(blocked.every((trim) => trim.removed === 0)).toBe(true);
    expect(await logLength(core)).toBe(before + 1);

    // Its cursors move past everything (as its deliveries would): now the log goes.
    for (let partition = 0; partition < LOG_PARTITIONS; partition++) {
      const { lastId } = await partitionCounters(core.redis, core.keys.logPartition(partition));
      await core.redis.hset(core.keys.webhookCursor(subscriptionId, partition), 'checkpoint', lastId);
    }
    await project(core);
    const trimmed = await trimLog(core.redis, core.keys, consumers(core), 0, Date.now() + 1_000);
    expect(trimmed.reduce((sum, trim) => sum + trim.removed, 0)).toBeGreaterThan(0);
    // Each partition keeps the entry its slowest reader stands at, at most.
    expect(await logLength(core)).toBeLessThanOrEqual(LOG_PARTITIONS);
  });
});
