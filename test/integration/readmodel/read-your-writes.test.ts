import { randomUUID } from 'node:crypto';

import request from 'supertest';

import { READ_WAIT_MESSAGES } from '../../../ingress/readmodel/read-your-writes';
import type { EventEnvelope } from '../../../shared/event-store/envelope';
import { fantasyTeamProjection } from '../../../shared/fantasy-team/fantasy-team.projection';
import { PROBLEMS } from '../../../shared/http/problem';
import { duplicateConnection } from '../../../shared/redis/connections';
import { LOG_PARTITIONS } from '../../../shared/redis/partitions';
import { ALL_PROJECTIONS } from '../../../workers/projector/all-projections';
import { Projector } from '../../../workers/projector/projector';
import { createTestApp, type TestApp } from '../../helpers/app-fixture';
import { basicAuth } from '../../helpers/http-client';
import { parseExposition, sampleSum } from '../../helpers/metrics';
import { eventually } from '../../helpers/processes';
import { playerPlatformId, seedPlayer } from '../../helpers/seed-players';
import { passwordGrantToken } from '../../helpers/tokens';
import { adminCommander } from '../../helpers/webhooks';

const PASSWORD = 'read-your-writes-password';

/** A projector of the test's own, woken by append announcements as the worker's is. */
async function startProjector(subject: TestApp): Promise<Projector> {
  const projector = new Projector(
    subject.redis,
    subject.services.keys,
    ALL_PROJECTIONS,
    subject.logger,
    { leaseMs: 1_000 },
    duplicateConnection(subject.redis, subject.logger, 'test-projector-changes'),
  );
  projector.start();
  await eventually(
    () => Promise.resolve(projector.ownedPartitions === LOG_PARTITIONS * ALL_PROJECTIONS.length),
    10_000,
    20,
  );
  return projector;
}

/** A Member of its own with a Bearer token, and its command and query senders. */
async function member(subject: TestApp, roles: string[] = ['Member']) {
  const email = `ryw-${randomUUID().slice(0, 8)}@example.com`;
  const userId = await subject.createUser({ email, password: PASSWORD, roles: roles as never });
  const token = await passwordGrantToken(subject.app, email, PASSWORD);
  const command = (commandType: string, fields: object, extra: object = {}) =>
    request(subject.app)
      .post('/api/command')
      .set('Authorization', `Bearer ${token}`)
      .send({ commandType, command: fields, ...extra });
  const query = (fields: object, extra: object = {}) =>
    request(subject.app)
      .post('/api/readmodel')
      .set('Authorization', `Bearer ${token}`)
      .send({ query: fields, ...extra });
  return { email, userId, token, command, query };
}

type Member = Awaited<ReturnType<typeof member>>;

async function createTeam(owner: Member): Promise<{ id: string; version: number }> {
  const id = randomUUID();
  const res = await owner.command('CreateFantasyTeam', { aggregateRootId: id, name: 'Readers' });
  expect(res.status).toBe(200);
  return { id, version: (res.body as { version: number }).version };
}

function expectProjectionBehind(res: request.Response, detail: string): void {
  expect(res.status).toBe(503);
  expect(res.headers['retry-after']).toBe('1');
  expect(res.body).toEqual({
    ...PROBLEMS[503],
    status: 503,
    code: 'PROJECTION_BEHIND',
    detail,
    traceId: expect.any(String) as string,
  });
}

