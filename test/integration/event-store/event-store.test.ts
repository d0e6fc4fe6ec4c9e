import { randomUUID } from 'node:crypto';

import type { DecisionContext } from '../../../shared/event-store/decider';
import type { EventEnvelope, EventMetadata } from '../../../shared/event-store/envelope';
import { AggregateBusyError, ConcurrencyConflictError } from '../../../shared/event-store/errors';
import type { CommandInput } from '../../../shared/event-store/handle-command';
import { resolveLogEntries } from '../../../shared/event-stream/log-reader';
import { partitionOf } from '../../../shared/redis/partitions';
import type { CreateUser } from '../../../shared/user/user.commands';
import { userDecider } from '../../../shared/user/user.decider';
import { testRedisEnv } from '../../helpers/app-fixture';
import { type Core, coreFixture } from '../../helpers/core-fixture';
import { eventually, type ServiceProcess, startServiceProcess } from '../../helpers/processes';
import {
  counterDecider,
  INCREMENT,
  type Increment,
  type Incremented,
} from '../../helpers/race-counter.decider';
import { userIdForEmail } from '../../helpers/user-ids';

const { buildCore } = coreFixture();

/** The core services on their own connection and, unless one is given, their own key prefix. */

const context = (): DecisionContext => ({ now: new Date(), actorUserId: 'tester', actorRoles: ['Admin'] });
const metadata: EventMetadata = { actorUserId: 'tester', requestId: null, correlationId: 'event-store-test' };

function incremented(aggregateId: string, version: number): EventEnvelope<Incremented> {
  return {
    eventId: randomUUID(),
    eventType: 'Incremented',
    aggregateType: counterDecider.aggregateType,
    aggregateId,
    version,
    occurredAt: new Date().toISOString(),
    data: { value: version },
    metadata,
  };
}

const increments = (aggregateId: string, fromVersion: number, count: number) =>
  Array.from({ length: count }, (_, i) => incremented(aggregateId, fromVersion + i + 1));

const incrementInput = (aggregateId: string): CommandInput<Increment> => ({
  aggregateId,
  command: INCREMENT,
  context: context(),
  metadata,
});

/** The events of one aggregate as mirrored into its partition of the global log, in log order. */
async function logEventsOf(core: Core, aggregateId: string): Promise<EventEnvelope[]> {
  const entries = await core.redis.xrange(core.keys.logPartition(partitionOf(aggregateId)), '-', '+');
  return (await resolveLogEntries(core.redis, core.keys, entries)).filter(
    (event) => event.aggregateId === aggregateId,
  );
}

async function lengths(core: Core, aggregateId: string) {
  return {
    stream: await core.redis.xlen(core.keys.aggregateStream(counterDecider.aggregateType, aggregateId)),
    log: await core.redis.xlen(core.keys.logPartition(partitionOf(aggregateId))),
    record: await core.redis.hgetall(core.keys.aggregateRecord(counterDecider.aggregateType, aggregateId)),
  };
}

function deferred<T = void>() {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((done) => (resolve = done));
  return { promise, resolve };
}

