import { randomUUID } from 'node:crypto';

import request from 'supertest';

import { createTestApp, type TestApp } from '../../helpers/app-fixture';
import { passwordGrantToken } from '../../helpers/tokens';

/**
 * The edges of the document a contract fuzzer probes: a lone surrogate is a 400 (not a 500),
 * lengths are counted in characters (not UTF-16 units), and every refusal is one the document states.
 */
const PASSWORD = 'contract-edges-password';
const basic = (email: string, password = PASSWORD) =>
  `Basic ${Buffer.from(`${email}:${password}`).toString('base64')}`;
const ILL_FORMED = 'must be well-formed Unicode text (it holds a lone UTF-16 surrogate)';

describe('Contract edges found by the fuzzer', () => {
  let subject: TestApp;
  let memberToken: string;

  beforeAll(async () => {
    subject = await createTestApp({ JWT_SECRET: 'contract-edges-secret-at-least-32-characters' });
    await subject.createUser({ email: 'edges-member@example.com', password: PASSWORD, roles: ['Member'] });
    await subject.createUser({ email: 'edges-admin@example.com', password: PASSWORD, roles: ['Admin'] });
    await subject.createUser({
      email: 'edges-svc@example.com',
      password: PASSWORD,
      userType: 'ServiceAccount',
      roles: ['ServiceAccount'],
    });
    memberToken = await passwordGrantToken(subject.app, 'edges-member@example.com', PASSWORD);
  });
  afterAll(() => subject.close());

  const token = (body: object) => request(subject.app).post('/api/auth/token').send(body);
  const command = (body: object) =>
    request(subject.app).post('/api/command').set('Authorization', `Bearer ${memberToken}`).send(body);
  const createTeam = (name: unknown) =>
    command({ commandType: 'CreateFantasyTeam', command: { aggregateRootId: randomUUID(), name } });
  /** A UserSeeding import of `users` as the Admin. */
  const seedUsers = (users: object[]) =>
    request(subject.app)
      .post('/api/import')
      .set('Authorization', basic('edges-admin@example.com'))
      .send({ requestId: randomUUID(), importerType: 'UserSeeding', importData: { users } });

  describe('Lone UTF-16 surrogates', () => {
    it.each(['\ud800', 'a\udc00@x.test', 'edges-member@example.com\udbff'])(
      'When a password grant names the username %j, then 400 invalid_request saying so, not a 500',
      async (username) => {
        const res = await token({ grant_type: 'password', username, password: 'x' });
        expect(res.status).toBe(400);
        expect(res.body).toEqual({ error: 'invalid_request', error_description: `username ${ILL_FORMED}` });
      },
    );

    it('When a password grant sends a lone surrogate as the password, then 400 invalid_request (it would hash as U+FFFD)', async () => {
      const res = await token({
        grant_type: 'password',
        username: 'edges-member@example.com',
        password: 'p\ud800',
      });
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ error: 'invalid_request', error_description: `password ${ILL_FORMED}` });
    });

    it.each(['\ud800', 'a\udc00@x.test'])(
      'When a client_credentials grant names the client_id %j, then 401 invalid_client, not a 500',
      async (clientId) => {
        const res = await token({
          grant_type: 'client_credentials',
          client_id: clientId,
          client_secret: 'x',
        });
        expect(res.status).toBe(401);
        expect(res.body).toEqual({
          error: 'invalid_client',
          error_description: 'Client authentication failed.',
        });
      },
    );

    it('When a UserSeeding row has an e-mail with a lone surrogate, then 400 naming the field, and no job', async () => {
      const res = await seedUsers([{ email: 'a\udc00@x.test', userType: 'Human', roles: ['Member'] }]);
      expect(res.status).toBe(400);
      expect(res.body.errors).toEqual({ 'Users[0].Email': [`Users[0].Email ${ILL_FORMED}`] });
    });

    it('When a team name holds a lone surrogate, then 400 COMMAND_VALIDATION_ERROR naming it', async () => {
      const res = await createTeam('Team \ud800');
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({
        errorCode: 'COMMAND_VALIDATION_ERROR',
        errorMessage: `Name ${ILL_FORMED}`,
      });
    });
  });

  describe('Lengths in characters, as the document counts them', () => {
    it('When a team name is 51 emoji (102 UTF-16 units) under the limit of 100, then the team is created', async () => {
      const res = await createTeam('😀'.repeat(51));
      expect(res.status).toBe(200);
      expect(res.body.success).toBe(true);
    });

    it('When a team name is 101 emoji, then it is refused as longer than 100', async () => {
      const res = await createTeam('😀'.repeat(101));
      expect(res.status).toBe(400);
      expect(res.body.errorMessage).toBe('Name length must be less than or equal to 100 characters long');
    });

    it('When a UserSeeding password is 6 astral characters (12 UTF-16 units), then it is refused by the minimum', async () => {
      const res = await seedUsers([
        {
          email: `astral-${randomUUID().slice(0, 8)}@example.com`,
          userType: 'ServiceAccount',
          roles: ['ServiceAccount'],
          password: '𝒜'.repeat(6),
        },
      ]);
      expect(res.status).toBe(400);
      expect(res.body.errors['Users[0].Password']).toEqual([
        expect.stringMatching(/^Users\[0\]\.Password length must be at least \d+ characters long$/),
      ]);
    });
  });

  describe('Refusals the document states', () => {
    it('When a team name is only blanks, then it is refused as empty, as the document says (pattern \\S)', async () => {
      const res = await createTeam('   ');
      expect(res.status).toBe(400);
      expect(res.body.errorMessage).toBe('Name must not be empty');
    });

    it('When a team name has blanks around it, then it is accepted and trimmed', async () => {
      expect((await createTeam('  Blank Edges  ')).status).toBe(200);
    });

    it('When GetMappedPlayers filters by an empty leaguePlayerId, then 400 saying it must not be empty (minLength 1)', async () => {
      const res = await request(subject.app)
        .post('/api/readmodel')
        .set('Authorization', basic('edges-svc@example.com'))
        .send({ query: { queryType: 'GetMappedPlayers', leaguePlayerId: '' } });
      expect(res.status).toBe(400);
      expect(res.body.errors).toEqual({ LeaguePlayerId: ['LeaguePlayerId must not be empty'] });
    });

    it('When a form-encoded token request repeats username, then 400 saying username must be a string', async () => {
      const res = await request(subject.app)
        .post('/api/auth/token')
        .type('form')
        .send('grant_type=password&username=a%40x.test&username=b%40x.test&password=x');
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ error: 'invalid_request', error_description: 'username must be a string' });
    });

    it('When a JSON token request sends username as an array, then 400 saying username must be a string', async () => {
      const res = await token({ grant_type: 'password', username: ['a@x.test'], password: 'x' });
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ error: 'invalid_request', error_description: 'username must be a string' });
    });

    it('When a token request lacks the password, then 400 saying both are required', async () => {
      const res = await token({ grant_type: 'password', username: 'a@x.test' });
      expect(res.status).toBe(400);
      expect(res.body).toEqual({
        error: 'invalid_request',
        error_description: 'username and password are required',
      });
    });
  });
});
