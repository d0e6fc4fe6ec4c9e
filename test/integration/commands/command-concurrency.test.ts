import { randomUUID } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';

import { resolveLogEntries } from '../../../shared/event-stream/log-reader';
import { fantasyTeamDecider } from '../../../shared/fantasy-team/fantasy-team.decider';
import type { FantasyTeamEvent } from '../../../shared/fantasy-team/fantasy-team.events';
import { fantasyTeamProjection } from '../../../shared/fantasy-team/fantasy-team.projection';
import { partitionOf } from '../../../shared/redis/partitions';
import { rebuildProjection } from '../../../workers/projector/rebuild';
import { createTestApp, type TestApp, testRedisEnv, uniquePrefix } from '../../helpers/app-fixture';
import { type ServiceProcess, startServiceProcess } from '../../helpers/processes';
import { viewFromRecord } from '../../helpers/projector-fixtures';

const INGRESS_PROCESSES = 3;
const REQUESTS = 200;
const ADMIN = { email: 'concurrency-admin@example.com', password: 'concurrency admin password' };
const TEAM = fantasyTeamDecider.aggregateType;

const ALREADY_LINKED = 'Team is already linked to a fantasy identity. Unlink first before linking a new one';
const NOT_LINKED = 'Team has no linked fantasy identity';

interface Answer {
  readonly index: number;
  readonly commandType: 'LinkFantasyTeam' | 'UnlinkFantasyTeam';
  readonly port: number;
  readonly status: number;
  readonly retryAfter: string | null;
  readonly body: Record<string, unknown>;
}

function listeningPort(ingress: ServiceProcess): number {
  const line = ingress
    .stdout()
    .split('\n')
    .find((text) => text.includes('ingress listening'));
  const { port } = JSON.parse(line ?? '{}') as { port?: number };
  if (!port) throw new Error(`no port in: ${ingress.stdout()}`);
  return port;
}

