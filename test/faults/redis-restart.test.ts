/**
 * Redis restarted (AOF with appendfsync always in this test) between and during commands: every
 * command answered 200 is present afterwards; an interrupted one is either fully applied or absent,
 * never half; the processes reconnect without a restart.
 *
 * Each test runs a Redis of its own with AOF fsynced on every write, so whatever Redis answered
 * survives a SIGKILL, and restarts it on the same port and directory.
 */
import { randomUUID } from 'node:crypto';

import request from 'supertest';

import type { EventEnvelope } from '../../shared/event-store/envelope';
import { resolveLogEntries } from '../../shared/event-stream/log-reader';
import { fantasyTeamDecider } from '../../shared/fantasy-team/fantasy-team.decider';
import type { FantasyTeamEvent } from '../../shared/fantasy-team/fantasy-team.events';
import { partitionOf } from '../../shared/redis/partitions';
import { createTestApp, type TestApp, uniquePrefix } from '../helpers/app-fixture';
import { DurableRedis } from '../helpers/durable-redis';
import { faultStacks } from '../helpers/fault-stack';
import { bearerToken, type Exchange, exchange } from '../helpers/http-client';
import { eventually, isAlive } from '../helpers/processes';
import { caughtUp, rosterOf, storedViews, viewFromRecord } from '../helpers/projector-fixtures';

const PASSWORD = 'restart-test-password';
const TEAM = fantasyTeamDecider.aggregateType;

/** A team's events as its stream holds them, and as its log partition mirrors them. */
async function eventsOf(subject: TestApp, teamId: string) {
  const { redis, services } = subject;
  const { keys, store } = services;
  const stream = await store.readStream(TEAM, teamId);
  const log = (
    await resolveLogEntries(redis, keys, await redis.xrange(keys.logPartition(partitionOf(teamId)), '-', '+'))
  ).filter((event) => event.aggregateId === teamId.toLowerCase());
  const entryIds = (await redis.xrange(keys.aggregateStream(TEAM, teamId), '-', '+')).map(([id]) => id);
  const record = await store.loadRecord(TEAM, teamId, fantasyTeamDecider.initialState);
  return { stream, log, entryIds, record };
}

const withRequestId = (events: readonly EventEnvelope[], requestId: string) =>
  events.filter((event) => event.metadata.requestId === requestId);

describe('Redis restarted during a command (AOF, appendfsync always)', () => {
  let redis: DurableRedis | undefined;
  let subject: TestApp | undefined;

  afterEach(async () => {
    await subject?.close();
    await redis?.destroy();
    [redis, subject] = [undefined, undefined];
  });

  it.each([
    ['SetFantasyTeamRoster', { players: rosterOf(3, 1) }],
    ['LinkFantasyTeam', { fantasyTeamExternalId: 51, fantasyUserId: 61 }],
  ])(
    'When Redis is killed after a %s is appended but before its answer is remembered, then it is answered 200 all the same, its event is there, and a retry with the same requestId answers 200 without a second event',
    async (commandType, fields) => {
      const durable = await DurableRedis.start();
      redis = durable;
      // Armed just before the command under test: Redis dies the moment its append has been answered.
      let killAfterAppend = false;
      subject = await createTestApp(
        { REDIS_URL: durable.url, REDIS_KEY_PREFIX: uniquePrefix() },
        {},
        {
          async afterAppend() {
            if (!killAfterAppend) return;
            killAfterAppend = false;
            await durable.stop('SIGKILL');
          },
        },
      );
      const { app } = subject;
      await subject.createUser({ email: 'owner@example.com', password: PASSWORD });
      const token = (
        await request(app)
          .post('/api/auth/token')
          .send({ grant_type: 'password', username: 'owner@example.com', password: PASSWORD })
      ).body as { access_token: string };
      const send = (body: object) =>
        request(app).post('/api/command').set('Authorization', `Bearer ${token.access_token}`).send(body);
      const teamId = randomUUID();
      const created = await send({
        commandType: 'CreateFantasyTeam',
        command: { aggregateRootId: teamId, name: 'Restarted' },
      });
      expect(created.status).toBe(200);

      const requestId = randomUUID();
      const body = { commandType, command: { aggregateRootId: teamId, ...fields }, requestId };
      killAfterAppend = true;
      const interrupted = await send(body);
      // The append was answered, so the outcome is known: the answer goes out although Redis could
      // not remember it. A client that lost it anyway retries, as below.
      expect({ status: interrupted.status, body: interrupted.body }).toEqual({
        status: 200,
        body: { requestId, success: true, eventCount: 1, commandType, version: 2 },
      });

      await durable.resume();
      await eventually(async () => (await request(app).get('/readyz')).status === 200, 10_000, 100);
      // /readyz asks one connection; the store's may reconnect a moment later (it fails fast meanwhile).
      const restarted = subject;
      let read: Awaited<ReturnType<typeof eventsOf>> | undefined;
      await eventually(
        async () => (read = await eventsOf(restarted, teamId).catch(() => undefined)) !== undefined,
        10_000,
        100,
      );
      // The append was answered before Redis died, so fsync-always kept it, whole.
      const afterRestart = read!;
      expect(withRequestId(afterRestart.stream, requestId)).toHaveLength(1);
      expect(afterRestart.log).toEqual(afterRestart.stream);
      expect(afterRestart.record.version).toBe(2);

      // A client that never saw its answer retries with the same requestId: the command took
      // effect, so that is what it is told, and nothing is appended again.
      const retried = await send(body);
      expect({ status: retried.status, body: retried.body }).toEqual({
        status: 200,
        body: { requestId, success: true, eventCount: 1, commandType, version: 2 },
      });
      const again = await send(body);
      expect({ status: again.status, body: again.body }).toEqual({
        status: retried.status,
        body: retried.body,
      });
      const final = await eventsOf(subject, teamId);
      expect(final.stream).toEqual(afterRestart.stream);
      expect(final.log).toEqual(afterRestart.stream);
      expect(final.entryIds).toEqual(['0-1', '0-2']);
      expect(final.record).toEqual(afterRestart.record);
    },
    30_000,
  );
});