describe('EventStore.append', () => {
  it('When events are appended, then the stream holds them at versions 1..n, the log mirrors them and the record holds version and state', async () => {
    const core = await buildCore();
    const id = randomUUID();
    const first = increments(id, 0, 3);

    await expect(
      core.store.append({
        aggregateType: 'counter',
        aggregateId: id,
        expectedVersion: 0,
        events: first,
        state: { value: 3 },
      }),
    ).resolves.toBe(3);
    const second = increments(id, 3, 2);
    await expect(
      core.store.append({
        aggregateType: 'counter',
        aggregateId: id,
        expectedVersion: 3,
        events: second,
        state: { value: 5 },
      }),
    ).resolves.toBe(5);

    const all = [...first, ...second];
    expect(await core.store.readStream('counter', id)).toEqual(all);
    const entryIds = (await core.redis.xrange(core.keys.aggregateStream('counter', id), '-', '+')).map(
      ([entryId]) => entryId,
    );
    expect(entryIds).toEqual(['0-1', '0-2', '0-3', '0-4', '0-5']);
    expect(await core.store.streamLength('counter', id)).toBe(5);
    expect(await logEventsOf(core, id)).toEqual(all);
    expect(await core.store.loadRecord('counter', id, counterDecider.initialState)).toEqual({
      version: 5,
      state: { value: 5 },
    });
  });

  it('When an aggregate has no events, then its record is version 0 with the initial state', async () => {
    const core = await buildCore();
    expect(await core.store.loadRecord('counter', randomUUID(), { value: 0 })).toEqual({
      version: 0,
      state: { value: 0 },
    });
  });

  it.each([
    ['stale', 1],
    ['zero on an existing stream', 0],
    ['ahead of the stream', 5],
  ])(
    'When the expected version is %s, then append throws ConcurrencyConflictError and writes nothing',
    async (_label, expectedVersion) => {
      const core = await buildCore();
      const id = randomUUID();
      await core.store.append({
        aggregateType: 'counter',
        aggregateId: id,
        expectedVersion: 0,
        events: increments(id, 0, 2),
        state: { value: 2 },
      });
      const before = await lengths(core, id);

      const appending = core.store.append({
        aggregateType: 'counter',
        aggregateId: id,
        expectedVersion,
        events: increments(id, expectedVersion, 2),
        state: { value: 99 },
      });
      await expect(appending).rejects.toBeInstanceOf(ConcurrencyConflictError);
      await expect(appending).rejects.toMatchObject({ aggregateId: id, expectedVersion, actualVersion: 2 });

      expect(await lengths(core, id)).toEqual(before);
      expect(before.stream).toBe(2);
      expect(before.record).toMatchObject({ version: '2', state: JSON.stringify({ value: 2 }) });
    },
  );

  it('When the same append is sent again after it ran (its answer lost on the way), then it answers its version again and writes nothing twice; other events at those versions are still refused', async () => {
    const core = await buildCore();
    const id = randomUUID();
    await core.store.append({
      aggregateType: 'counter',
      aggregateId: id,
      expectedVersion: 0,
      events: increments(id, 0, 1),
      state: { value: 1 },
    });
    const events = increments(id, 1, 2);
    const request = {
      aggregateType: 'counter',
      aggregateId: id,
      expectedVersion: 1,
      events,
      state: { value: 3 },
    };
    await expect(core.store.append(request)).resolves.toBe(3);
    const before = await lengths(core, id);

    await expect(core.store.append(request)).resolves.toBe(3);
    expect(await lengths(core, id)).toEqual(before);
    expect(before.stream).toBe(3);
    expect(await logEventsOf(core, id)).toHaveLength(3);

    const others = core.store.append({ ...request, events: increments(id, 1, 2) });
    await expect(others).rejects.toBeInstanceOf(ConcurrencyConflictError);
    expect(await lengths(core, id)).toEqual(before);
  });

  it('When an append carries attachments, then they reach the record only if the append succeeds', async () => {
    const core = await buildCore();
    const id = randomUUID();
    const recordKey = core.keys.aggregateRecord('counter', id);

    // A refused first append must not even create the record.
    await expect(
      core.store.append({
        aggregateType: 'counter',
        aggregateId: id,
        expectedVersion: 1,
        events: increments(id, 1, 1),
        state: { value: 2 },
        attachments: { credential: 'refused-hash' },
      }),
    ).rejects.toBeInstanceOf(ConcurrencyConflictError);
    expect(await core.redis.exists(recordKey)).toBe(0);

    await core.store.append({
      aggregateType: 'counter',
      aggregateId: id,
      expectedVersion: 0,
      events: increments(id, 0, 1),
      state: { value: 1 },
      attachments: { credential: 'first-hash', note: 'kept' },
    });
    expect(await core.store.loadRecordWith('counter', id, { value: 0 }, 'credential')).toEqual({
      version: 1,
      state: { value: 1 },
      attachment: 'first-hash',
    });

    await expect(
      core.store.append({
        aggregateType: 'counter',
        aggregateId: id,
        expectedVersion: 0,
        events: increments(id, 0, 1),
        state: { value: 1 },
        attachments: { credential: 'stale-hash', other: 'stale' },
      }),
    ).rejects.toBeInstanceOf(ConcurrencyConflictError);
    expect(await core.redis.hgetall(recordKey)).toEqual({
      version: '1',
      state: JSON.stringify({ value: 1 }),
      credential: 'first-hash',
      note: 'kept',
    });
  });
});

