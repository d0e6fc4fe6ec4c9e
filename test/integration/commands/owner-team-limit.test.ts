/**
 * At most MAX_TEAMS_PER_OWNER teams per owner, archived ones included;
 * an Admin is not bounded. The bound holds for a parallel burst, across two ingress replicas on one
 * Redis, and on the cluster run (the owner's index is in another slot than the teams).
 */
import { randomUUID } from 'node:crypto';

import request from 'supertest';

import { createTestApp, type TestApp, uniquePrefix } from '../../helpers/app-fixture';
import { passwordGrantToken } from '../../helpers/tokens';

const PASSWORD = 'team-limit-owner-password';
const MAX = 3;
const LIMIT_MESSAGE = `Cannot create team: an owner may hold at most ${MAX} teams, archived ones included`;

describe('POST /api/command: teams per owner', () => {
  let subject: TestApp;
  /** A second ingress on the same Redis and key prefix: another replica. */
  let replica: TestApp;
  let adminToken: string;
  let otherToken: string;

  const tokenFor = (email: string) => passwordGrantToken(subject.app, email, PASSWORD);
  /** A new Member and its token: each test bounds an owner of its own. */
  const newOwner = async () => {
    const email = `owner-${randomUUID().slice(0, 8)}@example.com`;
    const userId = await subject.createUser({ email, password: PASSWORD });
    return { userId, token: await tokenFor(email) };
  };

  beforeAll(async () => {
    const env = { MAX_TEAMS_PER_OWNER: String(MAX), REDIS_KEY_PREFIX: uniquePrefix() };
    subject = await createTestApp(env);
    replica = await createTestApp(env);
    await subject.createUser({ email: 'limit-admin@example.com', password: PASSWORD, roles: ['Admin'] });
    await subject.createUser({ email: 'limit-other@example.com', password: PASSWORD });
    adminToken = await tokenFor('limit-admin@example.com');
    otherToken = await tokenFor('limit-other@example.com');
  });
  afterAll(async () => {
    await replica.close();
    await subject.close();
  });

  const send = (token: string, body: object, app = subject.app) =>
    request(app).post('/api/command').set('Authorization', `Bearer ${token}`).send(body);
  const create = (token: string, aggregateRootId = randomUUID(), app = subject.app) =>
    send(token, { commandType: 'CreateFantasyTeam', command: { aggregateRootId, name: 'Limited' } }, app);
  const teamExists = async (id: string) =>
    (await subject.services.store.streamLength('fantasy-team', id)) > 0;
  const expectLimit = (res: request.Response) => {
    expect(res.status).toBe(400);
    expect(res.body).toEqual({
      requestId: null,
      success: false,
      eventCount: 0,
      errorMessage: LIMIT_MESSAGE,
      errorCode: 'COMMAND_VALIDATION_ERROR',
      commandType: 'CreateFantasyTeam',
    });
  };

  it('When an owner holds the most teams, then one more is refused with 400 COMMAND_VALIDATION_ERROR and not created; archiving frees nothing; other owners are not affected', async () => {
    const owner = await newOwner();
    const teams: string[] = [];
    for (let i = 0; i < MAX; i++) {
      const id = randomUUID();
      expect((await create(owner.token, id)).status).toBe(200);
      teams.push(id);
    }
    const extra = randomUUID();
    expectLimit(await create(owner.token, extra));
    expect(await teamExists(extra)).toBe(false);

    const archived = await send(owner.token, {
      commandType: 'ArchiveFantasyTeam',
      command: { aggregateRootId: teams[0] },
    });
    expect(archived.status).toBe(200);
    expectLimit(await create(owner.token));

    // Commands on the teams it holds still run.
    const linked = await send(owner.token, {
      commandType: 'LinkFantasyTeam',
      command: { aggregateRootId: teams[1], fantasyTeamExternalId: 5, fantasyUserId: 6 },
    });
    expect(linked.status).toBe(200);
    expect((await create(otherToken)).status).toBe(200);
  });

  it('When an Admin creates more teams than the bound, then every one is created', async () => {
    for (let i = 0; i < MAX + 2; i++) expect((await create(adminToken)).status).toBe(200);
  });

  it('When a create writes nothing (the team id is taken), then it holds no slot', async () => {
    const owner = await newOwner();
    const taken = randomUUID();
    expect((await create(otherToken, taken)).status).toBe(200);
    for (let i = 0; i < MAX + 2; i++) {
      const res = await create(owner.token, taken);
      expect(res.body).toMatchObject({ errorMessage: 'Team already exists' });
    }
    for (let i = 0; i < MAX; i++) expect((await create(owner.token)).status).toBe(200);
    expectLimit(await create(owner.token));
  });

  it('When one owner sends a parallel burst of creates to two replicas, then exactly the bound is created and every other create is refused', async () => {
    const owner = await newOwner();
    const ids = Array.from({ length: 16 }, () => randomUUID());
    const answers = await Promise.all(
      ids.map((id, i) => create(owner.token, id, i % 2 === 0 ? subject.app : replica.app)),
    );
    const created = ids.filter((_, i) => answers[i]?.status === 200);
    expect(created).toHaveLength(MAX);
    for (const res of answers) if (res.status !== 200) expectLimit(res);
    const existing = await Promise.all(ids.map(teamExists));
    expect(existing.filter(Boolean)).toHaveLength(MAX);
  });

  it('When a reservation was left behind by a process that died, then a create at the bound settles it: freed if its team was never written, kept if it was', async () => {
    const owner = await newOwner();
    const key = subject.services.keys.ownerTeams(owner.userId);
    for (let i = 0; i < MAX - 1; i++) expect((await create(owner.token)).status).toBe(200);
    // A reservation past its deadline whose create never appended.
    await subject.redis.zadd(key, Date.now() - 1, randomUUID());
    expect((await create(owner.token)).status).toBe(200);
    expectLimit(await create(owner.token));

    // A team written by a create that died before confirming its slot: still counted.
    const other = await newOwner();
    const otherKey = subject.services.keys.ownerTeams(other.userId);
    const written = randomUUID();
    expect((await create(other.token, written)).status).toBe(200);
    await subject.redis.zadd(otherKey, Date.now() - 1, written);
    for (let i = 0; i < MAX - 1; i++) expect((await create(other.token)).status).toBe(200);
    expectLimit(await create(other.token));
  });
});