describe('Read your own writes: command answers carry the version, minVersion reads see it', () => {
  let subject: TestApp;
  let projector: Projector;
  let owner: Member;

  beforeAll(async () => {
    // A wait far above what the projector needs even on a loaded machine: these tests prove that a
    // minVersion read sees the write, not how fast (bench/commands.bench.ts measures that).
    subject = await createTestApp({ READ_WAIT_MS: '20000' });
    projector = await startProjector(subject);
    owner = await member(subject);
  });
  afterAll(async () => {
    await projector.stop();
    await subject.close();
  });

  // A budget for 20 rounds on a loaded machine (no assertion on time): each round is 3 requests.
  it('When a team command is answered, then a read with its version sees the write, every time', async () => {
    for (let round = 0; round < 20; round++) {
      const team = await createTeam(owner);
      expect(team.version).toBe(1);
      const linked = await owner.command('LinkFantasyTeam', {
        aggregateRootId: team.id,
        fantasyTeamExternalId: 1000 + round,
        fantasyUserId: 2000 + round,
      });
      expect(linked.status).toBe(200);
      expect(linked.body).toMatchObject({ success: true, eventCount: 1, version: 2 });

      const read = await owner.query({ queryType: 'GetFantasyTeam', id: team.id, minVersion: 2 });
      expect(read.status).toBe(200);
      expect(read.body).toMatchObject({
        results: [{ id: team.id, fantasyTeamExternalId: 1000 + round, version: 2 }],
        totalCount: 1,
      });
    }
  }, 120_000);

  it('When a team is created, then GetTeamRatingInputByTeamId with its version finds it at once, every time (never the 404 listing)', async () => {
    for (let round = 0; round < 10; round++) {
      const team = await createTeam(owner);
      const read = await owner.query(
        { queryType: 'GetTeamRatingInputByTeamId', id: team.id, minVersion: team.version },
        { dataType: 'TeamRatingInput' },
      );
      expect(read.status).toBe(200);
      expect(read.body).toMatchObject({ results: [{ team: {} }], totalCount: 1 });
    }
  });

  it('When a requestId is sent again after the team moved on, then the answer names the version of its own write', async () => {
    const team = await createTeam(owner);
    const requestId = randomUUID();
    const link = () =>
      owner.command(
        'LinkFantasyTeam',
        { aggregateRootId: team.id, fantasyTeamExternalId: 77, fantasyUserId: 88 },
        { requestId },
      );
    const first = await link();
    expect(first.body).toMatchObject({ success: true, version: 2, requestId });
    const unlinked = await owner.command('UnlinkFantasyTeam', { aggregateRootId: team.id });
    expect(unlinked.body).toMatchObject({ success: true, version: 3 });

    // Replayed from the remembered answer.
    expect((await link()).body).toEqual(first.body);
    // Replayed from the team's own record of the request (the remembered answer lost).
    await subject.redis.del(subject.services.keys.commandResponse(owner.userId, requestId, team.id));
    expect((await link()).body).toEqual(first.body);
  });

  it('When an account command is answered, then its version is the account version GetUser answers with minVersion', async () => {
    const admin = await adminCommander(subject.app, (user) => subject.createUser(user));
    const target = await member(subject);
    const requestId = randomUUID();
    const setRoles = () =>
      admin.send(
        'SetUserRoles',
        { aggregateRootId: target.userId, roles: ['Member', 'UserManager'] },
        { requestId },
      );
    const answered = await setRoles();
    expect(answered.status).toBe(200);
    const { version } = answered.body as { version: number };
    expect(version).toBe(2);
    expect((await setRoles()).body).toEqual(answered.body);

    const read = await admin.query({ queryType: 'GetUser', id: target.userId, minVersion: version });
    expect(read.status).toBe(200);
    expect(read.body).toMatchObject({ results: [{ id: target.userId, version }] });
  });

  it('When an account is deleted, then the answer names the deletion version and GetUser at it answers the 404 listing', async () => {
    const admin = await adminCommander(subject.app, (user) => subject.createUser(user));
    const target = await member(subject);
    const deleted = await admin.send('DeleteUser', { aggregateRootId: target.userId });
    expect(deleted.status).toBe(200);
    expect(deleted.body).toMatchObject({ success: true, eventCount: 1, version: 2 });

    const read = await admin.query({ queryType: 'GetUser', id: target.userId, minVersion: 2 });
    expect(read.status).toBe(404);
    expect(read.body).toEqual({ queryType: 'GetUser', results: [], totalCount: 0 });
  });

  it('When a webhook command is answered, then it carries the subscription version, on a repeat too', async () => {
    const admin = await adminCommander(subject.app, (user) => subject.createUser(user));
    const aggregateRootId = randomUUID();
    const requestId = randomUUID();
    const create = () =>
      admin.send(
        'CreateWebhookSubscription',
        { aggregateRootId, url: 'https://hooks.example.com/ryw', eventTypes: ['FantasyTeamLinkedEvent'] },
        { requestId },
      );
    const created = await create();
    expect(created.status).toBe(200);
    expect(created.body).toMatchObject({ success: true, version: 1 });
    const repeated = await create();
    expect(repeated.body).toMatchObject({ success: true, version: 1 });
    expect(repeated.body).not.toHaveProperty('signingSecret');

    const rotated = await admin.send('RotateWebhookSecret', { aggregateRootId });
    expect(rotated.body).toMatchObject({ success: true, version: 2 });
  });

  it('When a player is imported, then GetMappedPlayers by its platformId with minVersion finds it at once', async () => {
    const admin = await adminCommander(subject.app, (user) => subject.createUser(user));
    const email = `ryw-machine-${randomUUID().slice(0, 8)}@example.com`;
    await subject.createUser({
      email,
      password: PASSWORD,
      roles: ['ServiceAccount'],
      userType: 'ServiceAccount',
    });
    const n = 500;
    const imported = await request(subject.app)
      .post('/api/import')
      .set('Authorization', `Bearer ${admin.token}`)
      .send({
        requestId: randomUUID(),
        importerType: 'PlayerSeeding',
        priority: 'High',
        importData: { season: '2026', players: [seedPlayer(n)] },
      });
    expect(imported.status).toBe(200);

    const read = await request(subject.app)
      .post('/api/readmodel')
      .set('Authorization', basicAuth(email, PASSWORD))
      .send({ query: { queryType: 'GetMappedPlayers', platformId: playerPlatformId(n), minVersion: 1 } });
    expect(read.status).toBe(200);
    expect(read.body).toMatchObject({ results: [{ platformId: playerPlatformId(n) }], totalCount: 1 });
  });

  it('When a command is refused, then its answer carries no version (nothing was written)', async () => {
    const res = await owner.command('LinkFantasyTeam', {
      aggregateRootId: randomUUID(),
      fantasyTeamExternalId: 1,
      fantasyUserId: 2,
    });
    expect(res.status).toBe(400);
    expect(res.body).not.toHaveProperty('version');
  });

  it.each([
    ['zero', 0],
    ['negative', -3],
    ['a fraction', 1.5],
    ['a string', '2'],
    ['beyond a safe integer', 2 ** 53],
  ])(
    'When minVersion is %s, then the query is refused with the validation problem',
    async (_, minVersion) => {
      const res = await owner.query({ queryType: 'GetFantasyTeam', id: randomUUID(), minVersion });
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ ...PROBLEMS[400], status: 400 });
      expect(Object.keys((res.body as { errors: object }).errors)).toEqual(['MinVersion']);
    },
  );

  it('When GetMappedPlayers names minVersion without a platformId, then it is refused: no single player is named', async () => {
    const email = `ryw-service-${randomUUID().slice(0, 8)}@example.com`;
    await subject.createUser({
      email,
      password: PASSWORD,
      roles: ['ServiceAccount'],
      userType: 'ServiceAccount',
    });
    const res = await request(subject.app)
      .post('/api/readmodel')
      .set('Authorization', basicAuth(email, PASSWORD))
      .send({ query: { queryType: 'GetMappedPlayers', minVersion: 1 } });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({
      ...PROBLEMS[400],
      status: 400,
      errors: { Query: ['minVersion missing required peer platformId'] },
    });
  });
});

