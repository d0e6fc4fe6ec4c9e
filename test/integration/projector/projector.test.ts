import { randomUUID } from 'node:crypto';

import request from 'supertest';

import { fantasyTeamDecider } from '../../../shared/fantasy-team/fantasy-team.decider';
import {
  fantasyTeamProjection,
  type FantasyTeamView,
} from '../../../shared/fantasy-team/fantasy-team.projection';
import { createLogger } from '../../../shared/logger';
import { closeConnections, type RedisClient, waitForRedis } from '../../../shared/redis/connections';
import { LOG_PARTITIONS } from '../../../shared/redis/partitions';
import { ALL_PROJECTIONS } from '../../../workers/projector/all-projections';
import { Projector, type ProjectorOptions } from '../../../workers/projector/projector';
import { rebuildProjection } from '../../../workers/projector/rebuild';
import { createTestApp, openTestRedis, type TestApp } from '../../helpers/app-fixture';
import { eventually } from '../../helpers/processes';
import {
  caughtUp,
  partitionProgress,
  rosterOf,
  runTeamCommand,
  runWithConcurrency,
  scriptedCommand,
  snapshotDocuments,
  storedViews,
  streamLength,
  teamIdsOverEveryPartition,
  viewFromRecord,
} from '../../helpers/projector-fixtures';

const JWT_SECRET = 'projector-test-secret-of-at-least-32-characters';
const PASSWORD = 'projector test password';
const OPTIONS = { batchSize: 50, idleMs: 5, leaseMs: 1000 } satisfies Partial<ProjectorOptions>;
const NOT_FOUND_LISTING = { queryType: 'GetFantasyTeam', results: [], totalCount: 0 };
const TEAM = fantasyTeamDecider.aggregateType;

interface Caller {
  readonly userId: string;
  readonly token: string;
}

async function signUp(subject: TestApp, roles: ('Member' | 'Admin')[] = ['Member']): Promise<Caller> {
  const email = `user-${randomUUID()}@example.com`;
  const userId = await subject.createUser({ email, password: PASSWORD, roles });
  const res = await request(subject.app)
    .post('/api/auth/token')
    .send({ grant_type: 'password', username: email, password: PASSWORD });
  if (res.status !== 200) throw new Error(`no token for ${email}: ${res.status} ${res.text}`);
  return { userId, token: (res.body as { access_token: string }).access_token };
}

function sendCommand(
  subject: TestApp,
  caller: Caller,
  commandType: string,
  command: Record<string, unknown>,
) {
  return request(subject.app)
    .post('/api/command')
    .set('Authorization', `Bearer ${caller.token}`)
    .send({ commandType, command });
}

function getTeam(subject: TestApp, caller: Caller, id: string) {
  return request(subject.app)
    .post('/api/readmodel')
    .set('Authorization', `Bearer ${caller.token}`)
    .send({ query: { queryType: 'GetFantasyTeam', id } });
}

/** Jest's own equality, as a predicate (tolerant of objects parsed in another realm). */
function equals(actual: unknown, expected: unknown): boolean {
  try {
    expect(actual).toEqual(expected);
    return true;
  } catch {
    return false;
  }
}

/** Polls GetFantasyTeam until it shows `expected` (the whole view), within `withinMs`. */
async function expectProjected(
  subject: TestApp,
  caller: Caller,
  id: string,
  expected: FantasyTeamView,
  withinMs = 5_000,
): Promise<void> {
  const wanted = { status: 200, body: { queryType: 'GetFantasyTeam', results: [expected], totalCount: 1 } };
  let last: unknown;
  const shown = async () => {
    const res = await getTeam(subject, caller, id);
    last = { status: res.status, body: res.body as unknown };
    return equals(last, wanted);
  };
  if (await shown()) return;
  await eventually(shown, withinMs, 20).catch(() => {
    // Show what was last seen against what was expected.
    expect(last).toEqual(wanted);
    throw new Error(`GetFantasyTeam showed the expected view only after ${withinMs} ms`);
  });
}

