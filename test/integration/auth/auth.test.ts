import { randomUUID } from 'node:crypto';

import jwt from 'jsonwebtoken';
import request from 'supertest';

import { bootstrapAdmin } from '../../../ingress/auth/bootstrap-admin';
import { defineQuery, querySchema } from '../../../ingress/readmodel/query-definition';
import { SYSTEM_ACTOR } from '../../../shared/accounts/account';
import { changeAccount } from '../../helpers/account-changes';
import { createTestApp, type TestApp } from '../../helpers/app-fixture';
import { eventually } from '../../helpers/processes';

const ADMIN = { email: 'Admin@Example.com', password: 'correct horse battery staple' };
const JWT_SECRET = 'a-test-secret-that-is-at-least-32-characters-long';
const CURRENT_USER = { query: { queryType: 'CurrentUser' }, skip: 0, take: 10 };
const UNAUTHORIZED_PROBLEM = {
  type: 'https://tools.ietf.org/html/rfc7235#section-3.1',
  title: 'Unauthorized',
  status: 401,
};

/** RFC 7617 and RFC 6750 challenges: Basic names its charset, so clients send UTF-8. */
const BASIC_CHALLENGE = 'Basic realm="fantasy-team-service", charset="UTF-8"';
const BEARER_CHALLENGE = 'Bearer realm="fantasy-team-service"';

function basic(email: string, password: string): string {
  return `Basic ${Buffer.from(`${email}:${password}`).toString('base64')}`;
}

/** Answers every response seen in this file, so one test can prove none carried a hash. */
const responseTexts: string[] = [];
function remember<T extends { text: string }>(res: T): T {
  responseTexts.push(res.text);
  return res;
}

const adminOnlyQuery = defineQuery<unknown>({
  queryType: 'TestAdminOnly',
  description: 'test',
  schemes: ['Basic', 'Bearer'],
  roles: ['Admin'],
  schema: querySchema('TestAdminOnly'),
  response: { type: 'object' },
  handle: () => Promise.resolve({ body: { ok: true } }),
});
const basicOnlyQuery = defineQuery<unknown>({
  queryType: 'TestBasicOnly',
  description: 'test',
  schemes: ['Basic'],
  roles: [],
  schema: querySchema('TestBasicOnly'),
  response: { type: 'object' },
  handle: () => Promise.resolve({ body: { ok: true } }),
});

