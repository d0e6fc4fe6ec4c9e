/**
 * The projector killed (kill -9) in the middle of a batch: after a restart the projections equal a
 * rebuild from the log.
 *
 * A backlog of team and sport events several batches deep in every log partition, a real worker
 * process started on it and SIGKILLed as soon as its first checkpoint moves (its other batches
 * then in flight), and a second worker to finish. Every projection in ALL_PROJECTIONS must then
 * equal its rebuild from the log, key by key. test/integration/projector/projector-crash.test.ts kills a
 * worker while commands keep arriving; this one makes sure the kill lands in a batch.
 */
import { randomUUID } from 'node:crypto';

import request from 'supertest';

import type { EventEnvelope } from '../../shared/event-store/envelope';
import { fantasyTeamDecider } from '../../shared/fantasy-team/fantasy-team.decider';
import { LOG_PARTITIONS } from '../../shared/redis/partitions';
import { ALL_PROJECTIONS } from '../../workers/projector/all-projections';
import { rebuildProjection } from '../../workers/projector/rebuild';
import { createTestApp, type TestApp, testRedisEnv } from '../helpers/app-fixture';
import { eventually, killAll, type ServiceProcess, startServiceProcess } from '../helpers/processes';
import {
  actorContext,
  caughtUp,
  partitionProgress,
  scriptedCommand,
  snapshotDocuments,
  storedViews,
  teamIdsInEachPartition,
  viewFromRecord,
} from '../helpers/projector-fixtures';
import { seedPlayer } from '../helpers/seed-players';

/** Teams per log partition, each with a life of STEPS_PER_TEAM commands (most accepted). */
const TEAMS_PER_PARTITION = 10;
/** With 10 teams a partition, about 600 team events in each: three batches of 200. */
const STEPS_PER_TEAM = 70;
const PLAYERS = 300;
const ADMIN = 'projector-kill-admin@example.com';
const PASSWORD = 'projector-kill-password';

/**
 * Appends a team's whole scripted life in one fenced append: the events its commands would raise
 * one by one (the same decider), so a deep backlog costs one round trip per team.
 */
async function appendTeamLife(subject: TestApp, teamId: string, seed: number): Promise<number> {
  const owner = `owner-${seed % 7}`;
  const context = actorContext(owner);
  let state = fantasyTeamDecider.initialState;
  const events: EventEnvelope[] = [];
  const commands = [
    { type: 'CreateFantasyTeam' as const, data: { name: `Backlog ${seed}`, season: '2026' } },
    ...Array.from({ length: STEPS_PER_TEAM }, (_, step) => scriptedCommand(step, seed)),
  ];
  for (const command of commands) {
    const decision = fantasyTeamDecider.decide(command, state, context);
    if (!decision.accepted) continue;
    for (const event of decision.events) {
      state = fantasyTeamDecider.evolve(state, event);
      events.push({
        eventId: randomUUID(),
        eventType: event.type,
        aggregateType: fantasyTeamDecider.aggregateType,
        aggregateId: teamId,
        version: events.length + 1,
        occurredAt: context.now.toISOString(),
        data: event.data,
        metadata: { actorUserId: owner, requestId: null, correlationId: 'projector-kill' },
      });
    }
  }
  return subject.services.store.append({
    aggregateType: fantasyTeamDecider.aggregateType,
    aggregateId: teamId,
    expectedVersion: 0,
    events,
    state,
  });
}

