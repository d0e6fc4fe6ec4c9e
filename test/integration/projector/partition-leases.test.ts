import { randomUUID } from 'node:crypto';

import { closeConnections, createRedisConnection, waitForRedis } from '../../../shared/redis/connections';
import { LOG_PARTITIONS } from '../../../shared/redis/partitions';
import { registerScripts } from '../../../shared/redis/scripts';
import { ALL_PROJECTIONS } from '../../../workers/projector/all-projections';
import { PartitionLeases } from '../../../workers/projector/partition-leases';
import { PROJECTION_SCRIPTS } from '../../../workers/projector/projection.scripts';
import { createTestApp, type TestApp, testRedisEnv } from '../../helpers/app-fixture';
import { eventually } from '../../helpers/processes';
import { LossyProxy } from '../../helpers/tcp-proxy';

/**
 * Issue 43: a projector took and renewed its leases one round trip after another (64 pairs: 128
 * round trips at a start, 64 at each renewal), and its loop, which balances between passes, read
 * nothing meanwhile. On a worker whose event loop was busy (the webhook dispatcher catching up
 * beside it) each of those round trips waited its turn behind the rest. Here each round trip costs
 * ROUND_TRIP_MS (a proxy holds every answer that long): one by one, a start takes over 5 s. Single
 * server only: the proxy stands before one Redis.
 */
const ROUND_TRIP_MS = 40;
/** A few round trips' worth (a balance needs six or so), far below one per lease. */
const BOUND_MS = 1_500;
const LEASE_MS = 60_000;
const PAIRS = LOG_PARTITIONS * ALL_PROJECTIONS.length;

const onOneServer = testRedisEnv().REDIS_URL !== '' ? describe : describe.skip;

onOneServer('Partition leases balanced over a distant Redis', () => {
  let subject: TestApp;
  let proxy: LossyProxy;
  const connections: ReturnType<typeof createRedisConnection>[] = [];

  beforeAll(async () => {
    subject = await createTestApp();
    proxy = await LossyProxy.start(testRedisEnv().REDIS_URL);
  });
  afterAll(async () => {
    await closeConnections(...connections);
    await proxy.close();
    await subject.close();
  });

  async function replica(): Promise<PartitionLeases> {
    const redis = createRedisConnection({ kind: 'standalone', url: proxy.url }, 'background', subject.logger);
    connections.push(redis);
    await waitForRedis(redis, subject.logger);
    // As the projector registers them: the lease scripts.
    registerScripts(redis, PROJECTION_SCRIPTS);
    return new PartitionLeases(redis, subject.services.keys, ALL_PROJECTIONS, randomUUID(), LEASE_MS);
  }

  async function timed<T>(work: () => Promise<T>): Promise<{ value: T; ms: number }> {
    const startedAt = performance.now();
    const value = await work();
    return { value, ms: performance.now() - startedAt };
  }

  it('When a replica starts, renews, and shares with a second, then each balance takes a few round trips, and every pair has one owner', async () => {
    const first = await replica();
    proxy.replyDelayMs = ROUND_TRIP_MS;

    const start = await timed(() => first.balance());
    expect(start.value).toHaveLength(PAIRS);
    expect(first.owned.size).toBe(PAIRS);
    expect(start.ms).toBeLessThan(BOUND_MS);

    const renewal = await timed(() => first.balance());
    expect(renewal.value).toEqual([]);
    expect(first.owned.size).toBe(PAIRS);
    expect(renewal.ms).toBeLessThan(BOUND_MS);

    // A second replica finds every lease taken; the first gives half back at its next balance, and
    // the second takes them at its own.
    const second = await replica();
    expect(await second.balance()).toEqual([]);
    const shared = await timed(() => first.balance());
    expect(shared.ms).toBeLessThan(BOUND_MS);
    expect(first.owned.size).toBe(PAIRS / 2);
    // The first releases what it gave back once its work there has ended (at once: a bare lease).
    const taken: string[] = [];
    await eventually(async () => {
      taken.push(...(await second.balance()));
      return second.owned.size === PAIRS / 2;
    });
    expect(taken).toHaveLength(PAIRS / 2);
    const owners = [...first.owned.keys(), ...second.owned.keys()];
    expect(new Set(owners).size).toBe(PAIRS);
  }, 60_000);
});