describe('Accounts and authentication', () => {
  let subject: TestApp;

  beforeAll(async () => {
    subject = await createTestApp(
      {
        ADMIN_EMAIL: ADMIN.email,
        ADMIN_PASSWORD: ADMIN.password,
        JWT_SECRET,
        AUTH_MAX_FAILURES_PER_ACCOUNT_AND_ADDRESS: '3',
        AUTH_MAX_FAILURES_PER_ADDRESS: '1000',
      },
      { extraQueries: [adminOnlyQuery, basicOnlyQuery] },
    );
    await bootstrapAdmin(subject.config, subject.services.accounts, subject.logger);
  });
  afterAll(() => subject.close());

  const currentUser = (authorization?: string) => {
    const req = request(subject.app).post('/api/readmodel').send(CURRENT_USER);
    return authorization === undefined ? req : req.set('Authorization', authorization);
  };
  const tokenFor = async (email: string, password: string) =>
    remember(
      await request(subject.app)
        .post('/api/auth/token')
        .send({ grant_type: 'password', username: email, password }),
    ).body as { access_token: string };

  describe('Bootstrap admin', () => {
    it('When the ingress starts with ADMIN_EMAIL and ADMIN_PASSWORD, then that admin signs in by Basic and sees CurrentUser', async () => {
      const res = remember(await currentUser(basic(ADMIN.email, ADMIN.password)));
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ totalCount: 1, skip: 0 });
      const [item] = res.body.data;
      expect(item).toMatchObject({
        name: 'admin@example.com',
        email: 'admin@example.com',
        roles: ['Admin'],
        authenticationType: 'Basic',
        effectiveRoles: ['Member', 'Admin', 'UserManager', 'Public'],
      });
      expect(item.claims).toEqual({
        'http://schemas.xmlsoap.org/ws/2005/05/identity/claims/nameidentifier':
          expect.stringMatching(/^[0-9a-f-]{36}$/),
        account_type: 'Human',
        internal_user_id: item.claims['http://schemas.xmlsoap.org/ws/2005/05/identity/claims/nameidentifier'],
        'http://schemas.microsoft.com/ws/2008/06/identity/claims/role': 'Admin',
      });
      expect(new Date(item.requestTime).toISOString()).toBe(item.requestTime);
    });

    it('When several replicas bootstrap the same admin at once, then exactly one account event exists', async () => {
      await Promise.all(
        [1, 2, 3, 4].map(() => bootstrapAdmin(subject.config, subject.services.accounts, subject.logger)),
      );
      const { account } = await subject.services.accounts.findWithCredential(ADMIN.email);
      const events = await subject.services.accounts.readEvents(account?.userId ?? '');
      expect(events).toHaveLength(1);
    });

    it('When ADMIN_EMAIL already belongs to an account without the Admin role, then start-up says so in a warning and grants nothing', async () => {
      const squatted = { email: 'squatted-admin@example.com', password: 'squatted-password-1' };
      await subject.createUser({ ...squatted, roles: ['Member'] });
      const config = {
        ...subject.config,
        adminEmail: squatted.email,
        adminPassword: 'the-operators-password',
      };
      await bootstrapAdmin(config, subject.services.accounts, subject.logger);
      expect(subject.logs.lines).toContainEqual(
        expect.objectContaining({
          level: 'warn',
          message: 'ADMIN_EMAIL belongs to an account without the Admin role: no administrator was made',
          roles: ['Member'],
        }),
      );
      const { account } = await subject.services.accounts.findWithCredential(squatted.email);
      expect(account?.roles).toEqual(['Member']);
    });

    it('When the admin asks /api/auth/token with the password grant, then a Bearer token works for CurrentUser', async () => {
      const res = remember(
        await request(subject.app)
          .post('/api/auth/token')
          .send({ grant_type: 'password', username: ADMIN.email, password: ADMIN.password }),
      );
      expect(res.status).toBe(200);
      expect(res.headers['cache-control']).toBe('no-store');
      expect(res.body).toEqual({ access_token: expect.any(String), token_type: 'Bearer', expires_in: 3600 });

      const me = remember(await currentUser(`Bearer ${res.body.access_token}`));
      expect(me.status).toBe(200);
      expect(me.body.data[0]).toMatchObject({
        email: 'admin@example.com',
        authenticationType: 'Bearer',
        roles: ['Admin'],
      });
    });

    it('When the token request is form-encoded, then it is accepted too', async () => {
      const res = remember(
        await request(subject.app)
          .post('/api/auth/token')
          .type('form')
          .send({ grant_type: 'password', username: ADMIN.email, password: ADMIN.password }),
      );
      expect(res.status).toBe(200);
      const claims = jwt.verify(res.body.access_token, JWT_SECRET) as jwt.JwtPayload;
      expect(claims).toMatchObject({
        email: 'admin@example.com',
        roles: ['Admin'],
        iss: 'fantasy-team-service',
        aud: 'fantasy-team-api',
      });
      expect(claims.sub).toMatch(/^[0-9a-f-]{36}$/);
      expect(claims.jti).toEqual(expect.any(String));
      expect((claims.exp ?? 0) - (claims.iat ?? 0)).toBe(3600);
    });
  });

  describe('Token endpoint errors', () => {
    it('When the password grant has a wrong password, then the answer is 400 invalid_grant', async () => {
      const res = remember(
        await request(subject.app)
          .post('/api/auth/token')
          .send({ grant_type: 'password', username: 'nobody-token@example.com', password: 'x' }),
      );
      expect(res.status).toBe(400);
      expect(res.body.error).toBe('invalid_grant');
      expect(res.body.access_token).toBeUndefined();
    });

    it('When client_credentials carries a service account in a Basic header, then a token is issued; wrong ones get 401 invalid_client', async () => {
      await subject.createUser({
        email: 'svc-token@example.com',
        userType: 'ServiceAccount',
        roles: ['ServiceAccount'],
        password: 'svc-password-123',
      });
      const ok = remember(
        await request(subject.app)
          .post('/api/auth/token')
          .set('Authorization', basic('svc-token@example.com', 'svc-password-123'))
          .type('form')
          .send({ grant_type: 'client_credentials' }),
      );
      expect(ok.status).toBe(200);
      expect(ok.body.token_type).toBe('Bearer');

      const bad = remember(
        await request(subject.app)
          .post('/api/auth/token')
          .set('Authorization', basic('svc-token@example.com', 'wrong'))
          .send({ grant_type: 'client_credentials' }),
      );
      expect(bad.status).toBe(401);
      expect(bad.headers['www-authenticate']).toBe(BASIC_CHALLENGE);
      expect(bad.body).toEqual({ error: 'invalid_client', error_description: expect.any(String) });
    });

    it('When grant_type is missing or unknown, then the answer names the OAuth error', async () => {
      expect((await request(subject.app).post('/api/auth/token').send({})).body.error).toBe(
        'invalid_request',
      );
      expect(
        (await request(subject.app).post('/api/auth/token').send({ grant_type: 'implicit' })).body.error,
      ).toBe('unsupported_grant_type');
    });
  });

  describe('Refused credentials', () => {
    const expectBare401 = (res: request.Response) => {
      remember(res);
      expect(res.status).toBe(401);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(res.headers['www-authenticate']).toBe(`${BASIC_CHALLENGE}, ${BEARER_CHALLENGE}`);
      expect(res.body).toEqual({ ...UNAUTHORIZED_PROBLEM, traceId: res.headers['x-request-id'] });
    };

    beforeAll(async () => {
      await subject.createUser({ email: 'member-401@example.com', password: 'member-password-1' });
    });

    it('When no credentials are sent, then the answer is the spec 401 problem', async () => {
      expectBare401(await currentUser());
    });

    it('When an anonymous caller sends an invalid body, then it still gets 401 and learns nothing about schemas', async () => {
      expectBare401(await request(subject.app).post('/api/readmodel').send({ nonsense: true }));
    });

    it('When the password is wrong, then 401', async () => {
      expectBare401(await currentUser(basic('member-401@example.com', 'not-the-password')));
    });

    it('When the e-mail is unknown, then 401', async () => {
      expectBare401(await currentUser(basic('nobody@example.com', 'member-password-1')));
    });

    it.each([
      ['a scheme the service does not know', 'Token abc'],
      ['Basic without a colon', `Basic ${Buffer.from('no-colon').toString('base64')}`],
      ['Basic that is not base64', 'Basic !!!not-base64!!!'],
      ['Basic with an empty password', basic('member-401@example.com', '')],
      ['Bearer with garbage', 'Bearer not.a.jwt'],
      ['a bare scheme', 'Bearer'],
    ])('When the header is malformed (%s), then 401', async (_label, header) => {
      expectBare401(await currentUser(header));
    });

    it('When the token has expired, then 401', async () => {
      const { account } = await subject.services.accounts.findWithCredential('member-401@example.com');
      const expired = jwt.sign({ email: account?.email, roles: account?.roles }, JWT_SECRET, {
        algorithm: 'HS256',
        subject: account?.userId ?? '',
        issuer: 'fantasy-team-service',
        audience: 'fantasy-team-api',
        expiresIn: -10,
      });
      expectBare401(await currentUser(`Bearer ${expired}`));
    });

    it('When the token is signed with another secret, then 401', async () => {
      const { account } = await subject.services.accounts.findWithCredential('member-401@example.com');
      const forged = jwt.sign({ roles: ['Admin'] }, 'another-secret-another-secret-another-secret', {
        algorithm: 'HS256',
        subject: account?.userId ?? '',
        issuer: 'fantasy-team-service',
        audience: 'fantasy-team-api',
        expiresIn: 600,
      });
      expectBare401(await currentUser(`Bearer ${forged}`));
    });

    it('When the token uses alg none, then 401', async () => {
      const { account } = await subject.services.accounts.findWithCredential('member-401@example.com');
      const encode = (part: object) => Buffer.from(JSON.stringify(part)).toString('base64url');
      const now = Math.floor(Date.now() / 1000);
      const unsigned = `${encode({ alg: 'none', typ: 'JWT' })}.${encode({
        sub: account?.userId,
        roles: ['Admin'],
        iss: 'fantasy-team-service',
        aud: 'fantasy-team-api',
        iat: now,
        exp: now + 600,
      })}.`;
      expectBare401(await currentUser(`Bearer ${unsigned}`));
    });

    it('When the token is for another audience, then 401', async () => {
      const { account } = await subject.services.accounts.findWithCredential('member-401@example.com');
      const foreign = jwt.sign({}, JWT_SECRET, {
        algorithm: 'HS256',
        subject: account?.userId ?? '',
        issuer: 'fantasy-team-service',
        audience: 'some-other-api',
        expiresIn: 600,
      });
      expectBare401(await currentUser(`Bearer ${foreign}`));
    });
  });

  describe('Throttling', () => {
    it('When an account collects too many failures from one address, then even the right password from there gets a 429 problem with Retry-After', async () => {
      await subject.createUser({ email: 'throttled@example.com', password: 'throttled-password-1' });
      for (let attempt = 0; attempt < 3; attempt++) {
        expect((await currentUser(basic('throttled@example.com', `wrong-${attempt}`))).status).toBe(401);
      }
      const blocked = remember(await currentUser(basic('throttled@example.com', 'throttled-password-1')));
      expect(blocked.status).toBe(429);
      expect(blocked.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(Number(blocked.headers['retry-after'])).toBeGreaterThan(0);
      expect(blocked.body).toMatchObject({ status: 429, title: 'Too Many Requests' });
    });

    it('When a correct password comes before the limit, then it signs in, and the failures before it still count', async () => {
      await subject.createUser({ email: 'forgetful@example.com', password: 'forgetful-password-1' });
      expect((await currentUser(basic('forgetful@example.com', 'wrong-1'))).status).toBe(401);
      expect((await currentUser(basic('forgetful@example.com', 'wrong-2'))).status).toBe(401);
      expect((await currentUser(basic('forgetful@example.com', 'forgetful-password-1'))).status).toBe(200);
      expect((await currentUser(basic('forgetful@example.com', 'wrong-3'))).status).toBe(401);
      expect((await currentUser(basic('forgetful@example.com', 'wrong-4'))).status).toBe(429);
    });
  });

  describe('Accounts', () => {
    it('When many creates of one e-mail (in any case) race, then exactly one wins and the rest hear "User already exists"', async () => {
      const results = await Promise.all(
        Array.from({ length: 12 }, (_, i) =>
          subject.services.accounts.createUser(
            SYSTEM_ACTOR,
            {
              email: i % 2 ? 'Racer@Example.com' : 'racer@example.com ',
              userType: 'Human',
              roles: ['Member'],
              password: `pw-${i}-long-enough`,
            },
            { requestId: null, correlationId: null },
          ),
        ),
      );
      expect(results.filter((r) => r.status === 'created')).toHaveLength(1);
      expect(
        results.filter((r) => r.status === 'exists').map((r) => (r as { message: string }).message),
      ).toEqual(Array(11).fill('User already exists'));
      const events = await subject.services.accounts.readEvents(results[0]?.userId ?? '');
      expect(events).toHaveLength(1);
    });

    it('When a service account signs in by Basic, then its effective roles are ServiceAccount and Public', async () => {
      await subject.createUser({
        email: 'svc@example.com',
        userType: 'ServiceAccount',
        roles: ['ServiceAccount'],
        password: 'svc:pass:with:colons',
      });
      const res = remember(await currentUser(basic('svc@example.com', 'svc:pass:with:colons')));
      expect(res.status).toBe(200);
      expect(res.body.data[0]).toMatchObject({
        effectiveRoles: ['ServiceAccount', 'Public'],
        claims: { account_type: 'ServiceAccount' },
      });
    });

    it('When a user is created, then neither its event nor any response carries a password or hash', async () => {
      const userId = await subject.createUser({
        email: 'secretive@example.com',
        password: 'the-secret-password',
      });
      const events = await subject.services.store.readStream('user', userId);
      const stored = JSON.stringify(events);
      expect(stored).not.toContain('the-secret-password');
      expect(stored).not.toContain('$argon2');
      expect(responseTexts.length).toBeGreaterThan(10);
      const secrets =
        /\$argon2|the-secret-password|correct horse|member-password-1|svc-password-123|svc:pass:with:colons/;
      for (const text of responseTexts) expect(text).not.toMatch(secrets);
      expect(subject.logs.text).not.toMatch(secrets);
    });

    it('When the account changes after a cached sign-in, then the cached verification is not reused', async () => {
      const userId = await subject.createUser({
        email: 'rotating@example.com',
        password: 'old-password-123',
      });
      // Twice: the first verifies and caches the verification, the second caches the account too.
      expect((await currentUser(basic('rotating@example.com', 'old-password-123'))).status).toBe(200);
      expect((await currentUser(basic('rotating@example.com', 'old-password-123'))).status).toBe(200);
      // The command the account's ChangePassword runs: a new hash under a new security stamp.
      await changeAccount(
        subject.services,
        userId,
        { type: 'ChangePassword' },
        { newPassword: 'new-password-456' },
      );
      // The eviction travels by pub/sub: wait for it rather than race it.
      await eventually(() => Promise.resolve(!subject.services.accountCache.holds(userId)), 2_000, 5);

      expect((await currentUser(basic('rotating@example.com', 'old-password-123'))).status).toBe(401);
      expect((await currentUser(basic('rotating@example.com', 'new-password-456'))).status).toBe(200);
    });

    it('When a stored hash is read back, then it is argon2id at OWASP minimum parameters', async () => {
      const { credential } = await subject.services.accounts.findWithCredential('secretive@example.com');
      expect(credential).toMatch(/^\$argon2id\$v=19\$m=19456,t=2,p=1\$/);
    });
  });

  describe('Recalled credentials', () => {
    /** Counts how often passport runs a scheme's strategy (it runs a fresh object inheriting from this one). */
    const strategyRuns = (scheme: 'basic' | 'bearer') => {
      const registered = (
        subject.services.authentication.passport as unknown as {
          _strategy(name: string): { authenticate(...args: unknown[]): void };
        }
      )._strategy(scheme);
      return jest.spyOn(registered, 'authenticate');
    };
    afterEach(() => jest.restoreAllMocks());

    it.each([
      ['Basic', 'basic'],
      ['Bearer', 'bearer'],
    ] as const)(
      'When %s credentials passport verified are sent again, then the caller is admitted without passport running again',
      async (authenticationType, scheme) => {
        const { access_token } = await tokenFor(ADMIN.email, ADMIN.password);
        const authorization =
          scheme === 'basic' ? basic(ADMIN.email, ADMIN.password) : `Bearer ${access_token}`;
        // Verified once (a token issued here is still new to the strategy; Basic may be cached already).
        expect((await currentUser(authorization)).status).toBe(200);
        const runs = strategyRuns(scheme);

        const again = remember(await currentUser(authorization));

        expect(again.status).toBe(200);
        expect(again.body.data[0]).toMatchObject({ email: ADMIN.email.toLowerCase(), authenticationType });
        expect(runs).not.toHaveBeenCalled();
      },
    );

    it('When a known token is also offered in the query string, then passport judges it and refuses it; a token in the body is no credential at all', async () => {
      const { access_token } = await tokenFor(ADMIN.email, ADMIN.password);
      expect((await currentUser(`Bearer ${access_token}`)).status).toBe(200);
      const runs = strategyRuns('bearer');

      const inQuery = await request(subject.app)
        .post(`/api/readmodel?access_token=${access_token}`)
        .set('Authorization', `Bearer ${access_token}`)
        .send(CURRENT_USER);
      // No body is read before authentication, so a token there is never seen.
      const inBodyOnly = await request(subject.app)
        .post('/api/readmodel')
        .send({ ...CURRENT_USER, access_token });

      // passport-http-bearer refuses a token offered twice; the recall must not admit it instead.
      for (const res of [inQuery, inBodyOnly]) {
        expect(res.status).toBe(401);
        expect(res.body).toMatchObject(UNAUTHORIZED_PROBLEM);
      }
      expect(runs).toHaveBeenCalledTimes(1);
    });

    it('When a recalled Basic caller sends another password, then passport verifies that one and refuses it', async () => {
      await subject.createUser({ email: 'recalled@example.com', password: 'recalled-password-1' });
      const authorization = basic('recalled@example.com', 'recalled-password-1');
      expect((await currentUser(authorization)).status).toBe(200);
      const runs = strategyRuns('basic');
      expect((await currentUser(authorization)).status).toBe(200);
      expect(runs).not.toHaveBeenCalled();

      expect((await currentUser(basic('recalled@example.com', 'wrong-password-1'))).status).toBe(401);
      expect(runs).toHaveBeenCalledTimes(1);
    });
  });

  describe('Read-model dispatch', () => {
    it('When queryType is unknown, then a 400 validation problem names QueryType', async () => {
      const res = await request(subject.app)
        .post('/api/readmodel')
        .set('Authorization', basic(ADMIN.email, ADMIN.password))
        .send({ query: { queryType: 'NoSuchQuery' } });
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({
        title: 'One or more validation errors occurred.',
        errors: { QueryType: ['Unknown query type: NoSuchQuery'] },
      });
    });

    it('When the query object is missing, then a 400 validation problem names Query', async () => {
      const res = await request(subject.app)
        .post('/api/readmodel')
        .set('Authorization', basic(ADMIN.email, ADMIN.password))
        .send({});
      expect(res.status).toBe(400);
      expect(res.body.errors).toEqual({ Query: ['Query is required'] });
    });

    it('When a caller lacks the query role, then a 403 Forbidden problem', async () => {
      await subject.createUser({ email: 'plain-member@example.com', password: 'plain-member-pw' });
      const res = await request(subject.app)
        .post('/api/readmodel')
        .set('Authorization', basic('plain-member@example.com', 'plain-member-pw'))
        .send({ query: { queryType: 'TestAdminOnly' } });
      expect(res.status).toBe(403);
      expect(res.body).toMatchObject({
        type: 'https://tools.ietf.org/html/rfc7231#section-6.5.3',
        title: 'Forbidden',
        status: 403,
      });
      const admin = await request(subject.app)
        .post('/api/readmodel')
        .set('Authorization', basic(ADMIN.email, ADMIN.password))
        .send({ query: { queryType: 'TestAdminOnly' } });
      expect(admin.status).toBe(200);
    });

    it('When a Basic-only query is called with a bearer token, then 401', async () => {
      const { access_token } = await tokenFor(ADMIN.email, ADMIN.password);
      const res = await request(subject.app)
        .post('/api/readmodel')
        .set('Authorization', `Bearer ${access_token}`)
        .send({ query: { queryType: 'TestBasicOnly' } });
      expect(res.status).toBe(401);
      expect(res.headers['www-authenticate']).toBe(BASIC_CHALLENGE);
    });

    it('When a command is sent with Basic credentials, then 401 with the Bearer challenge only', async () => {
      await subject.createUser({ email: 'basic-commander@example.com', password: 'commander-password-1' });
      const res = remember(
        await request(subject.app)
          .post('/api/command')
          .set('Authorization', basic('basic-commander@example.com', 'commander-password-1'))
          .send({ commandType: 'CreateFantasyTeam', requestId: randomUUID(), payload: {} }),
      );
      expect(res.status).toBe(401);
      expect(res.headers['www-authenticate']).toBe(BEARER_CHALLENGE);
    });

    it('When CurrentUser is asked with skip 1, then data is empty but totalCount stays 1', async () => {
      const res = await request(subject.app)
        .post('/api/readmodel')
        .set('Authorization', basic(ADMIN.email, ADMIN.password))
        .send({ ...CURRENT_USER, skip: 1 });
      expect(res.body).toEqual({ queryType: 'CurrentUser', data: [], totalCount: 1, skip: 1 });
    });
  });
});