describe('The projector killed in the middle of a batch', () => {
  let subject: TestApp | undefined;
  const workers: ServiceProcess[] = [];

  afterEach(async () => {
    await killAll(...workers.splice(0));
    await subject?.close();
    subject = undefined;
  });

  it('When the worker is SIGKILLed as its first checkpoint moves on a backlog several batches deep, then after a new worker catches up every projection equals its rebuild from the log', async () => {
    const app = await createTestApp();
    subject = app;
    const { redis } = app;
    const { keys } = app.services;

    // The backlog: sport events through a real PlayerSeeding import, then every team's life.
    await app.createUser({ email: ADMIN, password: PASSWORD, roles: ['Admin'] });
    const seeded = await request(app.app)
      .post('/api/import')
      .auth(ADMIN, PASSWORD)
      .send({
        requestId: randomUUID(),
        importerType: 'PlayerSeeding',
        priority: 'High',
        importData: {
          season: '2026',
          round: 3,
          finalRound: 30,
          players: Array.from({ length: PLAYERS }, (_, n) => seedPlayer(n)),
        },
      });
    expect(seeded.body).toMatchObject({ status: 'Completed', success: true, processedSynchronously: true });
    const teamIds = teamIdsInEachPartition(TEAMS_PER_PARTITION);
    const versions = await Promise.all(teamIds.map((id, seed) => appendTeamLife(app, id, seed)));
    expect(Math.min(...versions)).toBeGreaterThan(STEPS_PER_TEAM / 2);
    const tails = await partitionProgress(redis, keys);
    const logLengths = await Promise.all(
      Array.from({ length: LOG_PARTITIONS }, (_, partition) => redis.xlen(keys.logPartition(partition))),
    );
    // Every partition holds several batches (200 entries) of backlog for every projection.
    expect(Math.min(...logLengths)).toBeGreaterThan(500);
    expect(tails.every(({ tail }) => tail !== null)).toBe(true);

    const checkpointKeys = ALL_PROJECTIONS.flatMap((projection) =>
      Array.from({ length: LOG_PARTITIONS }, (_, partition) => ({
        projection,
        partition,
        checkpoint: projection.checkpointKey(keys, partition),
        lease: keys.projectionLease(projection.name, partition),
      })),
    );
    const checkpoints = () => redis.mget(...checkpointKeys.map(({ checkpoint }) => checkpoint));
    expect((await checkpoints()).every((checkpoint) => checkpoint === null)).toBe(true);

    const env = { ...testRedisEnv(), REDIS_KEY_PREFIX: app.config.redisKeyPrefix };
    const doomed = startServiceProcess('workers/main.ts', env);
    workers.push(doomed);
    // Kill it the moment one checkpoint moves: the pass that wrote it started every owned
    // (projection, partition) batch at once, so the others are still in flight.
    await eventually(async () => (await checkpoints()).some((checkpoint) => checkpoint !== null), 30_000, 2);
    doomed.child.kill('SIGKILL');
    expect(await doomed.exited).toBeNull();

    const atKill = await checkpoints();
    const [replicaId] = await redis.zrange(keys.projectorMembers(), 0, -1);
    const leases = await redis.mget(...checkpointKeys.map(({ lease }) => lease));
    // Batches cut short: partitions the dead worker held (its lease) and had not checkpointed yet.
    const cut = checkpointKeys.filter((_, i) => leases[i] === replicaId && atKill[i] === null);
    expect(replicaId).toBeDefined();
    expect(cut.length).toBeGreaterThan(0);
    // Something was applied, far from everything: the kill landed in the first pass.
    expect(atKill.some((checkpoint) => checkpoint !== null)).toBe(true);
    expect(await caughtUp(redis, keys, ALL_PROJECTIONS)).toBe(false);

    const successor = startServiceProcess('workers/main.ts', env);
    workers.push(successor);
    // The dead worker's leases expire after 5 s (DEFAULT_PROJECTOR_OPTIONS.leaseMs); then it catches up.
    await eventually(() => caughtUp(redis, keys, ALL_PROJECTIONS), 45_000, 50);
    successor.child.kill('SIGTERM');
    expect(await successor.exited).toBe(0);
    expect(successor.stdout()).not.toContain('projector pass failed');

    // The team documents are what the write side folded...
    expect(await storedViews(redis, keys, teamIds)).toEqual(
      await Promise.all(teamIds.map((id) => viewFromRecord(app.services.store, id))),
    );
    // ...and every projection, documents and indexes, equals its rebuild from the log.
    for (const projection of ALL_PROJECTIONS) {
      const projected = await snapshotDocuments(redis, keys, projection);
      expect(Object.keys(projected).length).toBeGreaterThan(0);
      await rebuildProjection(redis, keys, projection);
      expect({
        projection: projection.name,
        documents: await snapshotDocuments(redis, keys, projection),
      }).toEqual({ projection: projection.name, documents: projected });
    }
  }, 60_000);
});