describe('CommandHandler.handle', () => {
  const email = () => `user-${randomUUID()}@example.com`;
  const createUser = (address: string): CreateUser => ({
    type: 'CreateUser',
    data: {
      userId: userIdForEmail(address),
      email: address,
      userName: address,
      userType: 'Human',
      roles: ['Member'],
      firstName: null,
      lastName: null,
      emailVerified: false,
      securityStamp: randomUUID(),
    },
  });

  it('When CreateUser runs twice on one user, then the second is rejected with "User already exists" and the stream keeps one event', async () => {
    const core = await buildCore();
    const address = email();
    const userId = userIdForEmail(address);
    const input = { aggregateId: userId, command: createUser(address), context: context(), metadata };

    const first = await core.commands.handle(userDecider, input);
    expect(first).toMatchObject({ accepted: true, version: 1 });
    expect(first.accepted && first.events.map((event) => [event.eventType, event.version])).toEqual([
      ['UserCreatedEvent', 1],
    ]);

    expect(await core.commands.handle(userDecider, input)).toMatchObject({
      accepted: false,
      message: 'User already exists',
      version: 1,
    });
    expect(await core.store.streamLength('user', userId)).toBe(1);
    expect((await logEventsOf(core, userId)).length).toBe(1);
  });

  it('When the caller expects a version the aggregate is not at, then handle throws ConcurrencyConflictError and appends nothing', async () => {
    const core = await buildCore();
    const id = randomUUID();
    await core.commands.handle(counterDecider, incrementInput(id));

    const stale = core.commands.handle(counterDecider, { ...incrementInput(id), expectedVersion: 2 });
    await expect(stale).rejects.toBeInstanceOf(ConcurrencyConflictError);
    await expect(stale).rejects.toMatchObject({ expectedVersion: 2, actualVersion: 1 });
    expect(await core.store.streamLength('counter', id)).toBe(1);

    // The matching version passes the check.
    await expect(
      core.commands.handle(counterDecider, { ...incrementInput(id), expectedVersion: 1 }),
    ).resolves.toMatchObject({ accepted: true, version: 2, state: { value: 2 } });
  });

  it('When a command is handled, then the lock is released afterwards, also when it fails', async () => {
    const core = await buildCore();
    const id = randomUUID();
    const lockKey = core.keys.aggregateLock('counter', id);
    await core.commands.handle(counterDecider, incrementInput(id));
    expect(await core.redis.exists(lockKey)).toBe(0);
    await expect(
      core.commands.handle(counterDecider, { ...incrementInput(id), expectedVersion: 7 }),
    ).rejects.toBeInstanceOf(ConcurrencyConflictError);
    expect(await core.redis.exists(lockKey)).toBe(0);
  });
});

describe('The aggregate lock', () => {
  it('When someone else holds the lock, then handle gives up with AggregateBusyError within the wait bound, and works once it is released', async () => {
    const core = await buildCore({ LOCK_WAIT_MS: '200' });
    const id = randomUUID();
    const lockKey = core.keys.aggregateLock('counter', id);
    await core.redis.set(lockKey, 'someone-else', 'PX', 30_000);

    const started = Date.now();
    const busy = core.commands.handle(counterDecider, incrementInput(id));
    await expect(busy).rejects.toBeInstanceOf(AggregateBusyError);
    const elapsed = Date.now() - started;
    expect(elapsed).toBeGreaterThanOrEqual(190);
    expect(elapsed).toBeLessThan(1_000);
    await expect(busy).rejects.toMatchObject({ aggregateId: id });

    expect(await core.redis.get(lockKey)).toBe('someone-else');
    expect(await core.store.streamLength('counter', id)).toBe(0);

    await core.redis.del(lockKey);
    await expect(core.commands.handle(counterDecider, incrementInput(id))).resolves.toMatchObject({
      accepted: true,
      version: 1,
    });
  });
});

