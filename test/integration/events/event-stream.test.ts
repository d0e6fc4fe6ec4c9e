import { randomUUID } from 'node:crypto';

import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import request from 'supertest';

import { MESSAGES } from '../../../ingress/events/event-stream-request';
import { beginningPosition, encodePosition } from '../../../shared/event-stream/log-position';
import { logEnds, resolveLogEntries } from '../../../shared/event-stream/log-reader';
import { partitionsTrimmedPast, trimLog } from '../../../shared/event-stream/log-retention';
import { listen, type RunningServer } from '../../../shared/http/server';
import {
  isPublicEventType,
  PUBLIC_EVENT_TYPES,
  publicEventSchema,
} from '../../../shared/public-events/event-catalogue';
import { LOG_PARTITIONS, partitionOf } from '../../../shared/redis/partitions';
import { changeAccount } from '../../helpers/account-changes';
import { createTestApp, type TestApp, testRedisEnv, uniquePrefix } from '../../helpers/app-fixture';
import { responseContract } from '../../helpers/openapi-contract';
import { eventually, startServiceProcess } from '../../helpers/processes';
import { seedPlayer } from '../../helpers/seed-players';
import { SseClient } from '../../helpers/sse-client';
import { passwordGrantToken } from '../../helpers/tokens';

/**
 * GET /api/events over real HTTP (a node http client against the app listening on a free port;
 * supertest would buffer the stream) on a real Redis. Tests in this file run one after another
 * against one app and one log, so "every event after X" is exactly what the test appended.
 */

const PASSWORD = 'event-stream-password';
const ADMIN = 'events-admin@example.com';
const MACHINE = 'events-machine@example.com';
const MEMBER = 'events-member@example.com';
const basic = (email: string, password = PASSWORD) =>
  `Basic ${Buffer.from(`${email}:${password}`).toString('base64')}`;

interface Payload {
  type: string;
  timestamp: string;
  data: Record<string, unknown> & { aggregateId: string; version: number };
}