describe('Read your own writes: a projection that does not catch up', () => {
  let subject: TestApp;
  let owner: Member;

  beforeAll(async () => {
    // No projector runs: nothing a command writes ever reaches the read model.
    subject = await createTestApp({
      READ_WAIT_MS: '300',
      READ_MAX_WAITERS: '3',
      READ_MAX_WAITERS_PER_ACCOUNT: '2',
    });
    owner = await member(subject);
  });
  afterAll(() => subject.close());

  it('When the projection does not reach minVersion within READ_WAIT_MS, then the read answers 503 PROJECTION_BEHIND with Retry-After', async () => {
    const team = await createTeam(owner);
    const res = await owner.query({ queryType: 'GetFantasyTeam', id: team.id, minVersion: team.version });
    expectProjectionBehind(res, READ_WAIT_MESSAGES.behind('fantasy team', team.id, 1, 300));
    // Nothing stays waiting.
    expect(subject.services.projectionWaits.size).toBe(0);
    // What an operator sees: a read that waited READ_WAIT_MS for its version and gave up.
    const samples = parseExposition((await subject.metrics.exposition()).text);
    const behind = { projection: 'fantasy-team', outcome: 'behind' };
    expect(sampleSum(samples, 'fts_read_wait_seconds_count', behind)).toBe(1);
    expect(sampleSum(samples, 'fts_read_wait_seconds_bucket', { ...behind, le: '0.25' })).toBe(0);
  });

  it("When a stranger reads another's team with minVersion, then it answers as for a missing team: nobody learns the team exists", async () => {
    const team = await createTeam(owner);
    // Written straight to the read model by the projection's own evolve (no projector runs here).
    const [created] = await subject.services.store.readStream('fantasy-team', team.id);
    await subject.redis.set(
      fantasyTeamProjection.documentKey(subject.services.keys, team.id),
      JSON.stringify(fantasyTeamProjection.evolve(null, created as EventEnvelope)),
    );
    const visible = await owner.query({ queryType: 'GetFantasyTeam', id: team.id, minVersion: 1 });
    expect(visible.status).toBe(200);

    const stranger = await member(subject);
    const missingId = randomUUID();
    const ofAnother = await stranger.query({ queryType: 'GetFantasyTeam', id: team.id, minVersion: 1 });
    const missing = await stranger.query({ queryType: 'GetFantasyTeam', id: missingId, minVersion: 1 });
    expectProjectionBehind(ofAnother, READ_WAIT_MESSAGES.behind('fantasy team', team.id, 1, 300));
    expectProjectionBehind(missing, READ_WAIT_MESSAGES.behind('fantasy team', missingId, 1, 300));
  });
});