/** One command a lane sent, every attempt of it, and how it ended. */
interface SentCommand {
  readonly teamId: string;
  readonly requestId: string;
  readonly commandType: string;
  readonly attempts: Exchange[];
  /** Answered (200 or a 4xx), or given up after a 503 or a network error without a final answer. */
  outcome: 'pending' | 200 | 400 | 403 | 409 | 'abandoned';
}

/** What a lane does to its team, step by step; then it starts another team. */
function laneCommand(step: number, teamId: string, lane: number): [string, Record<string, unknown>] {
  const aggregateRootId = teamId;
  switch (step % 5) {
    case 0:
      return ['CreateFantasyTeam', { aggregateRootId, name: `Lane ${lane}` }];
    case 1:
      return [
        'LinkFantasyTeam',
        { aggregateRootId, fantasyTeamExternalId: 100 + step, fantasyUserId: 200 + lane },
      ];
    case 2:
      return ['SetFantasyTeamRoster', { aggregateRootId, players: rosterOf((step % 4) + 2, lane) }];
    case 3:
      return ['UnlinkFantasyTeam', { aggregateRootId, unlinkReason: `step ${step}` }];
    default:
      return ['SetFantasyTeamRoster', { aggregateRootId, players: rosterOf(1, lane + step) }];
  }
}

