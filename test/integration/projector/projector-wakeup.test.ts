import { randomUUID } from 'node:crypto';

import { fantasyTeamDecider } from '../../../shared/fantasy-team/fantasy-team.decider';
import { fantasyTeamProjection } from '../../../shared/fantasy-team/fantasy-team.projection';
import {
  decodeProjectedVersions,
  type ProjectedVersions,
} from '../../../shared/projections/projection-progress';
import { duplicateConnection } from '../../../shared/redis/connections';
import { LOG_PARTITIONS, partitionOf } from '../../../shared/redis/partitions';
import { ALL_PROJECTIONS } from '../../../workers/projector/all-projections';
import { DEFAULT_PROJECTOR_OPTIONS, Projector } from '../../../workers/projector/projector';
import { createTestApp, type TestApp } from '../../helpers/app-fixture';
import { eventually } from '../../helpers/processes';

/**
 * The projector's lease in these tests: short enough that sleeping past it is quick, long enough that
 * a renewal (every third of it, one script per lease, 96 leases) is never late on a loaded 2-core
 * machine running the cluster suite, where 1 s was seen to lapse.
 */
const LEASE_MS = 3_000;

describe('Projector woken by change announcements', () => {
  let subject: TestApp;
  let projector: Projector;
  /** The passes the projector reported (seconds each), as Metrics would record them. */
  const passes: number[] = [];

  beforeAll(async () => {
    subject = await createTestApp();
    // A fallback pause far longer than the test allows: only the announcement can explain a quick update.
    projector = new Projector(
      subject.redis,
      subject.services.keys,
      ALL_PROJECTIONS,
      subject.logger,
      { idleFallbackMs: 60_000, leaseMs: LEASE_MS },
      duplicateConnection(subject.redis, subject.logger, 'test-subscriber'),
      { recordProjectorPass: (seconds) => passes.push(seconds) },
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

  it('When a pass reads the announced partition, then it is reported with its duration (fts_projector_pass_duration_seconds)', async () => {
    const before = passes.length;
    await createTeamOnceIdle('Reported');
    await eventually(() => Promise.resolve(passes.length > before), 2_000, 5);
    expect(passes.slice(before).every((seconds) => seconds >= 0 && seconds < 60)).toBe(true);
  });

  it('When the projector sleeps longer than its lease, then it renews its leases while asleep and keeps every partition', async () => {
    await createTeamOnceIdle('Lease keepers');
    // Asleep for one and a half leases: a lease renewed only between passes would have lapsed.
    await new Promise((resolve) => setTimeout(resolve, LEASE_MS * 1.5));
    const { keys } = subject.services;
    const leases = ALL_PROJECTIONS.flatMap((projection) =>
      Array.from({ length: LOG_PARTITIONS }, (_, p) => keys.projectionLease(projection.name, p)),
    );
    const remaining = await Promise.all(leases.map((lease) => subject.redis.pttl(lease)));
    expect(remaining.filter((ms) => ms <= 0)).toEqual([]);
    expect(projector.ownedPartitions).toBe(LOG_PARTITIONS * ALL_PROJECTIONS.length);
  });

  it("When one team changes, then the pass it wakes reads only that team's log partition, not all 48, with its event and document in the same script", async () => {
    const redis = subject.redis;
    const batchReads = jest.spyOn(redis, 'readProjectionBatch');
    const streamReads = jest.spyOn(redis, 'xrange');
    const documentReads = jest.spyOn(redis, 'mget');
    try {
      const id = await createTeamOnceIdle('Targeted');
      const { keys } = subject.services;
      const partition = partitionOf(id);
      // One script reads the partition's new entry, the event it refers to (ADR 0020) and the
      // team's document: no command per event's stream, no document read beside it.
      expect(
        batchReads.mock.calls.map(([logKey, , , type, streamsIn, documentsIn]) => ({
          logKey,
          type,
          streamsIn,
          documentsIn,
        })),
      ).toEqual([
        {
          logKey: keys.logPartition(partition),
          type: fantasyTeamDecider.aggregateType,
          streamsIn: keys.aggregateStreamsIn(fantasyTeamDecider.aggregateType, partition),
          documentsIn: keys.projectionDocumentsIn('fantasy-team', partition),
        },
      ]);
      expect(streamReads).not.toHaveBeenCalled();
      expect(documentReads).not.toHaveBeenCalled();
    } finally {
      batchReads.mockRestore();
      streamReads.mockRestore();
      documentReads.mockRestore();
    }
  });
});

describe('Projector passes under a stream of changes', () => {
  // Long, so that "read at once" (well under it) holds on a loaded machine: a paced change would
  // wait most of it.
  const PASS_INTERVAL_MS = 600;
  let subject: TestApp;
  let projector: Projector;
  let listener: ReturnType<typeof duplicateConnection>;
  /** The fantasy-team progress messages (one per pass that applied something), as received. */
  const messages: ProjectedVersions[] = [];

  beforeAll(async () => {
    subject = await createTestApp();
    projector = new Projector(
      subject.redis,
      subject.services.keys,
      [fantasyTeamProjection],
      subject.logger,
      { idleFallbackMs: 60_000, leaseMs: LEASE_MS, passIntervalMs: PASS_INTERVAL_MS },
      duplicateConnection(subject.redis, subject.logger, 'test-subscriber'),
    );
    listener = duplicateConnection(subject.redis, subject.logger, 'test-progress');
    listener.on('message', (_channel: string, message: string) =>
      messages.push(decodeProjectedVersions(message)),
    );
    await listener.subscribe(subject.services.keys.projectionProgress(fantasyTeamProjection.name));
    projector.start();
    await eventually(() => Promise.resolve(projector.ownedPartitions === LOG_PARTITIONS), 5_000, 20);
  });
  afterAll(async () => {
    await projector.stop();
    await listener.quit();
    await subject.close();
  });

  function createTeam(id: string): Promise<unknown> {
    return subject.services.commands.handle(fantasyTeamDecider, {
      aggregateId: id,
      command: { type: 'CreateFantasyTeam', data: { name: 'Paced', season: '2026' } },
      context: { now: new Date(), actorUserId: randomUUID(), actorRoles: ['Member'] },
      metadata: { actorUserId: 'test', requestId: null, correlationId: null },
    });
  }

  const announced = () => new Set(messages.flatMap((message) => [...message.keys()]));

  it('When changes keep coming, then passes start at most once per pass interval, each announcing all it applied in one message', async () => {
    await new Promise((resolve) => setTimeout(resolve, PASS_INTERVAL_MS + 100));
    messages.length = 0;
    // Eight changes side by side start the stream; then one every 10 ms or so for about an interval.
    const ids = Array.from({ length: 58 }, () => randomUUID());
    const started = Date.now();
    await Promise.all(ids.slice(0, 8).map((id) => createTeam(id)));
    for (const id of ids.slice(8)) {
      await createTeam(id);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    await eventually(() => ids.every((id) => announced().has(id)), 5_000, 10);
    const intervals = (Date.now() - started) / PASS_INTERVAL_MS;
    // Only a pass that projected pacedFromChanges or more waits out the interval before the next: on
    // a busy machine the first side-by-side changes may be read in two or three small passes (5
    // messages were seen against a bound of 4). Those that did are at most one per interval, and
    // a pass per change (58), or a message per partition of each pass (16 partitions), would be
    // many more messages than a quarter of the changes.
    const paced = messages.filter((message) => message.size >= DEFAULT_PROJECTOR_OPTIONS.pacedFromChanges);
    expect(paced.length).toBeLessThanOrEqual(Math.ceil(intervals) + 1);
    expect(messages.length).toBeLessThan(ids.length / 4);
  });

  it('When one change follows another only once the first was projected, then each is read at once, without waiting out the pass interval', async () => {
    await new Promise((resolve) => setTimeout(resolve, PASS_INTERVAL_MS + 100));
    for (let i = 0; i < 5; i += 1) {
      const id = randomUUID();
      const createdAt = Date.now();
      await createTeam(id);
      await eventually(() => announced().has(id), 5_000, 2);
      expect(Date.now() - createdAt).toBeLessThan(PASS_INTERVAL_MS);
    }
  });

  it('When a client sends a change it does not wait for and then one it waits for, over and over, then its changes are not paced either', async () => {
    await new Promise((resolve) => setTimeout(resolve, PASS_INTERVAL_MS + 100));
    for (let i = 0; i < 5; i += 1) {
      const [alone, awaited] = [randomUUID(), randomUUID()];
      await createTeam(alone);
      const createdAt = Date.now();
      await createTeam(awaited);
      await eventually(() => announced().has(awaited), 5_000, 2);
      expect(Date.now() - createdAt).toBeLessThan(PASS_INTERVAL_MS);
    }
  });
});
