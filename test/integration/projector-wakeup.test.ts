import { randomUUID } from 'node:crypto';

import { fantasyTeamDecider } from '../../shared/domain/fantasy-team/fantasy-team.decider';
import { ALL_PROJECTIONS } from '../../shared/projections/all-projections';
import { Projector } from '../../shared/projections/projector';
import { duplicateConnection } from '../../shared/redis/connections';
import { LOG_PARTITIONS, partitionOf } from '../../shared/redis/partitions';
import { createTestApp, type TestApp } from '../helpers/app-fixture';
import { eventually } from '../helpers/processes';

describe('Projector woken by change announcements', () => {
  let subject: TestApp;
  let projector: Projector;

  beforeAll(async () => {
    subject = await createTestApp();
    // A fallback pause far longer than the test allows: only the announcement can explain a quick update.
    projector = new Projector(
      subject.redis,
      subject.services.keys,
      ALL_PROJECTIONS,
      subject.logger,
      { idleFallbackMs: 60_000, leaseMs: 1_000 },
      duplicateConnection(subject.redis, subject.logger, 'test-subscriber'),
    );
    projector.start();
    await eventually(
      () => Promise.resolve(projector.ownedPartitions === LOG_PARTITIONS * ALL_PROJECTIONS.length),
      5_000,
      20,
    );
  });
  afterAll(async () => {
    await projector.stop();
    await subject.close();
  });

  /** Lets the projector fall idle, creates a team, and waits until its view exists; returns its id. */
  async function createTeamOnceIdle(name: string): Promise<string> {
    await new Promise((resolve) => setTimeout(resolve, 200));
    const id = randomUUID();
    await subject.services.commands.handle(fantasyTeamDecider, {
      aggregateId: id,
      command: { type: 'CreateFantasyTeam', data: { name, season: '2026' } },
      context: { now: new Date(), actorUserId: randomUUID(), actorRoles: ['Member'] },
      metadata: { actorUserId: 'test', requestId: null, correlationId: null },
    });
    const document = subject.services.keys.projectionDocument('fantasy-team', id);
    await eventually(async () => (await subject.redis.exists(document)) === 1, 2_000, 2);
    return id;
  }

  it('When a team changes while the projector sleeps, then the announcement wakes it and the view updates at once', async () => {
    const started = Date.now();
    await createTeamOnceIdle('Sleepers');
    // The idle pause (200 ms) is part of it; the fallback pass would take a minute.
    expect(Date.now() - started).toBeLessThan(1_200);
  });

  it("When one team changes, then the pass it wakes reads only that team's log partition, not all 48", async () => {
    const reads = jest.spyOn(subject.redis, 'xrange');
    try {
      const id = await createTeamOnceIdle('Targeted');
      const { keys } = subject.services;
      const logKeys = new Set(Array.from({ length: LOG_PARTITIONS }, (_, p) => keys.logPartition(p)));
      const keysRead = new Set(reads.mock.calls.map(([key]) => String(key)));
      expect([...keysRead].filter((key) => logKeys.has(key))).toEqual([keys.logPartition(partitionOf(id))]);
      // Besides the partition, only the stream its entry refers to (ADR 0020).
      expect([...keysRead].filter((key) => !logKeys.has(key))).toEqual([
        keys.aggregateStream(fantasyTeamDecider.aggregateType, id),
      ]);
    } finally {
      reads.mockRestore();
    }
  });
});