describe('The event stream (GET /api/events)', () => {
  let subject: TestApp;
  let running: RunningServer;
  let base: string;
  let machineToken: string;
  const clients: SseClient[] = [];

  const connect = async (query = '', headers: Record<string, string> = {}) => {
    const client = await SseClient.connect(`${base}/api/events${query}`, {
      authorization: basic(ADMIN),
      ...headers,
    });
    clients.push(client);
    return client;
  };
  /** Connected and past the id-only message that opens every stream. */
  const connected = async (query = '', headers: Record<string, string> = {}) => {
    const client = await connect(query, headers);
    expect(client.status).toBe(200);
    await client.until((c) => c.messages.length > 0, 10_000, 'the opening id');
    return client;
  };
  const payloads = (client: SseClient) => client.payloads<Payload>();
  const userEventsOf = (client: SseClient, ids: readonly string[]) =>
    payloads(client).filter((payload) => ids.includes(payload.data.aggregateId));

  /** Accounts without passwords (no hash to compute): one UserCreatedEvent each, spread over partitions. */
  async function createAccounts(count: number): Promise<string[]> {
    const ids: string[] = [];
    for (let i = 0; i < count; i++) {
      ids.push(await subject.createUser({ email: `e-${randomUUID()}@example.com`, roles: ['Member'] }));
    }
    return ids;
  }

  const disable = (userId: string) =>
    changeAccount(subject.services, userId, {
      type: 'DisableUser',
      data: { securityStamp: randomUUID(), reason: null },
    });

  /** Every entry of the log, in each partition's order, as (aggregate id, version) keys. */
  async function allLogKeys(): Promise<string[]> {
    const keys: string[] = [];
    for (let partition = 0; partition < LOG_PARTITIONS; partition++) {
      const entries = await subject.redis.xrange(subject.services.keys.logPartition(partition), '-', '+');
      for (const envelope of await resolveLogEntries(subject.redis, subject.services.keys, entries)) {
        keys.push(`${envelope.aggregateId}@${envelope.version}`);
      }
    }
    return keys;
  }
  const keyOf = (payload: Payload) => `${payload.data.aggregateId}@${payload.data.version}`;

  beforeAll(async () => {
    subject = await createTestApp({ SSE_HEARTBEAT_MS: '100' });
    running = await listen(subject.app, 0, '127.0.0.1');
    base = `http://127.0.0.1:${running.port}`;
    await subject.createUser({ email: ADMIN, password: PASSWORD, roles: ['Admin'] });
    await subject.createUser({ email: MEMBER, password: PASSWORD, roles: ['Member'] });
    await subject.createUser({
      email: MACHINE,
      password: PASSWORD,
      roles: ['ServiceAccount'],
      userType: 'ServiceAccount',
    });
    machineToken = await passwordGrantToken(subject.app, MACHINE, PASSWORD);
  });
  afterEach(() => {
    for (const client of clients.splice(0)) client.close();
  });
  afterAll(async () => {
    await subject?.services.eventStreams.close();
    await running?.close(5_000);
    await subject?.close();
  });

  it('When a client connects with from=beginning, then it receives every event of the log once, each in the webhook payload shape, as a documented 200 stream', async () => {
    const ids = await createAccounts(6);
    const client = await connected('?from=beginning');
    expect(client.headers['content-type']).toMatch(/^text\/event-stream/);
    expect(client.headers['x-accel-buffering']).toBe('no');
    expect(client.headers['cache-control']).toContain('no-transform');
    expect(client.headers['content-encoding']).toBeUndefined();
    expect(
      responseContract().check({
        method: 'GET',
        path: '/api/events',
        requestBody: undefined,
        status: client.status,
        contentType: client.headers['content-type'],
        body: undefined,
        text: '',
      }),
    ).toEqual({ kind: 'conforms' });

    const all = await allLogKeys();
    await client.until((c) => c.events.length >= all.length, 10_000, 'the whole log');
    expect(payloads(client).map(keyOf).sort()).toEqual([...all].sort());

    const mine = userEventsOf(client, ids);
    expect(mine.map((payload) => payload.data.aggregateId)).toEqual(expect.arrayContaining(ids));
    const first = mine[0] as Payload;
    expect(first).toEqual({
      type: 'UserCreatedEvent',
      timestamp: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      data: expect.objectContaining({
        aggregateId: first.data.aggregateId,
        version: 1,
        roles: ['Member'],
      }) as unknown,
    });
    for (const message of client.events) {
      expect(message.event).toBe((JSON.parse(message.data as string) as Payload).type);
      expect(message.id).toMatch(/^1\.[A-Za-z0-9_-]+$/);
    }
  });

  it('When events are appended after a client connected with from=now, then it receives exactly those, live', async () => {
    await createAccounts(2);
    const client = await connected('?from=now');
    const ids = await createAccounts(5);
    await client.until((c) => c.events.length >= 5, 10_000, 'five live events');
    await disable(ids[0] as string);
    await client.until((c) => c.events.length >= 6, 10_000, 'the disable');
    const received = payloads(client).map(keyOf);
    // Exactly these; in order per aggregate (events of different aggregates created in the same
    // millisecond, in different partitions, may come in either order).
    expect([...received].sort()).toEqual([...ids.map((id) => `${id}@1`), `${ids[0]}@2`].sort());
    expect(received.indexOf(`${ids[0]}@1`)).toBeLessThan(received.indexOf(`${ids[0]}@2`));
  });

  it('When a client reconnects with Last-Event-ID after events were appended while it was away, then it receives exactly the missed events, none twice', async () => {
    const client = await connected('?from=now');
    const before = await createAccounts(8);
    await client.until((c) => c.events.length >= 8, 10_000, 'the first events');
    const lastEventId = client.lastEventId as string;
    client.close();

    const missed = await createAccounts(10);
    for (const id of before.slice(0, 3)) await disable(id);

    const resumed = await connected('', { 'Last-Event-ID': lastEventId });
    const expected = [...missed.map((id) => `${id}@1`), ...before.slice(0, 3).map((id) => `${id}@2`)];
    await resumed.until((c) => c.events.length >= expected.length, 10_000, 'the missed events');
    // And live from there, still without a repeat.
    const after = await createAccounts(3);
    await resumed.until((c) => c.events.length >= expected.length + 3, 10_000, 'the live events');
    expect(payloads(resumed).map(keyOf).sort()).toEqual(
      [...expected, ...after.map((id) => `${id}@1`)].sort(),
    );
    const received = payloads(resumed).map(keyOf);
    expect(new Set(received).size).toBe(received.length);
  });

  it('When a client resumes from a position in `from` (and Last-Event-ID is also sent), then Last-Event-ID wins', async () => {
    const client = await connected('?from=now');
    const first = await createAccounts(2);
    await client.until((c) => c.events.length >= 1, 10_000, 'one event');
    const afterFirst = client.events[0]?.id as string;
    await client.until((c) => c.events.length >= 2, 10_000, 'two events');
    const afterSecond = client.events[1]?.id as string;

    const fromParam = await connected(`?from=${encodeURIComponent(afterFirst)}`);
    await fromParam.until((c) => c.events.length >= 1, 10_000, 'the second event');
    expect(payloads(fromParam).map(keyOf)).toEqual([`${first[1]}@1`]);

    const both = await connected(`?from=${encodeURIComponent(afterFirst)}`, { 'Last-Event-ID': afterSecond });
    const later = await createAccounts(1);
    await both.until((c) => c.events.length >= 1, 10_000, 'the later event');
    expect(payloads(both).map(keyOf)).toEqual([`${later[0]}@1`]);
  });

  it('When streams read while events are appended, disconnecting and resuming again and again, then each sees every event exactly once, in order per aggregate', async () => {
    const ROUNDS = 30;
    const expectedTotal = (await allLogKeys()).length + 2 * ROUNDS;
    let appendedAll = false;
    const appending = (async () => {
      for (let round = 0; round < ROUNDS; round++) {
        const [id] = await createAccounts(1);
        await disable(id as string);
      }
      appendedAll = true;
    })();
    const readers = [1, 2, 3, 5].map(async (perConnection) => {
      const keys: string[] = [];
      let lastEventId = encodePosition(beginningPosition());
      while (keys.length < expectedTotal) {
        const client = await connected('', { 'Last-Event-ID': lastEventId });
        // A few events per connection, then away; the last connection waits for the rest.
        await client
          .until(
            (c) =>
              c.events.length >= perConnection ||
              (appendedAll && keys.length + c.events.length >= expectedTotal),
            10_000,
            'events',
          )
          .catch(() => undefined);
        client.close();
        keys.push(...payloads(client).map(keyOf));
        lastEventId = client.lastEventId ?? lastEventId;
      }
      return keys;
    });
    const seen = await Promise.all(readers);
    await appending;
    const all = await allLogKeys();
    for (const keys of seen) {
      expect([...keys].sort()).toEqual([...all].sort());
      const versionsByAggregate = new Map<string, number[]>();
      for (const key of keys) {
        const [aggregateId, version] = key.split('@') as [string, string];
        versionsByAggregate.set(aggregateId, [
          ...(versionsByAggregate.get(aggregateId) ?? []),
          Number(version),
        ]);
      }
      for (const versions of versionsByAggregate.values())
        expect(versions).toEqual([...versions].sort((a, b) => a - b));
    }
  });

  it("When teams, players, identifiers, a season and accounts change, then every event sent matches its schema in the catalogue (the document's webhooks), and each type written was seen", async () => {
    const ajv = new Ajv2020({ strict: true, strictRequired: false, allErrors: true });
    addFormats(ajv);
    const client = await connected('?from=now');
    const token = await passwordGrantToken(subject.app, ADMIN, PASSWORD);
    const seed = (players: object[]) =>
      request(subject.app)
        .post('/api/import')
        .set('Authorization', basic(ADMIN))
        .send({
          requestId: randomUUID(),
          importerType: 'PlayerSeeding',
          priority: 'High',
          importData: { season: '2026', round: 3, finalRound: 30, players },
        })
        .expect(200);
    await seed([seedPlayer(1), seedPlayer(2)]);
    // A new feed id: the player is updated, its old feed id released and the new one claimed.
    await seed([seedPlayer(1, { feedId: 5001 })]);
    const teamId = randomUUID();
    const command = (commandType: string, fields: object) =>
      request(subject.app)
        .post('/api/command')
        .set('Authorization', `Bearer ${token}`)
        .send({ commandType, command: { aggregateRootId: teamId, ...fields } })
        .expect(200);
    await command('CreateFantasyTeam', { name: 'catalogue team' });
    await command('LinkFantasyTeam', { fantasyTeamExternalId: 7, fantasyUserId: 9 });
    await command('UnlinkFantasyTeam', {});
    const [accountId] = await createAccounts(1);
    await disable(accountId as string);
    const written = [
      ...PUBLIC_EVENT_TYPES.filter((type) => /^(Player|Season)/.test(type)),
      'FantasyTeamCreatedEvent',
      'FantasyTeamLinkedEvent',
      'FantasyTeamUnlinkedEvent',
      'UserCreatedEvent',
      'UserDisabledEvent',
    ];
    // Partitions are read independently (on a cluster, from different nodes): wait for every type.
    await client.until(
      (c) => written.every((type) => payloads(c).some((payload) => payload.type === type)),
      10_000,
      'every type written',
    );

    const seen = new Set<string>();
    for (const payload of payloads(client)) {
      expect(isPublicEventType(payload.type)).toBe(true);
      if (!isPublicEventType(payload.type)) continue;
      const valid = ajv.validate(publicEventSchema(payload.type), payload);
      expect({ type: payload.type, errors: valid ? null : ajv.errors }).toEqual({
        type: payload.type,
        errors: null,
      });
      seen.add(payload.type);
    }
    expect(written.filter((type) => !seen.has(type))).toEqual([]);
  });

  it('When types is given, then only events of those types are sent, and the heartbeat moves the id past the others', async () => {
    const client = await connected('?from=now&types=UserDisabledEvent');
    const opening = client.lastEventId;
    const ids = await createAccounts(3);
    await disable(ids[1] as string);
    await client.until((c) => c.events.length >= 1, 10_000, 'the disable');
    expect(payloads(client).map((payload) => [payload.type, payload.data.aggregateId])).toEqual([
      ['UserDisabledEvent', ids[1]],
    ]);
    await createAccounts(1);
    const afterDisable = client.lastEventId;
    await client.until((c) => c.lastEventId !== afterDisable, 10_000, 'a heartbeat with an id');
    expect(client.lastEventId).not.toBe(opening);
    // Resuming from that heartbeat's id sends nothing already passed.
    const resumed = await connected('?types=UserDisabledEvent', {
      'Last-Event-ID': client.lastEventId as string,
    });
    await disable(ids[2] as string);
    await resumed.until((c) => c.events.length >= 1, 10_000, 'the next disable');
    expect(payloads(resumed).map((payload) => payload.data.aggregateId)).toEqual([ids[2]]);
  });

  it('When a stream is idle, then a heartbeat comment arrives every SSE_HEARTBEAT_MS', async () => {
    const client = await connected('?from=now');
    await client.until(
      (c) => c.messages.filter((m) => m.comments.includes('heartbeat')).length >= 2,
      10_000,
      'heartbeats',
    );
    expect(client.events).toEqual([]);
  });

  it("When a webhook subscription is created, then the stream sends none of its events: its URL may carry the receiver's token", async () => {
    const token = await passwordGrantToken(subject.app, ADMIN, PASSWORD);
    const url = `https://hooks.example.com/in/${randomUUID()}?token=receiver-secret`;
    const created = await request(subject.app)
      .post('/api/command')
      .set('Authorization', `Bearer ${token}`)
      .send({
        commandType: 'CreateWebhookSubscription',
        command: { aggregateRootId: randomUUID(), url, eventTypes: ['*'] },
      });
    expect(created.status).toBe(200);
    const [after] = await createAccounts(1);

    const client = await connected('?from=beginning');
    await client.until(
      (c) => c.payloads<Payload>().some((payload) => payload.data.aggregateId === after),
      10_000,
      'the account created after the subscription',
    );
    expect(client.events.map((message) => message.data).join('\n')).not.toContain('receiver-secret');
    expect(client.events.some((message) => /WebhookSubscription/.test(message.data ?? ''))).toBe(false);
  });

  it('When a user event is sent, then it carries no security stamp, password or hash, though the stored event has a stamp', async () => {
    const client = await connected(
      '?from=now&types=UserCreatedEvent,UserDisabledEvent,UserPasswordChangedEvent',
    );
    const [id] = await createAccounts(1);
    await disable(id as string);
    await changeAccount(subject.services, id as string, {
      type: 'SetUserPassword',
      data: { securityStamp: randomUUID() },
    }).catch(() => undefined);
    await client.until((c) => c.events.length >= 3, 10_000, 'the events');
    const stored = await subject.redis.xrange(
      subject.services.keys.aggregateStream('user', id as string),
      '-',
      '+',
    );
    expect(stored.map(([, fields]) => fields[1]).join('')).toContain('securityStamp');
    // The fields, not the text: an event type may well be named for a password.
    const fieldNames = payloads(client).flatMap((payload) => Object.keys(payload.data));
    expect(fieldNames).not.toEqual([]);
    expect(fieldNames.filter((name) => /securityStamp|password|hash|personalData/i.test(name))).toEqual([]);
    expect(client.events.map((message) => message.data).join('\n')).not.toMatch(/securityStamp|\$argon2/);
  });

  it('When an account is erased, then its events go out without personal data, live and on a replay from the beginning', async () => {
    const email = `erased-${randomUUID()}@example.com`;
    const userId = await subject.createUser({
      email,
      firstName: 'Ada',
      lastName: 'Lovelace',
      roles: ['Member'],
    });
    const live = await connected('?from=beginning&types=UserCreatedEvent,UserDeletedEvent');
    await live.until(
      (c) => c.payloads<Payload>().some((payload) => payload.data.aggregateId === userId),
      10_000,
      'the creation',
    );
    // Before erasure the creation is sent opened: the integration sees who was created.
    expect(userEventsOf(live, [userId])[0]?.data).toMatchObject({ email, firstName: 'Ada' });

    const deleted = await request(subject.app)
      .post('/api/command')
      .set('Authorization', `Bearer ${await passwordGrantToken(subject.app, ADMIN, PASSWORD)}`)
      .send({ commandType: 'DeleteUser', command: { aggregateRootId: userId }, requestId: randomUUID() });
    expect(deleted.status).toBe(200);
    await live.until((c) => userEventsOf(c, [userId]).length >= 2, 10_000, 'the deletion');
    const deletion = live.events.find((message) => message.data?.includes('UserDeletedEvent'))?.data ?? '';
    expect(deletion).not.toMatch(/erased-|Ada|Lovelace/);

    const replay = await connected('?from=beginning&types=UserCreatedEvent,UserDeletedEvent');
    await replay.until((c) => userEventsOf(c, [userId]).length >= 2, 10_000, 'the replay');
    const replayed = replay.events
      .filter((message) => message.data?.includes(userId))
      .map((m) => m.data ?? '');
    expect(replayed.join('\n')).not.toMatch(/erased-|Ada|Lovelace|personalData/);
    expect(userEventsOf(replay, [userId])[0]?.data).toMatchObject({
      email: null,
      userName: null,
      firstName: null,
    });
  });

  it.each([
    ['disabled', (userId: string) => disable(userId)],
    [
      'left with the role Member only',
      (userId: string) =>
        changeAccount(subject.services, userId, {
          type: 'SetUserRoles',
          data: { securityStamp: randomUUID(), roles: ['Member'] },
        }),
    ],
  ])(
    'When the account of an open stream is %s, then its stream ends at the next heartbeat',
    async (_name, change) => {
      const email = `events-revoked-${randomUUID()}@example.com`;
      const userId = await subject.createUser({
        email,
        password: PASSWORD,
        roles: ['ServiceAccount'],
        userType: 'ServiceAccount',
      });
      const token = await passwordGrantToken(subject.app, email, PASSWORD);
      const client = await connected('?from=now', { authorization: `Bearer ${token}` });
      await client.until(
        (c) => c.messages.some((m) => m.comments.includes('heartbeat')),
        10_000,
        'a heartbeat',
      );
      expect(client.ended).toBe(false);
      await change(userId);
      await client.until((c) => c.ended, 10_000, 'the end of the stream');
      expect(subject.logs.text).toContain('event stream ended: its account may no longer read it');
    },
  );

  describe('refusals', () => {
    it.each([
      ['no credentials', undefined],
      ['a wrong password', basic(ADMIN, 'not-the-password')],
      ['an unknown bearer token', 'Bearer not-a-token'],
    ])('When the caller sends %s, then 401 with a challenge', async (_name, authorization) => {
      const req = request(subject.app).get('/api/events');
      const res = await (authorization ? req.set('Authorization', authorization) : req);
      expect(res.status).toBe(401);
      expect(res.headers['www-authenticate']).toContain('Bearer');
    });

    it('When a Member asks, by Basic or Bearer, then 403, whatever the query', async () => {
      const token = await passwordGrantToken(subject.app, MEMBER, PASSWORD);
      for (const authorization of [basic(MEMBER), `Bearer ${token}`]) {
        const res = await request(subject.app)
          .get('/api/events?types=Nope')
          .set('Authorization', authorization);
        expect([res.status, (res.body as { title: string }).title]).toEqual([403, 'Forbidden']);
      }
    });

    it('When a ServiceAccount asks by Bearer, then its stream opens', async () => {
      const client = await connected('?from=now', { authorization: `Bearer ${machineToken}` });
      expect(client.status).toBe(200);
    });

    it.each([
      ['an unknown type', '?types=UserCreatedEvent,NoSuchEvent', 'types'],
      ['an empty type', '?types=UserCreatedEvent,', 'types'],
      ['types twice', '?types=UserCreatedEvent&types=UserDisabledEvent', 'types'],
      ['a from that is no position', '?from=yesterday', 'from'],
      [
        'a from of another version',
        `?from=${encodePosition(beginningPosition()).replace(/^1\./, '2.')}`,
        'from',
      ],
      ['a from with a byte too many', `?from=${encodePosition(beginningPosition())}AA`, 'from'],
      ['a truncated from', `?from=${encodePosition(beginningPosition()).slice(0, 10)}`, 'from'],
      ['an unknown parameter', '?since=0', 'since'],
    ])('When the query has %s, then 400 naming it', async (_name, query, field) => {
      const res = await request(subject.app).get(`/api/events${query}`).set('Authorization', basic(ADMIN));
      expect(res.status).toBe(400);
      expect(Object.keys((res.body as { errors: object }).errors)).toEqual([field]);
    });

    it.each([
      ['garbage', 'x'.repeat(40)],
      ['a huge one', `1.${'A'.repeat(5_000)}`],
      [
        'a non-canonical spelling',
        `1.${Buffer.from([0x80, 0x00, ...Array<number>(32).fill(0)]).toString('base64url')}`,
      ],
      ['a stream entry id', '1700000000000-0'],
    ])('When Last-Event-ID is %s, then 400 (never a 500)', async (_name, lastEventId) => {
      const res = await request(subject.app)
        .get('/api/events')
        .set('Authorization', basic(ADMIN))
        .set('Last-Event-ID', lastEventId);
      expect(res.status).toBe(400);
      expect(Object.keys((res.body as { errors: object }).errors)).toEqual(['Last-Event-ID']);
    });
  });

  it('When the ingress shuts down, then its open streams end and the server closes without waiting them out', async () => {
    const own = await createTestApp({ SHUTDOWN_TIMEOUT_MS: '60000' });
    const server = await listen(own.app, 0, '127.0.0.1');
    const adminOfOwn = 'events-shutdown-admin@example.com';
    await own.createUser({ email: adminOfOwn, password: PASSWORD, roles: ['Admin'] });
    const client = await SseClient.connect(`http://127.0.0.1:${server.port}/api/events`, {
      authorization: basic(adminOfOwn),
    });
    clients.push(client);
    await client.until((c) => c.messages.length > 0, 10_000, 'the opening id');
    expect(own.services.eventStreams.open).toBe(1);

    // What ingress/main.ts does on SIGTERM; the server's close would otherwise wait 60 s.
    await Promise.all([own.services.eventStreams.close(), server.close(60_000)]);
    await client.until((c) => c.ended, 5_000, 'the end of the stream');
    expect(own.services.eventStreams.open).toBe(0);
    await own.close();
  });
});