describe('The version fence', () => {
  it('When a holder outlives its lock and another appends meanwhile, then the late append is rejected and the stream holds only the other holder’s event', async () => {
    const paused = deferred();
    const resume = deferred();
    const holderA = await buildCore(
      { LOCK_TTL_MS: '200' },
      {
        async beforeAppend() {
          paused.resolve();
          await resume.promise;
        },
      },
    );
    const holderB = await buildCore({ LOCK_TTL_MS: '200', REDIS_KEY_PREFIX: holderA.config.redisKeyPrefix });
    const id = randomUUID();
    const lockKey = holderA.keys.aggregateLock('counter', id);

    const handlingA = holderA.commands.handle(counterDecider, incrementInput(id));
    const settledA = handlingA.then(
      () => null,
      (error: unknown) => error,
    );
    await paused.promise;
    // A has decided and now sits past its lock's TTL.
    await eventually(async () => (await holderA.redis.exists(lockKey)) === 0, 5_000, 10);

    const outcomeB = await holderB.commands.handle(counterDecider, incrementInput(id));
    expect(outcomeB).toMatchObject({ accepted: true, version: 1 });

    resume.resolve();
    const errorA = await settledA;
    expect(errorA).toBeInstanceOf(ConcurrencyConflictError);
    expect(errorA).toMatchObject({ aggregateId: id, expectedVersion: 0, actualVersion: 1 });

    const stream = await holderA.store.readStream('counter', id);
    expect(stream.map((event) => event.eventId)).toEqual(
      outcomeB.accepted ? [outcomeB.events[0]?.eventId] : [],
    );
    expect(stream).toHaveLength(1);
    expect(await logEventsOf(holderA, id)).toEqual(stream);
    expect(await holderA.store.loadRecord('counter', id, counterDecider.initialState)).toEqual({
      version: 1,
      state: { value: 1 },
    });
  });
  it('When a holder finishes after its lock expired and was taken by another, then it leaves the other’s lock in place', async () => {
    const paused = deferred();
    const resume = deferred();
    const holder = await buildCore(
      { LOCK_TTL_MS: '200' },
      {
        async beforeAppend() {
          paused.resolve();
          await resume.promise;
        },
      },
    );
    const id = randomUUID();
    const lockKey = holder.keys.aggregateLock('counter', id);

    const handling = holder.commands.handle(counterDecider, incrementInput(id));
    await paused.promise;
    await eventually(async () => (await holder.redis.exists(lockKey)) === 0, 5_000, 10);
    await holder.redis.set(lockKey, 'the-next-holder', 'PX', 30_000);
    resume.resolve();

    // Nothing was appended meanwhile, so the fence (a version, not the lock) lets it through.
    await expect(handling).resolves.toMatchObject({ accepted: true, version: 1 });
    expect(await holder.redis.get(lockKey)).toBe('the-next-holder');
  });
});

describe('Two processes racing on one aggregate', () => {
  interface RaceResult {
    pid: number;
    accepted: number;
    rejected: number;
    failed: number;
    errors: string[];
    startedAt: number;
    finishedAt: number;
  }

  const lastResult = (racer: ServiceProcess): RaceResult =>
    JSON.parse(
      racer
        .stdout()
        .split('\n')
        .filter((line) => line.includes('"race":"done"'))
        .at(-1) ?? 'null',
    ) as RaceResult;

  it('When two processes append 100 increments each at once, then the stream holds exactly the 200 accepted events at versions 1..200', async () => {
    const core = await buildCore();
    const id = randomUUID();
    const env = {
      ...testRedisEnv(),
      REDIS_KEY_PREFIX: core.config.redisKeyPrefix,
      LOCK_WAIT_MS: '10000',
      RACE_AGGREGATE_ID: id,
      RACE_COMMANDS: '100',
      RACE_GO_KEY: `${core.config.redisKeyPrefix}race:go`,
    };
    const racers = [
      startServiceProcess('test/helpers/race-appender.ts', env),
      startServiceProcess('test/helpers/race-appender.ts', env),
    ];
    try {
      await Promise.all(racers.map((racer) => racer.waitForOutput('"race":"ready"', 30_000)));
      await core.redis.set(env.RACE_GO_KEY, '1');
      const codes = await Promise.all(racers.map((racer) => racer.exited));
      expect({ codes, stderr: racers.map((racer) => racer.stderr()) }).toEqual({
        codes: [0, 0],
        stderr: ['', ''],
      });

      const results = racers.map(lastResult);
      for (const result of results) expect(result).toMatchObject({ rejected: 0, failed: 0, errors: [] });
      const accepted = results.reduce((sum, result) => sum + result.accepted, 0);
      expect(accepted).toBe(200);

      const stream = await core.store.readStream('counter', id);
      expect(stream).toHaveLength(accepted);
      expect(stream.map((event) => event.version)).toEqual(Array.from({ length: 200 }, (_, i) => i + 1));
      // Every decision saw the state its version follows: no lost update.
      expect(stream.map((event) => (event.data as Incremented['data']).value)).toEqual(
        stream.map((event) => event.version),
      );
      expect(new Set(stream.map((event) => event.eventId)).size).toBe(200);
      for (const result of results) {
        const own = stream.filter((event) => event.metadata.correlationId === `race-${result.pid}`);
        expect(own).toHaveLength(result.accepted);
      }
      // The processes really raced: each was still working when the other started.
      expect(Math.max(...results.map((result) => result.startedAt))).toBeLessThan(
        Math.min(...results.map((result) => result.finishedAt)),
      );

      expect(await logEventsOf(core, id)).toEqual(stream);
      expect(await core.store.loadRecord('counter', id, counterDecider.initialState)).toEqual({
        version: 200,
        state: { value: 200 },
      });
    } finally {
      for (const racer of racers) if (racer.child.exitCode === null) racer.child.kill('SIGKILL');
    }
  }, 60_000);
});