async function postJson(port: number, path: string, body: unknown, token?: string) {
  const res = await fetch(`http://127.0.0.1:${port}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify(body),
  });
  return {
    status: res.status,
    retryAfter: res.headers.get('retry-after'),
    // Parsed here, not by fetch: objects from fetch's realm fail strict deep equality in jest.
    body: JSON.parse(await res.text()) as Record<string, unknown>,
  };
}

/** Whether an answer is one the spec (or the busy rule) allows for this command. */
function isAllowed(answer: Answer): boolean {
  const { status, body, commandType } = answer;
  const failure = { requestId: null, success: false, eventCount: 0, commandType };
  switch (status) {
    case 200:
      return (
        typeof body.version === 'number' &&
        isDeepStrictEqual(body, {
          requestId: null,
          success: true,
          eventCount: 1,
          commandType,
          version: body.version,
        })
      );
    case 400:
      return isDeepStrictEqual(body, {
        ...failure,
        errorCode: 'COMMAND_VALIDATION_ERROR',
        errorMessage: commandType === 'LinkFantasyTeam' ? ALREADY_LINKED : NOT_LINKED,
      });
    case 503:
      return (
        isDeepStrictEqual(
          { ...body, errorMessage: null },
          { ...failure, errorCode: 'AGGREGATE_BUSY', errorMessage: null },
        ) && answer.retryAfter === '1'
      );
    default:
      return false;
  }
}

describe('Concurrent commands on one team through several ingress processes', () => {
  let subject: TestApp;
  const ingresses: ServiceProcess[] = [];

  beforeAll(async () => {
    subject = await createTestApp({ REDIS_KEY_PREFIX: uniquePrefix() });
  });
  afterAll(async () => {
    for (const ingress of ingresses) if (ingress.child.exitCode === null) ingress.child.kill('SIGKILL');
    await subject?.close();
  });

  it('When 200 Link and Unlink commands race on one team from 3 processes, then the stream length is exactly 1 + the number of 200 answers and the final state is consistent', async () => {
    const env = {
      PORT: '0',
      HOST: '127.0.0.1',
      ...testRedisEnv(),
      REDIS_KEY_PREFIX: subject.config.redisKeyPrefix,
      JWT_SECRET: 'concurrency-test-secret-of-at-least-32-characters',
      ADMIN_EMAIL: ADMIN.email,
      ADMIN_PASSWORD: ADMIN.password,
      LOCK_WAIT_MS: '5000',
    };
    for (let i = 0; i < INGRESS_PROCESSES; i++) ingresses.push(startServiceProcess('ingress/main.ts', env));
    await Promise.all(ingresses.map((ingress) => ingress.waitForOutput('ingress listening', 40_000)));
    const ports = ingresses.map(listeningPort);
    expect(new Set(ports).size).toBe(INGRESS_PROCESSES);

    const token = await postJson(ports[0] ?? 0, '/api/auth/token', {
      grant_type: 'password',
      username: ADMIN.email,
      password: ADMIN.password,
    });
    expect(token.status).toBe(200);
    const accessToken = String(token.body.access_token);

    const teamId = randomUUID();
    const created = await postJson(
      ports[1] ?? 0,
      '/api/command',
      { commandType: 'CreateFantasyTeam', command: { aggregateRootId: teamId, name: 'Contended' } },
      accessToken,
    );
    expect(created).toMatchObject({ status: 200, body: { success: true, eventCount: 1 } });

    const answers: Answer[] = await Promise.all(
      Array.from({ length: REQUESTS }, async (_, index): Promise<Answer> => {
        const port = ports[index % INGRESS_PROCESSES] ?? 0;
        const commandType = index % 2 === 0 ? 'LinkFantasyTeam' : 'UnlinkFantasyTeam';
        const command =
          commandType === 'LinkFantasyTeam'
            ? { aggregateRootId: teamId, fantasyTeamExternalId: 1_000 + index, fantasyUserId: 5_000 + index }
            : { aggregateRootId: teamId, unlinkReason: `reason ${index}` };
        const res = await postJson(port, '/api/command', { commandType, command }, accessToken);
        return { index, commandType, port, ...res };
      }),
    );

    // Every answer is a success, a rule failure with the spec's text, or "busy": nothing else.
    expect(answers.filter((answer) => !isAllowed(answer))).toEqual([]);
    const accepted = answers.filter((answer) => answer.status === 200);
    expect(accepted.length).toBeGreaterThan(0);
    // Every process served some of the accepted commands: they really raced.
    expect(new Set(accepted.map((answer) => answer.port)).size).toBe(INGRESS_PROCESSES);

    const { redis } = subject;
    const { keys, store } = subject.services;
    expect(await redis.xlen(keys.aggregateStream(TEAM, teamId))).toBe(1 + accepted.length);

    const events = await store.readStream(TEAM, teamId);
    expect(events.map((event) => event.version)).toEqual(
      Array.from({ length: events.length }, (_, i) => i + 1),
    );
    const types = events.map((event) => event.eventType);
    expect(types[0]).toBe('FantasyTeamCreatedEvent');
    // After creation, links and unlinks alternate strictly: no decision saw a stale state.
    types
      .slice(1)
      .forEach((type, i) =>
        expect(type).toBe(i % 2 === 0 ? 'FantasyTeamLinkedEvent' : 'FantasyTeamUnlinkedEvent'),
      );
    // Each event is the answer to exactly one accepted request, and every accepted request left one.
    const acceptedLinks = accepted
      .filter((answer) => answer.commandType === 'LinkFantasyTeam')
      .map((answer) => 1_000 + answer.index)
      .sort();
    const linkedIds = events
      .filter((event) => event.eventType === 'FantasyTeamLinkedEvent')
      .map(
        (event) =>
          (event.data as Extract<FantasyTeamEvent, { type: 'FantasyTeamLinkedEvent' }>['data'])
            .fantasyTeamExternalId,
      )
      .sort();
    expect(linkedIds).toEqual(acceptedLinks);
    const acceptedReasons = accepted
      .filter((answer) => answer.commandType === 'UnlinkFantasyTeam')
      .map((answer) => `reason ${answer.index}`)
      .sort();
    const unlinkReasons = events
      .filter((event) => event.eventType === 'FantasyTeamUnlinkedEvent')
      .map((event) => (event.data as { unlinkReason: string }).unlinkReason)
      .sort();
    expect(unlinkReasons).toEqual(acceptedReasons);

    // The global log mirrors the stream, in the same order.
    const logged = (
      await resolveLogEntries(
        redis,
        keys,
        await redis.xrange(keys.logPartition(partitionOf(teamId)), '-', '+'),
      )
    ).filter((event) => event.aggregateId === teamId);
    expect(logged.map((event) => event.eventId)).toEqual(events.map((event) => event.eventId));

    // Final state: linked iff the last event is a link, with that link's ids.
    const last = events.at(-1);
    const record = await store.loadRecord(TEAM, teamId, fantasyTeamDecider.initialState);
    expect(record.version).toBe(events.length);
    if (last?.eventType === 'FantasyTeamLinkedEvent') {
      const { fantasyTeamExternalId, fantasyUserId } = last.data as {
        fantasyTeamExternalId: number;
        fantasyUserId: number;
      };
      expect(record.state).toMatchObject({ fantasyTeamExternalId, fantasyUserId });
    } else {
      expect(record.state).toMatchObject({ fantasyTeamExternalId: 0, fantasyUserId: 0 });
    }

    // And the read side agrees once projected.
    await rebuildProjection(redis, keys, fantasyTeamProjection);
    const view = await postJson(
      ports[2] ?? 0,
      '/api/readmodel',
      { query: { queryType: 'GetFantasyTeam', id: teamId } },
      accessToken,
    );
    expect(view).toMatchObject({
      status: 200,
      body: { results: [await viewFromRecord(store, teamId)], totalCount: 1 },
    });

    for (const ingress of ingresses) ingress.child.kill('SIGTERM');
    expect(await Promise.all(ingresses.map((ingress) => ingress.exited))).toEqual([0, 0, 0]);
  }, 60_000);
});