describe('The event stream after the log was trimmed (LOG_RETENTION)', () => {
  it('When Last-Event-ID or from lies before trimmed entries, then 400 naming it with the reason (never a silent gap), and a position after them still resumes', async () => {
    const own = await createTestApp();
    try {
      const admin = 'events-trimmed-admin@example.com';
      await own.createUser({ email: admin, password: PASSWORD, roles: ['Admin'] });
      for (let i = 0; i < 6; i++)
        await own.createUser({ email: `trimmed-${randomUUID()}@example.com`, roles: ['Member'] });
      const { keys } = own.services;
      // Every projection has passed everything (none reads here): a 0 ms window trims the whole log.
      const trims = await trimLog(own.redis, keys, [], 0, Date.now() + 1_000);
      expect(trims.reduce((sum, trim) => sum + trim.removed, 0)).toBeGreaterThan(0);
      const old = encodePosition(beginningPosition());

      const byHeader = await request(own.app)
        .get('/api/events')
        .set('Authorization', basic(admin))
        .set('Last-Event-ID', old);
      expect(byHeader.status).toBe(400);
      expect((byHeader.body as { errors: Record<string, string[]> }).errors).toEqual({
        'Last-Event-ID': [MESSAGES.trimmed],
      });
      const byQuery = await request(own.app)
        .get(`/api/events?from=${encodeURIComponent(old)}`)
        .set('Authorization', basic(admin));
      expect(byQuery.status).toBe(400);
      expect(Object.keys((byQuery.body as { errors: object }).errors)).toEqual(['from']);

      // The log's end now is after everything trimmed: resuming there is allowed.
      const ends = await logEnds(own.redis, keys, LOG_PARTITIONS);
      expect(await partitionsTrimmedPast(own.redis, keys, ends)).toEqual([]);
    } finally {
      await own.close();
    }
  });
});