/** Runs `lifeLength` scripted commands on each team after creating it, teams in parallel. */
async function runScriptedLives(subject: TestApp, teamIds: readonly string[], owners: readonly string[]) {
  const { commands } = subject.services;
  const jobs = teamIds.map((id, seed) => async () => {
    const owner = owners[seed % owners.length] ?? 'owner';
    await runTeamCommand(
      commands,
      id,
      { type: 'CreateFantasyTeam', data: { name: `Team ${seed}`, season: '2026' } },
      owner,
    );
    const lifeLength = 3 + (seed % 10);
    for (let step = 0; step < lifeLength; step++) {
      await runTeamCommand(commands, id, scriptedCommand(step, seed), owner);
    }
    if (seed % 5 === 4)
      await runTeamCommand(commands, id, { type: 'ArchiveFantasyTeam', data: { reason: null } }, owner);
    return true;
  });
  await runWithConcurrency(jobs, 8);
}

/** Every team's document equals what its record implies, and its version is its stream length. */
async function expectDocumentsMatchRecords(subject: TestApp, teamIds: readonly string[]): Promise<void> {
  const { redis } = subject;
  const { keys, store } = subject.services;
  const stored = await storedViews(redis, keys, teamIds);
  const fromRecords = await Promise.all(teamIds.map((id) => viewFromRecord(store, id)));
  const lengths = await Promise.all(teamIds.map((id) => streamLength(redis, keys, id)));
  expect(stored).toEqual(fromRecords);
  expect(stored.map((view) => view?.version)).toEqual(lengths);
}