describe('Read your own writes: the waiting reads are bounded', () => {
  let subject: TestApp;

  beforeAll(async () => {
    subject = await createTestApp({
      READ_WAIT_MS: '8000',
      READ_MAX_WAITERS: '3',
      // Every reader here is a Member: the class's share is the whole, so the bounds seen are these two.
      READ_MAX_WAITERS_PER_ROLE_CLASS: '3',
      READ_MAX_WAITERS_PER_ACCOUNT: '2',
    });
  });
  afterAll(() => subject.close());

  it('When one account floods reads of versions that never come, then past its share it is refused at once, and past the total everyone is', async () => {
    const flooder = await member(subject);
    const other = await member(subject);
    const third = await member(subject);
    const farFuture = (reader: Member) =>
      reader.query({ queryType: 'GetFantasyTeam', id: randomUUID(), minVersion: 1_000_000 });

    // The flooder's first two wait (they end at READ_WAIT_MS); its next ones are refused while they do.
    const waiting = [farFuture(flooder), farFuture(flooder)].map((req) => req.then((res) => res));
    await eventually(() => Promise.resolve(subject.services.projectionWaits.size === 2), 6_000, 5);
    const refused = await Promise.all([farFuture(flooder), farFuture(flooder), farFuture(flooder)]);
    for (const res of refused) {
      expectProjectionBehind(res, READ_WAIT_MESSAGES.tooManyWaiting(1_000_000, 'fantasy team'));
    }
    expect(subject.services.projectionWaits.size).toBe(2);

    // Another account still has its share, up to the instance's total.
    const othersRead = farFuture(other).then((res) => res);
    await eventually(() => Promise.resolve(subject.services.projectionWaits.size === 3), 6_000, 5);
    expectProjectionBehind(
      await farFuture(third),
      READ_WAIT_MESSAGES.tooManyWaiting(1_000_000, 'fantasy team'),
    );

    for (const res of await Promise.all([...waiting, othersRead])) {
      expect(res.status).toBe(503);
      expect((res.body as { code: string }).code).toBe('PROJECTION_BEHIND');
    }
    expect(subject.services.projectionWaits.size).toBe(0);
    const samples = parseExposition((await subject.metrics.exposition()).text);
    expect(
      sampleSum(samples, 'fts_read_wait_seconds_count', { projection: 'fantasy-team', outcome: 'refused' }),
    ).toBe(4);
  });
});

describe('Read your own writes: the waiting reads are shared out by role class', () => {
  let subject: TestApp;

  beforeAll(async () => {
    subject = await createTestApp({
      READ_WAIT_MS: '8000',
      READ_MAX_WAITERS: '10',
      READ_MAX_WAITERS_PER_ROLE_CLASS: '2',
      READ_MAX_WAITERS_PER_ACCOUNT: '5',
    });
  });
  afterAll(() => subject.close());

  it("When Members hold their role class's share of waiting reads, then a further Member is refused at once, and a ServiceAccount and an Admin still wait", async () => {
    const members = [await member(subject), await member(subject), await member(subject)];
    const machine = await member(subject, ['ServiceAccount']);
    const admin = await member(subject, ['Admin']);
    const farTeam = (reader: Member) =>
      reader.query({ queryType: 'GetFantasyTeam', id: randomUUID(), minVersion: 1_000_000 });
    // A ServiceAccount reads GetMappedPlayers by Basic only (spec).
    const farPlayer = (reader: Member) =>
      request(subject.app)
        .post('/api/readmodel')
        .set('Authorization', basicAuth(reader.email, PASSWORD))
        .send({ query: { queryType: 'GetMappedPlayers', platformId: randomUUID(), minVersion: 1_000_000 } });

    // Two Members (one read each, far below the account's bound) fill the Member class's share.
    const waiting = members.slice(0, 2).map((reader) => farTeam(reader).then((res) => res));
    await eventually(() => Promise.resolve(subject.services.projectionWaits.size === 2), 6_000, 5);
    expectProjectionBehind(
      await farTeam(members[2] as Member),
      READ_WAIT_MESSAGES.tooManyWaiting(1_000_000, 'fantasy team'),
    );
    expect(subject.services.projectionWaits.size).toBe(2);

    // The other classes still have their own share.
    waiting.push(
      farPlayer(machine).then((res) => res),
      farTeam(admin).then((res) => res),
    );
    await eventually(() => Promise.resolve(subject.services.projectionWaits.size === 4), 6_000, 5);

    for (const res of await Promise.all(waiting)) {
      expectProjectionBehind(res, expect.stringContaining('had not reached version 1000000') as never);
    }
    expect(subject.services.projectionWaits.size).toBe(0);
  });
});