describe('The event stream: admission', () => {
  it('When SSE_MAX_CONNECTIONS streams are open, then one more is a 503 with Retry-After, and a slot frees when a client leaves', async () => {
    // Both streams are an Admin's: the role class's share is the whole, so the bound seen is the instance's.
    const subject = await createTestApp({
      SSE_MAX_CONNECTIONS: '2',
      SSE_MAX_CONNECTIONS_PER_ROLE_CLASS: '2',
    });
    const running = await listen(subject.app, 0, '127.0.0.1');
    const admin = 'events-limit-admin@example.com';
    await subject.createUser({ email: admin, password: PASSWORD, roles: ['Admin'] });
    const url = `http://127.0.0.1:${running.port}/api/events`;
    const open = [
      await SseClient.connect(url, { authorization: basic(admin) }),
      await SseClient.connect(url, { authorization: basic(admin) }),
    ];
    try {
      expect(open.map((client) => client.status)).toEqual([200, 200]);
      const refused = await request(subject.app).get('/api/events').set('Authorization', basic(admin));
      expect(refused.status).toBe(503);
      expect(refused.headers['retry-after']).toBe('5');
      expect((refused.body as { detail: string }).detail).toContain('SSE_MAX_CONNECTIONS');

      open[0]?.close();
      await eventually(() => subject.services.eventStreams.open === 1, 5_000, 10);
      const third = await SseClient.connect(url, { authorization: basic(admin) });
      open.push(third);
      expect(third.status).toBe(200);
    } finally {
      for (const client of open) client.close();
      await subject.services.eventStreams.close();
      await running.close(5_000);
      await subject.close();
    }
  });

  it('When an account holds SSE_MAX_CONNECTIONS_PER_ACCOUNT streams, then its next one is a 503, and another account still gets one', async () => {
    const subject = await createTestApp({ SSE_MAX_CONNECTIONS: '10', SSE_MAX_CONNECTIONS_PER_ACCOUNT: '1' });
    const running = await listen(subject.app, 0, '127.0.0.1');
    const first = 'events-per-account-1@example.com';
    const second = 'events-per-account-2@example.com';
    await subject.createUser({ email: first, password: PASSWORD, roles: ['Admin'] });
    await subject.createUser({ email: second, password: PASSWORD, roles: ['Admin'] });
    const url = `http://127.0.0.1:${running.port}/api/events`;
    const open = [await SseClient.connect(url, { authorization: basic(first) })];
    try {
      const refused = await request(subject.app).get('/api/events').set('Authorization', basic(first));
      expect([refused.status, refused.headers['retry-after']]).toEqual([503, '5']);
      expect((refused.body as { detail: string }).detail).toContain('SSE_MAX_CONNECTIONS_PER_ACCOUNT');
      open.push(await SseClient.connect(url, { authorization: basic(second) }));
      expect(open.map((client) => client.status)).toEqual([200, 200]);
    } finally {
      for (const client of open) client.close();
      await subject.services.eventStreams.close();
      await running.close(5_000);
      await subject.close();
    }
  });

  it('When anonymous callers, Members and malformed queries are refused, then nothing is read for them: no stream, no subscriber connection', async () => {
    const subject = await createTestApp({ SSE_MAX_CONNECTIONS: '1' });
    const member = 'events-idle-member@example.com';
    const admin = 'events-idle-admin@example.com';
    await subject.createUser({ email: member, password: PASSWORD, roles: ['Member'] });
    await subject.createUser({ email: admin, password: PASSWORD, roles: ['Admin'] });
    try {
      for (let i = 0; i < 5; i++) {
        expect((await request(subject.app).get('/api/events')).status).toBe(401);
        expect(
          (await request(subject.app).get('/api/events').set('Authorization', basic(member))).status,
        ).toBe(403);
        expect(
          (await request(subject.app).get('/api/events?from=x').set('Authorization', basic(admin))).status,
        ).toBe(400);
      }
      expect(subject.services.eventStreams.open).toBe(0);
      expect(subject.services.eventStreams.tail.subscribed).toBe(false);
    } finally {
      await subject.close();
    }
  });
});