describe('The projector in process, fed through POST /api/command', () => {
  let subject: TestApp;
  let projector: Projector;
  let owner: Caller;
  let stranger: Caller;
  let admin: Caller;

  beforeAll(async () => {
    subject = await createTestApp({ JWT_SECRET });
    [owner, stranger, admin] = await Promise.all([
      signUp(subject),
      signUp(subject),
      signUp(subject, ['Admin']),
    ]);
    projector = new Projector(subject.redis, subject.services.keys, ALL_PROJECTIONS, subject.logger, OPTIONS);
    projector.start();
  });
  afterAll(async () => {
    await projector?.stop();
    await subject?.close();
  });

  it('When the owner creates, links, sets the roster of, unlinks and archives a team, then GetFantasyTeam shows each step within 5 s (a loaded machine included)', async () => {
    const id = randomUUID();
    const base = {
      id,
      name: 'Projected Eleven',
      season: '2025',
      ownerUserId: owner.userId,
      fantasyTeamExternalId: 0,
      fantasyUserId: 0,
      archived: false,
      roster: [] as FantasyTeamView['roster'],
      version: 1,
    };
    const steps: [string, Record<string, unknown>, FantasyTeamView][] = [
      ['CreateFantasyTeam', { name: 'Projected Eleven', season: '2025' }, base],
      [
        'LinkFantasyTeam',
        { fantasyTeamExternalId: 9_000_000_001, fantasyUserId: 31 },
        { ...base, fantasyTeamExternalId: 9_000_000_001, fantasyUserId: 31, version: 2 },
      ],
      [
        'SetFantasyTeamRoster',
        { players: rosterOf(3, 7) },
        {
          ...base,
          fantasyTeamExternalId: 9_000_000_001,
          fantasyUserId: 31,
          roster: rosterOf(3, 7),
          version: 3,
        },
      ],
      ['UnlinkFantasyTeam', {}, { ...base, roster: rosterOf(3, 7), version: 4 }],
      [
        'ArchiveFantasyTeam',
        { reason: 'season over' },
        { ...base, roster: rosterOf(3, 7), archived: true, version: 5 },
      ],
    ];

    const startedAt = new Date().toISOString();
    for (const [commandType, command, expected] of steps) {
      const res = await sendCommand(subject, owner, commandType, { aggregateRootId: id, ...command });
      expect({ status: res.status, body: res.body as unknown }).toEqual({
        status: 200,
        body: { requestId: null, success: true, eventCount: 1, commandType, version: expected.version },
      });
      await expectProjected(subject, owner, id, expected);
    }
    const finishedAt = new Date().toISOString();

    // The archived team rejects a link, and the projection stays at version 5.
    const refused = await sendCommand(subject, owner, 'LinkFantasyTeam', {
      aggregateRootId: id,
      fantasyTeamExternalId: 1,
      fantasyUserId: 1,
    });
    expect({ status: refused.status, body: refused.body as unknown }).toEqual({
      status: 400,
      body: {
        requestId: null,
        success: false,
        eventCount: 0,
        errorMessage: 'Cannot link archived team',
        errorCode: 'COMMAND_VALIDATION_ERROR',
        commandType: 'LinkFantasyTeam',
      },
    });
    expect(await streamLength(subject.redis, subject.services.keys, id)).toBe(5);

    // The events as stored: linkedAt and unlinkedAt are the command's time, unlinkReason null when absent.
    const events = await subject.services.store.readStream(TEAM, id);
    expect(events.map((event) => [event.eventType, event.version])).toEqual([
      ['FantasyTeamCreatedEvent', 1],
      ['FantasyTeamLinkedEvent', 2],
      ['FantasyTeamRosterSetEvent', 3],
      ['FantasyTeamUnlinkedEvent', 4],
      ['FantasyTeamArchivedEvent', 5],
    ]);
    const [, linkedEvent, , unlinkedEvent] = events;
    expect(linkedEvent?.data).toEqual({
      fantasyTeamExternalId: 9_000_000_001,
      fantasyUserId: 31,
      linkedAt: linkedEvent?.occurredAt,
    });
    expect(unlinkedEvent?.data).toEqual({ unlinkedAt: unlinkedEvent?.occurredAt, unlinkReason: null });
    for (const event of events) {
      expect(event.occurredAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      expect(event.occurredAt >= startedAt && event.occurredAt <= finishedAt).toBe(true);
      expect(event.metadata.actorUserId).toBe(owner.userId);
    }
  });

  it('When an Admin who does not own the team asks for it, then it sees the same document as the owner', async () => {
    const id = randomUUID();
    await sendCommand(subject, owner, 'CreateFantasyTeam', { aggregateRootId: id, name: 'Shared' }).expect(
      200,
    );
    await sendCommand(subject, owner, 'LinkFantasyTeam', {
      aggregateRootId: id,
      fantasyTeamExternalId: 5,
      fantasyUserId: 6,
    }).expect(200);
    const expected: FantasyTeamView = {
      id,
      name: 'Shared',
      season: '2026',
      ownerUserId: owner.userId,
      fantasyTeamExternalId: 5,
      fantasyUserId: 6,
      archived: false,
      roster: [],
      version: 2,
    };
    await expectProjected(subject, owner, id, expected);
    await expectProjected(subject, admin, id, expected, 0);
    // The id is a GUID in any case.
    await expectProjected(subject, admin, id.toUpperCase(), expected, 0);
  });

  it('When another Member asks for a team it does not own, then the answer is 404 with no results, as for a missing team', async () => {
    const id = randomUUID();
    await sendCommand(subject, owner, 'CreateFantasyTeam', { aggregateRootId: id, name: 'Private' }).expect(
      200,
    );
    await expectProjected(subject, owner, id, {
      id,
      name: 'Private',
      season: '2026',
      ownerUserId: owner.userId,
      fantasyTeamExternalId: 0,
      fantasyUserId: 0,
      archived: false,
      roster: [],
      version: 1,
    });

    const foreign = await getTeam(subject, stranger, id);
    expect({ status: foreign.status, body: foreign.body as unknown }).toEqual({
      status: 404,
      body: NOT_FOUND_LISTING,
    });

    const missingId = randomUUID();
    for (const caller of [owner, stranger, admin]) {
      const missing = await getTeam(subject, caller, missingId);
      expect({ status: missing.status, body: missing.body as unknown }).toEqual({
        status: 404,
        body: NOT_FOUND_LISTING,
      });
    }
  });

  it('When another Member sends a command on the team, then it is refused as for a missing team and the projection does not move', async () => {
    const id = randomUUID();
    await sendCommand(subject, owner, 'CreateFantasyTeam', { aggregateRootId: id, name: 'Guarded' }).expect(
      200,
    );
    const res = await sendCommand(subject, stranger, 'LinkFantasyTeam', {
      aggregateRootId: id,
      fantasyTeamExternalId: 1,
      fantasyUserId: 2,
    });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({
      success: false,
      eventCount: 0,
      errorCode: 'COMMAND_VALIDATION_ERROR',
      errorMessage: 'Cannot link non-existent team',
    });
    expect(await streamLength(subject.redis, subject.services.keys, id)).toBe(1);
    await expectProjected(subject, owner, id, {
      id,
      name: 'Guarded',
      season: '2026',
      ownerUserId: owner.userId,
      fantasyTeamExternalId: 0,
      fantasyUserId: 0,
      archived: false,
      roster: [],
      version: 1,
    });
  });
});

describe('rebuildProjection', () => {
  // User ids are GUIDs (derived from e-mails); the contract check holds answers to that.
  const OWNERS = [
    '0a0a0a0a-0000-4000-8000-00000000000a',
    '0b0b0b0b-0000-4000-8000-00000000000b',
    '0c0c0c0c-0000-4000-8000-00000000000c',
  ];

  it('When a projection is rebuilt after a mix of commands over many teams, then every document and every GetFantasyTeam answer is byte-identical', async () => {
    const subject = await createTestApp({ JWT_SECRET });
    const { redis } = subject;
    const { keys } = subject.services;
    try {
      const admin = await signUp(subject, ['Admin']);
      const teamIds = teamIdsOverEveryPartition(24);
      await runScriptedLives(subject, teamIds, OWNERS);

      const projector = new Projector(redis, keys, ALL_PROJECTIONS, subject.logger, OPTIONS);
      projector.start();
      try {
        await eventually(() => caughtUp(redis, keys), 10_000, 20);
      } finally {
        await projector.stop();
      }
      await expectDocumentsMatchRecords(subject, teamIds);

      const answersOf = () =>
        Promise.all(teamIds.map(async (id) => (await getTeam(subject, admin, id).expect(200)).text));
      const documentsBefore = await snapshotDocuments(redis, keys);
      const answersBefore = await answersOf();
      expect(Object.keys(documentsBefore)).toHaveLength(teamIds.length);
      const checkpointsBefore = await partitionProgress(redis, keys);

      const replayed = await rebuildProjection(redis, keys, fantasyTeamProjection);

      // Folded from the teams' streams (ADR 0020): every team event once, the log after them empty.
      const teamEvents = await Promise.all(
        teamIds.map((id) => subject.services.store.streamLength(fantasyTeamProjection.aggregateType, id)),
      );
      expect(replayed).toBe(teamEvents.reduce((sum, length) => sum + length, 0));
      expect(await snapshotDocuments(redis, keys)).toEqual(documentsBefore);
      expect(await answersOf()).toEqual(answersBefore);
      expect(await partitionProgress(redis, keys)).toEqual(checkpointsBefore);
    } finally {
      await subject.close();
    }
  });

  it('When documents were lost or corrupted and checkpoints reset, then a rebuild restores them exactly', async () => {
    const subject = await createTestApp();
    const { redis } = subject;
    const { keys } = subject.services;
    try {
      const teamIds = teamIdsOverEveryPartition(16);
      await runScriptedLives(subject, teamIds, OWNERS);
      await rebuildProjection(redis, keys, fantasyTeamProjection);
      const documents = await snapshotDocuments(redis, keys);
      await expectDocumentsMatchRecords(subject, teamIds);

      const [lost, corrupted, stale] = teamIds;
      await redis.del(keys.projectionDocument('fantasy-team', lost ?? ''));
      await redis.set(
        keys.projectionDocument('fantasy-team', corrupted ?? ''),
        JSON.stringify({ id: corrupted, version: 999, archived: true }),
      );
      await redis.set(keys.projectionDocument('fantasy-team', stale ?? ''), '{"not":"a team"}');
      await redis.set(keys.projectionDocument('fantasy-team', randomUUID()), '{"orphan":true}');
      await redis.del(keys.projectionCheckpoint('fantasy-team', 3));

      await rebuildProjection(redis, keys, fantasyTeamProjection);

      expect(await snapshotDocuments(redis, keys)).toEqual(documents);
      expect(await caughtUp(redis, keys)).toBe(true);
    } finally {
      await subject.close();
    }
  });

  it('When a rebuild runs while a projector is live and commands keep arriving, then every document ends equal to its record', async () => {
    const subject = await createTestApp();
    const { redis } = subject;
    const { keys } = subject.services;
    const projector = new Projector(redis, keys, ALL_PROJECTIONS, subject.logger, OPTIONS);
    try {
      const teamIds = teamIdsOverEveryPartition(24);
      projector.start();
      const firstHalf = teamIds.slice(0, 12);
      await runScriptedLives(subject, firstHalf, OWNERS);
      await Promise.all([
        runScriptedLives(subject, teamIds.slice(12), OWNERS),
        rebuildProjection(redis, keys, fantasyTeamProjection),
      ]);
      await eventually(() => caughtUp(redis, keys), 10_000, 20);
      await expectDocumentsMatchRecords(subject, teamIds);
    } finally {
      await projector.stop();
      await subject.close();
    }
  });
});

describe('A caught-up projector woken by change announcements', () => {
  const logger = createLogger({ level: 'error', processRole: 'test', silent: true });

  /** The client with its XRANGE calls counted (each pass reads every owned partition once). */
  function countingXrange(redis: RedisClient): { client: RedisClient; reads: () => number } {
    let reads = 0;
    const client = new Proxy(redis, {
      get(target, property, receiver) {
        const value: unknown = Reflect.get(target, property, receiver);
        if (typeof value !== 'function') return value;
        const method = value as (...args: unknown[]) => unknown;
        if (property === 'xrange')
          return (...args: unknown[]) => {
            reads += 1;
            return method.apply(target, args);
          };
        return method.bind(target);
      },
    });
    return { client, reads: () => reads };
  }

  /** One event of an aggregate type no projection follows, appended straight to the store. */
  async function appendUnprojectedEvent(subject: TestApp): Promise<void> {
    const aggregateId = randomUUID();
    await subject.services.store.append({
      aggregateType: 'Unprojected',
      aggregateId,
      expectedVersion: 0,
      events: [
        {
          eventId: randomUUID(),
          eventType: 'SomethingHappenedEvent',
          aggregateType: 'Unprojected',
          aggregateId,
          version: 1,
          occurredAt: new Date().toISOString(),
          data: {},
          metadata: { actorUserId: 'projector-test', requestId: null, correlationId: null },
        },
      ],
      state: {},
    });
  }

  it('When events of aggregates it does not project keep arriving, then it reads the log once per fallback pause instead of once per append, and a team command still shows at once', async () => {
    const subject = await createTestApp();
    const { keys } = subject.services;
    const redis = openTestRedis(logger);
    const subscriber = openTestRedis(logger, 'queue');
    const counted = countingXrange(redis);
    const idleFallbackMs = 250;
    const projector = new Projector(
      counted.client,
      keys,
      [fantasyTeamProjection],
      logger,
      { ...OPTIONS, idleFallbackMs },
      subscriber,
    );
    try {
      await Promise.all([waitForRedis(redis, logger), waitForRedis(subscriber, logger)]);
      projector.start();
      await eventually(() => Promise.resolve(projector.ownedPartitions === LOG_PARTITIONS), 5_000, 10);
      await eventually(() => caughtUp(subject.redis, keys), 5_000, 10);

      // Appends one after another for 1.5 fallback pauses (an import's stream of new users): a
      // projector that went round again after every pass that found entries would never rest.
      const readsBefore = counted.reads();
      const appendUntil = Date.now() + 1.5 * idleFallbackMs;
      while (Date.now() < appendUntil) await appendUnprojectedEvent(subject);
      const passes = (counted.reads() - readsBefore) / LOG_PARTITIONS;
      expect(passes).toBeLessThanOrEqual(4);
      // Those entries are still passed over, within a fallback pause or two.
      await eventually(() => caughtUp(subject.redis, keys), 2 * idleFallbackMs + 500, 10);

      // A team's command announces itself: projected long before the fallback pause would end.
      const teamId = randomUUID();
      const createdAt = Date.now();
      await runTeamCommand(
        subject.services.commands,
        teamId,
        { type: 'CreateFantasyTeam', data: { name: 'Announced', season: '2026' } },
        'owner-announced',
      );
      await eventually(async () => (await storedViews(subject.redis, keys, [teamId]))[0] !== null, 5_000, 5);
      expect(Date.now() - createdAt).toBeLessThan(idleFallbackMs);
    } finally {
      await projector.stop();
      await closeConnections(redis);
      await subject.close();
      logger.close();
    }
  });
});

describe('Two projector replicas on one prefix', () => {
  const logger = createLogger({ level: 'error', processRole: 'test', silent: true });
  const connections: RedisClient[] = [];
  afterAll(async () => {
    await closeConnections(...connections);
    logger.close();
  });

  async function replica(subject: TestApp): Promise<Projector> {
    const redis = openTestRedis(logger);
    connections.push(redis);
    await waitForRedis(redis, logger);
    // One projection, so its 16 leases are all there is to balance and the split is exactly 8 and 8.
    return new Projector(redis, subject.services.keys, [fantasyTeamProjection], logger, OPTIONS);
  }

  /** Which replica (by lease token) holds each partition's lease now (one GET each: one slot each). */
  async function leaseHolders(subject: TestApp): Promise<(string | null)[]> {
    const { keys } = subject.services;
    return Promise.all(
      Array.from({ length: LOG_PARTITIONS }, (_, p) =>
        subject.redis.get(keys.projectionLease(fantasyTeamProjection.name, p)),
      ),
    );
  }

  it('When two replicas run while commands arrive, then they split the 16 partitions 8 and 8 and every document equals its record', async () => {
    const subject = await createTestApp();
    const { redis } = subject;
    const { keys } = subject.services;
    const first = await replica(subject);
    const second = await replica(subject);
    try {
      const teamIds = teamIdsOverEveryPartition(48);
      first.start();
      const commands = runScriptedLives(subject, teamIds, ['owner-x', 'owner-y']);
      await eventually(() => Promise.resolve(first.ownedPartitions === LOG_PARTITIONS), 5_000, 10);
      second.start();

      await eventually(
        () => Promise.resolve(first.ownedPartitions === 8 && second.ownedPartitions === 8),
        10_000,
        20,
      );
      const holders = await leaseHolders(subject);
      const perHolder = new Map<string | null, number>();
      for (const holder of holders) perHolder.set(holder, (perHolder.get(holder) ?? 0) + 1);
      expect(perHolder.has(null)).toBe(false);
      expect([...perHolder.values()]).toEqual([8, 8]);

      await commands;
      await eventually(() => caughtUp(redis, keys), 10_000, 20);
      await expectDocumentsMatchRecords(subject, teamIds);
      expect(first.ownedPartitions + second.ownedPartitions).toBe(LOG_PARTITIONS);
    } finally {
      await Promise.all([first.stop(), second.stop()]);
      await subject.close();
    }
  });

  it('When one of two replicas stops, then the other takes over all 16 partitions and projects new commands within one lease period', async () => {
    const subject = await createTestApp();
    const { redis } = subject;
    const { keys } = subject.services;
    const first = await replica(subject);
    const second = await replica(subject);
    try {
      first.start();
      second.start();
      await eventually(
        () => Promise.resolve(first.ownedPartitions === 8 && second.ownedPartitions === 8),
        10_000,
        20,
      );

      // A graceful stop gives the leases back, so the survivor needs only its next balance.
      await first.stop();
      const stoppedAt = Date.now();
      const teamIds = teamIdsOverEveryPartition(16);
      await runScriptedLives(subject, teamIds, ['owner-z']);
      await eventually(() => caughtUp(redis, keys), 10_000, 20);
      const caughtUpMs = Date.now() - stoppedAt;

      await expectDocumentsMatchRecords(subject, teamIds);
      expect(second.ownedPartitions).toBe(LOG_PARTITIONS);
      expect(caughtUpMs).toBeLessThanOrEqual(OPTIONS.leaseMs);
    } finally {
      await Promise.all([first.stop(), second.stop()]);
      await subject.close();
    }
  });
});