describe('Redis restarted between and during commands over HTTP (AOF, appendfsync always)', () => {
  const stacks = faultStacks();
  afterEach(() => stacks.stop());

  it('When Redis is killed twice during traffic and restarted once between commands, then every command answered 200 is in its stream and the log exactly once, an interrupted one is whole or absent, retries with the same requestId add nothing, and the same processes carry on', async () => {
    const lanes = 4;
    const owners = Array.from({ length: lanes }, (_, lane) => `lane-${lane}@example.com`);
    // The inspector runs in-process, on the same Redis and prefix: it creates the accounts and
    // reads the write side after.
    const {
      redis: durable,
      inspector,
      ingress,
      worker,
    } = await stacks.start(
      {
        JWT_SECRET: 'restart-test-secret-restart-test-secret-012',
        // A lock taken just before Redis died outlives its holder's failed release by this much.
        LOCK_TTL_MS: '2000',
      },
      async (checker) => {
        for (const email of owners) await checker.createUser({ email, password: PASSWORD });
      },
    );
    const pids = { ingress: ingress.process.child.pid, worker: worker.child.pid };
    const { baseUrl } = ingress;
    const tokens = await Promise.all(owners.map((email) => bearerToken(baseUrl, email, PASSWORD)));

    const sent: SentCommand[] = [];
    let stopping = false;
    let paused: Promise<void> | undefined;
    const idle = new Set<number>();
    const retryable = (answer: Exchange) => !answer.ok || answer.status === 503;
    /** Per lane: how many of its attempts were cut short (503 or a network error). */
    const interruptionsOf = Array.from({ length: lanes }, () => 0);
    let interruptedCommands = 0;
    const runLane = async (lane: number) => {
      let teamId = randomUUID();
      for (let step = 0; !stopping; step++) {
        if (paused) {
          idle.add(lane);
          await paused;
          idle.delete(lane);
        }
        if (step > 0 && step % 5 === 0) teamId = randomUUID();
        const [commandType, fields] = laneCommand(step, teamId, lane);
        const command: SentCommand = {
          teamId,
          requestId: randomUUID(),
          commandType,
          attempts: [],
          outcome: 'pending',
        };
        sent.push(command);
        const body = { commandType, command: fields, requestId: command.requestId };
        for (;;) {
          const answer = await exchange(baseUrl, 'POST', '/api/command', {
            authorization: tokens[lane],
            body,
          });
          command.attempts.push(answer);
          if (!retryable(answer)) {
            command.outcome = (answer as { status: SentCommand['outcome'] }).status;
            break;
          }
          interruptionsOf[lane] = (interruptionsOf[lane] ?? 0) + 1;
          // Every third interrupted command is given up, as a client might: it must be whole or absent.
          if (command.attempts.length === 1 && ++interruptedCommands % 3 === 0) {
            command.outcome = 'abandoned';
            break;
          }
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
      }
    };
    const oks = () => sent.filter(({ outcome }) => outcome === 200).length;
    const moreOks = async (count: number) => {
      const target = oks() + count;
      await eventually(() => oks() >= target, 20_000, 20);
    };
    /** Kills Redis mid-traffic, keeps it away until every lane has met that, and starts it again. */
    const restartDuringTraffic = async () => {
      const before = [...interruptionsOf];
      await durable.stop('SIGKILL');
      await eventually(() => interruptionsOf.every((count, lane) => count > (before[lane] ?? 0)), 20_000, 10);
      await durable.resume();
    };

    const running = Array.from({ length: lanes }, (_, lane) => runLane(lane));
    try {
      await moreOks(20);
      // During: Redis dies with commands in flight, and comes back on the same port and AOF.
      await restartDuringTraffic();
      await moreOks(20);
      // Between: no command in flight while Redis stops cleanly and starts again.
      let resume!: () => void;
      paused = new Promise<void>((resolve) => (resume = resolve));
      await eventually(() => idle.size === lanes, 20_000, 10);
      await durable.restart('SIGTERM');
      paused = undefined;
      resume();
      await moreOks(20);
      // During, once more.
      await restartDuringTraffic();
      await moreOks(20);
    } finally {
      stopping = true;
      paused = undefined;
      await Promise.all(running);
    }

    const answers = sent.flatMap(({ attempts }) => attempts);
    // Nothing but the command's own answers, or a 503 while Redis was away: never a 500, never a hang.
    expect(
      answers
        .filter((answer) => !answer.ok || ![200, 400, 503].includes(answer.status))
        .map((answer) => JSON.stringify(answer)),
    ).toEqual([]);
    // Both kills met every lane; some interrupted commands were retried, some given up.
    expect(interruptionsOf.every((count) => count >= 2)).toBe(true);
    expect(sent.filter(({ outcome }) => outcome === 'abandoned').length).toBeGreaterThan(0);
    expect(
      sent.filter(({ attempts, outcome }) => attempts.some(retryable) && outcome === 200).length,
    ).toBeGreaterThan(0);

    // Every team as the write side holds it: stream, log and record agree, versions without gaps.
    const teamIds = [...new Set(sent.map(({ teamId }) => teamId))];
    const teams = new Map(
      await Promise.all(teamIds.map(async (id) => [id, await eventsOf(inspector, id)] as const)),
    );
    const faults: string[] = [];
    for (const [teamId, { stream, log, entryIds, record }] of teams) {
      const gapless = stream.map((_, i) => i + 1);
      if (JSON.stringify(stream.map((event) => event.version)) !== JSON.stringify(gapless))
        faults.push(`${teamId}: versions ${stream.map((event) => event.version).join(',')}`);
      if (JSON.stringify(entryIds) !== JSON.stringify(gapless.map((version) => `0-${version}`)))
        faults.push(`${teamId}: entry ids ${entryIds.join(',')}`);
      if (JSON.stringify(log) !== JSON.stringify(stream))
        faults.push(`${teamId}: the log differs from the stream`);
      if (record.version !== stream.length)
        faults.push(`${teamId}: record at ${record.version}, stream at ${stream.length}`);
      const folded = stream.reduce(
        (state, event) =>
          fantasyTeamDecider.evolve(state, { type: event.eventType, data: event.data } as FantasyTeamEvent),
        fantasyTeamDecider.initialState,
      );
      if (JSON.stringify(record.state) !== JSON.stringify(folded))
        faults.push(`${teamId}: record state is not the fold`);
    }
    // Every command: answered 200 means exactly one event; refused means none; given up, at most one.
    const allEvents = [...teams.values()].flatMap(({ stream }) => stream);
    for (const command of sent) {
      const own = withRequestId(allEvents, command.requestId);
      const expected = command.outcome === 200 ? [1] : command.outcome === 'abandoned' ? [0, 1] : [0];
      if (!expected.includes(own.length))
        faults.push(`${command.commandType} ${command.requestId} (${command.outcome}): ${own.length} events`);
      if (own.some((event) => event.aggregateId !== command.teamId))
        faults.push(`${command.requestId}: on another team`);
    }
    expect(faults).toEqual([]);
    expect(
      allEvents.every((event) => sent.some(({ requestId }) => requestId === event.metadata.requestId)),
    ).toBe(true);

    // The same processes carry on: the worker's projector caught up with every team after the restarts.
    await eventually(() => caughtUp(inspector.redis, inspector.services.keys), 20_000, 50);
    expect(await storedViews(inspector.redis, inspector.services.keys, teamIds)).toEqual(
      await Promise.all(teamIds.map((id) => viewFromRecord(inspector.services.store, id))),
    );
    expect({
      ingress: isAlive(ingress.process),
      worker: isAlive(worker),
      pids: { ingress: ingress.process.child.pid, worker: worker.child.pid },
    }).toEqual({ ingress: true, worker: true, pids });
    expect({ ingress: ingress.process.stderr(), worker: worker.stderr() }).toEqual({
      ingress: '',
      worker: '',
    });
  }, 60_000);
});