describe('The event stream: the ingress process', () => {
  it('When the ingress gets SIGTERM with a stream open, then the stream ends and the process exits 0', async () => {
    const ingress = startServiceProcess('ingress/main.ts', {
      PORT: '0',
      HOST: '127.0.0.1',
      ...testRedisEnv(),
      REDIS_KEY_PREFIX: uniquePrefix(),
      SHUTDOWN_TIMEOUT_MS: '60000',
      ADMIN_EMAIL: 'events-process-admin@example.com',
      ADMIN_PASSWORD: PASSWORD,
    });
    await ingress.waitForOutput('ingress listening');
    const port = (
      JSON.parse(
        ingress
          .stdout()
          .split('\n')
          .find((line) => line.includes('ingress listening')) ?? '{}',
      ) as { port: number }
    ).port;
    const client = await SseClient.connect(`http://127.0.0.1:${port}/api/events`, {
      authorization: basic('events-process-admin@example.com'),
    });
    try {
      expect(client.status).toBe(200);
      await client.until((c) => c.messages.length > 0, 10_000, 'the opening id');
      ingress.child.kill('SIGTERM');
      await client.until((c) => c.ended, 20_000, 'the end of the stream');
      expect(await ingress.exited).toBe(0);
    } finally {
      client.close();
    }
  });
});

describe('The event stream: a client that does not read', () => {
  const SLOW_MS = 1_000;
  const EVENTS = 120;
  /** ~12 MB in all: more than loopback's socket buffers hold, so the server must wait for the client. */
  const PADDING = 'x'.repeat(100_000);
  let subject: TestApp;
  let running: RunningServer;
  let url: string;
  const admin = 'events-slow-admin@example.com';

  /**
   * Large events written to the log as the append script writes them (XADD with an auto id),
   * without a command: the size is the point, and a roster this large would be refused.
   */
  async function appendLargeEvents(count: number): Promise<void> {
    for (let i = 0; i < count; i++) {
      const aggregateId = randomUUID();
      const envelope = {
        eventId: randomUUID(),
        eventType: 'FantasyTeamArchivedEvent',
        aggregateType: 'fantasy-team',
        aggregateId,
        version: 1,
        occurredAt: new Date().toISOString(),
        data: { reason: PADDING, archivedAt: new Date().toISOString() },
        metadata: { actorUserId: randomUUID(), requestId: null, correlationId: 'event-stream-test' },
      };
      await subject.redis.xadd(
        subject.services.keys.logPartition(partitionOf(aggregateId)),
        '*',
        'event',
        JSON.stringify(envelope),
      );
    }
  }

  beforeAll(async () => {
    subject = await createTestApp({ SSE_SLOW_CLIENT_TIMEOUT_MS: String(SLOW_MS) });
    running = await listen(subject.app, 0, '127.0.0.1');
    url = `http://127.0.0.1:${running.port}/api/events`;
    await subject.createUser({ email: admin, password: PASSWORD, roles: ['Admin'] });
    await appendLargeEvents(EVENTS);
  });
  afterAll(async () => {
    await subject?.services.eventStreams.close();
    await running?.close(5_000);
    await subject?.close();
  });

  it('When a client stops reading for longer than SSE_SLOW_CLIENT_TIMEOUT_MS, then its stream is closed, and it resumes from its last id without a loss', async () => {
    const stalled = await SseClient.connect(`${url}?from=beginning&types=FantasyTeamArchivedEvent`, {
      authorization: basic(admin),
    });
    stalled.pause();
    await eventually(() => subject.services.eventStreams.open === 0, 20_000, 20);
    expect(subject.logs.text).toContain('event stream client reads too slowly; closed');
    stalled.resume();
    await stalled.until((c) => c.ended, 10_000, 'the end');
    const received = stalled.events.length;
    expect(received).toBeLessThan(EVENTS);

    const resumed = await SseClient.connect(`${url}?types=FantasyTeamArchivedEvent`, {
      authorization: basic(admin),
      ...(stalled.lastEventId ? { 'Last-Event-ID': stalled.lastEventId } : {}),
    });
    try {
      await resumed.until((c) => c.events.length >= EVENTS - received, 20_000, 'the rest');
      const all = [...stalled.payloads(), ...resumed.payloads()].map((payload) => payload.data.aggregateId);
      expect(new Set(all).size).toBe(EVENTS);
      expect(all).toHaveLength(EVENTS);
    } finally {
      resumed.close();
    }
  });

  it('When a client pauses for less than SSE_SLOW_CLIENT_TIMEOUT_MS, then the stream waits for it and it receives everything', async () => {
    const paused = await SseClient.connect(`${url}?from=beginning&types=FantasyTeamArchivedEvent`, {
      authorization: basic(admin),
    });
    try {
      paused.pause();
      await new Promise((resolve) => setTimeout(resolve, SLOW_MS / 4));
      paused.resume();
      await paused.until((c) => c.events.length >= EVENTS, 20_000, 'every event');
      expect(new Set(paused.payloads().map((payload) => payload.data.aggregateId)).size).toBe(EVENTS);
      expect(subject.services.eventStreams.open).toBe(1);
    } finally {
      paused.close();
    }
  });
});
