import { randomUUID } from 'node:crypto';

import jwt from 'jsonwebtoken';
import request, { type Response } from 'supertest';

import { AccountCache } from '../../../ingress/auth/account-cache';
import { WWW_AUTHENTICATE } from '../../../ingress/auth/authenticate';
import * as basicHeader from '../../../ingress/auth/basic-header';
import { CHALLENGES } from '../../../ingress/auth/challenge';
import { SECURITY_STAMP_CLAIM } from '../../../ingress/auth/token-service';
import { type Account, CREDENTIAL_FIELD, SYSTEM_ACTOR } from '../../../shared/accounts/account';
import { loadConfig } from '../../../shared/config';
import { AppError } from '../../../shared/errors';
import { PROBLEMS } from '../../../shared/http/problem';
import { createRedisConnection, duplicateConnection } from '../../../shared/redis/connections';
import { LEGACY_SECURITY_STAMP, userDecider } from '../../../shared/user/user.decider';
import { normalizeEmail } from '../../../shared/user/user-id';
import { changeAccount } from '../../helpers/account-changes';
import { createTestApp, type TestApp, testRedisEnv } from '../../helpers/app-fixture';
import { eventually } from '../../helpers/processes';
import { LossyProxy } from '../../helpers/tcp-proxy';
import { userIdForEmail } from '../../helpers/user-ids';

const JWT_SECRET = 'a-revocation-test-secret-of-at-least-32-characters';
const CURRENT_USER = { query: { queryType: 'CurrentUser' }, skip: 0, take: 10 };
const PASSWORD = 'the-first-password';
const NEW_PASSWORD = 'the-second-password';
/** AUTH_MAX_FAILURES_PER_ACCOUNT_AND_ADDRESS in this file. */
const FAILURES_PER_ACCOUNT_AND_ADDRESS = 3;

function basic(email: string, password: string): string {
  return `Basic ${Buffer.from(`${email}:${password}`, 'utf8').toString('base64')}`;
}

/** Each test signs in from addresses of its own, so no test's failures throttle another's. */
let nextAddress = 10;
function freshAddress(): string {
  nextAddress += 1;
  return `192.0.2.${nextAddress}`;
}

/** What a client can tell of an answer: status, challenge and body (without the per-request trace id). */
function visible(res: Response): unknown {
  const { traceId: _traceId, ...body } = res.body as Record<string, unknown>;
  return { status: res.status, challenge: res.headers['www-authenticate'], body };
}

describe('Revocation: a security stamp, disabled accounts, and the current-password check', () => {
  let subject: TestApp;

  beforeAll(async () => {
    subject = await createTestApp({
      JWT_SECRET,
      TRUST_PROXY: 'loopback',
      AUTH_MAX_FAILURES_PER_ACCOUNT_AND_ADDRESS: String(FAILURES_PER_ACCOUNT_AND_ADDRESS),
      AUTH_MAX_FAILURES_PER_ADDRESS: '1000',
    });
  });
  afterAll(() => subject.close());

  const currentUser = (authorization: string, address = freshAddress()) =>
    request(subject.app)
      .post('/api/readmodel')
      .set('X-Forwarded-For', address)
      .set('Authorization', authorization)
      .send(CURRENT_USER);
  const passwordGrant = (email: string, password: string, address = freshAddress()) =>
    request(subject.app)
      .post('/api/auth/token')
      .set('X-Forwarded-For', address)
      .send({ grant_type: 'password', username: email, password });
  const clientCredentials = (email: string, password: string, address = freshAddress()) =>
    request(subject.app)
      .post('/api/auth/token')
      .set('X-Forwarded-For', address)
      .set('Authorization', basic(email, password))
      .send({ grant_type: 'client_credentials' });
  const tokenFor = async (email: string, password: string) => {
    const res = await passwordGrant(email, password);
    expect(res.status).toBe(200);
    return (res.body as { access_token: string }).access_token;
  };
  const newAccount = async (label: string, roles: Account['roles'] = ['Member']) => {
    const email = `${label}-${randomUUID().slice(0, 8)}@example.com`;
    const userId = await subject.createUser({ email, password: PASSWORD, roles });
    return { email, userId };
  };
  /** Every replica hears of a change by pub/sub: this one's cache has dropped the account. */
  const evicted = (userId: string) =>
    eventually(() => !subject.services.accountCache.holds(userId), 1_000, 5);
  const stampOf = async (userId: string) =>
    (await subject.services.accounts.findById(userId))?.securityStamp ?? 'no account';

  function expectRefusedBearer(res: Response): void {
    expect(res.status).toBe(401);
    expect(res.headers['www-authenticate']).toBe(WWW_AUTHENTICATE);
    expect(res.body).toMatchObject({ ...PROBLEMS[401], status: 401 });
  }

  describe('Bearer tokens', () => {
    it("When an account's security stamp changes, then every token issued before is refused with 401 and the challenge (one recalled, one never seen), and a token issued after works", async () => {
      const { email, userId } = await newAccount('restamped');
      const recalled = await tokenFor(email, PASSWORD);
      const neverUsed = await tokenFor(email, PASSWORD);
      expect((await currentUser(`Bearer ${recalled}`)).status).toBe(200);
      expect((await currentUser(`Bearer ${recalled}`)).status).toBe(200);
      expect(subject.services.accountCache.holds(userId)).toBe(true);

      // The same roles: only the stamp changes.
      await changeAccount(subject.services, userId, { type: 'SetUserRoles', data: { roles: ['Member'] } });
      await evicted(userId);

      expectRefusedBearer(await currentUser(`Bearer ${recalled}`));
      expectRefusedBearer(await currentUser(`Bearer ${recalled}`));
      expectRefusedBearer(await currentUser(`Bearer ${neverUsed}`));
      const fresh = await tokenFor(email, PASSWORD);
      expect((await currentUser(`Bearer ${fresh}`)).status).toBe(200);
    });

    it('When a token carries no stamp claim (issued before tokens carried one), then it stands while its account keeps the legacy stamp, and dies with the first security change', async () => {
      const email = normalizeEmail(`legacy-${randomUUID().slice(0, 8)}@example.com`);
      const userId = userIdForEmail(email);
      // An account from before stamps: its created event carries none (read as the legacy stamp).
      const created = await subject.services.commands.handle(userDecider, {
        aggregateId: userId,
        command: {
          type: 'CreateUser',
          data: {
            userId,
            email,
            userName: email,
            userType: 'Human',
            roles: ['Member'],
            firstName: null,
            lastName: null,
            emailVerified: false,
            securityStamp: LEGACY_SECURITY_STAMP,
          },
        },
        context: { now: new Date(), actorUserId: SYSTEM_ACTOR.userId, actorRoles: SYSTEM_ACTOR.roles },
        metadata: { actorUserId: SYSTEM_ACTOR.userId, requestId: null, correlationId: 'test' },
        attachments: { [CREDENTIAL_FIELD]: await subject.services.hasher.hash(PASSWORD) },
      });
      expect(created.accepted).toBe(true);
      // What the token endpoint issued before tokens carried a stamp.
      const legacyToken = jwt.sign({ email, roles: ['Member'] }, JWT_SECRET, {
        algorithm: 'HS256',
        subject: userId,
        issuer: subject.config.jwt.issuer,
        audience: subject.config.jwt.audience,
        expiresIn: 3600,
        jwtid: randomUUID(),
      });
      const issuedNow = await tokenFor(email, PASSWORD);
      expect(jwt.decode(legacyToken)).not.toHaveProperty([SECURITY_STAMP_CLAIM]);
      expect(jwt.decode(issuedNow)).toHaveProperty([SECURITY_STAMP_CLAIM], LEGACY_SECURITY_STAMP);
      expect((await currentUser(`Bearer ${legacyToken}`)).status).toBe(200);
      expect((await currentUser(`Bearer ${issuedNow}`)).status).toBe(200);

      await changeAccount(
        subject.services,
        userId,
        { type: 'SetUserPassword' },
        { newPassword: NEW_PASSWORD },
      );
      await evicted(userId);

      expectRefusedBearer(await currentUser(`Bearer ${legacyToken}`));
      expectRefusedBearer(await currentUser(`Bearer ${issuedNow}`));
    });

    it('When an account is deleted, then its tokens and its password are refused', async () => {
      const { email, userId } = await newAccount('erased');
      const token = await tokenFor(email, PASSWORD);
      expect((await currentUser(`Bearer ${token}`)).status).toBe(200);
      expect((await currentUser(basic(email, PASSWORD))).status).toBe(200);

      await changeAccount(subject.services, userId, { type: 'DeleteUser' });
      await evicted(userId);

      expectRefusedBearer(await currentUser(`Bearer ${token}`));
      expect((await currentUser(basic(email, PASSWORD))).status).toBe(401);
      expect((await passwordGrant(email, PASSWORD)).status).toBe(400);
    });
  });

  describe('Basic and the verification cache', () => {
    it('When the password changes, then the old password is refused by Basic and by the token endpoint although it was verified and cached, and the new one is accepted', async () => {
      const { email, userId } = await newAccount('password-changed');
      const address = freshAddress();
      // Verified once, then recalled: both caches hold it.
      expect((await currentUser(basic(email, PASSWORD), address)).status).toBe(200);
      expect((await currentUser(basic(email, PASSWORD), address)).status).toBe(200);

      await changeAccount(
        subject.services,
        userId,
        { type: 'ChangePassword' },
        { newPassword: NEW_PASSWORD },
      );
      await evicted(userId);

      const refused = await currentUser(basic(email, PASSWORD), address);
      expect(refused.status).toBe(401);
      expect(refused.headers['www-authenticate']).toBe(WWW_AUTHENTICATE);
      expect((await passwordGrant(email, PASSWORD, address)).body).toMatchObject({ error: 'invalid_grant' });
      expect((await currentUser(basic(email, NEW_PASSWORD), address)).status).toBe(200);
      expect((await passwordGrant(email, NEW_PASSWORD, address)).status).toBe(200);
    });

    it('When an account is enabled again, then its cached password needs no new hash if its stamp is unchanged: the cache follows the stamp, not every change', async () => {
      const { email, userId } = await newAccount('stamp-keyed');
      const authorization = basic(email, PASSWORD);
      expect((await currentUser(authorization)).status).toBe(200);
      const hashes = jest.spyOn(subject.services.hasher, 'verify');
      try {
        // A disable that keeps the stamp, then an enable (which never changes it): two new versions.
        const stamp = await stampOf(userId);
        await changeAccount(subject.services, userId, {
          type: 'DisableUser',
          data: { securityStamp: stamp },
        });
        await changeAccount(subject.services, userId, { type: 'EnableUser' });
        await evicted(userId);

        expect((await currentUser(authorization)).status).toBe(200);
        expect(hashes).not.toHaveBeenCalled();
      } finally {
        hashes.mockRestore();
      }
    });
    it.each([
      ['the password changes', { type: 'ChangePassword' }, { newPassword: NEW_PASSWORD }, 401],
      ['the account is disabled', { type: 'DisableUser' }, {}, 401],
      ['its roles change', { type: 'SetUserRoles', data: { roles: ['Admin'] } }, {}, 200],
    ] as const)(
      'When a header recalled by its text (not parsed again) was verified and %s, then it no longer stands at once: it is checked again',
      async (_, change, options, status) => {
        const { email, userId } = await newAccount('header-alias');
        const authorization = basic(email, PASSWORD);
        expect((await currentUser(authorization)).status).toBe(200);
        const parse = jest.spyOn(basicHeader, 'parseBasicCredentials');
        const hashes = jest.spyOn(subject.services.hasher, 'verify');
        try {
          // Recalled through the header's alias: neither parsed nor hashed.
          expect((await currentUser(authorization)).status).toBe(200);
          expect(parse).not.toHaveBeenCalled();
          expect(hashes).not.toHaveBeenCalled();

          await changeAccount(subject.services, userId, change, options);
          await evicted(userId);

          const answer = await currentUser(authorization);
          expect(answer.status).toBe(status);
          // Checked again, as a first sign-in: the verification the alias named did not stand.
          expect(hashes).toHaveBeenCalledTimes(1);
          if (status === 200) expect(answer.body).toMatchObject({ data: [{ email, roles: ['Admin'] }] });
          else expect(answer.headers['www-authenticate']).toBe(WWW_AUTHENTICATE);
        } finally {
          parse.mockRestore();
          hashes.mockRestore();
        }
      },
    );
  });

  describe('Disabled accounts', () => {
    it('When an account is disabled (even under an unchanged stamp), then its tokens and its cached Basic credentials are refused, and no grant issues it a token', async () => {
      const { email, userId } = await newAccount('disabled-same-stamp', ['ServiceAccount']);
      const token = await tokenFor(email, PASSWORD);
      expect((await currentUser(`Bearer ${token}`)).status).toBe(200);
      expect((await currentUser(basic(email, PASSWORD))).status).toBe(200);

      // Keeping the stamp proves the disabled rule itself; DisableUser always restamps otherwise.
      const stamp = await stampOf(userId);
      await changeAccount(subject.services, userId, { type: 'DisableUser', data: { securityStamp: stamp } });
      await evicted(userId);

      expectRefusedBearer(await currentUser(`Bearer ${token}`));
      // The token endpoint first: it would recall the cached verification, then hash afresh.
      expect(visible(await passwordGrant(email, PASSWORD))).toEqual(
        visible(await passwordGrant(email, 'wrong!')),
      );
      expect(visible(await clientCredentials(email, PASSWORD))).toEqual(
        visible(await clientCredentials(email, 'wrong!')),
      );
      const refused = await currentUser(basic(email, PASSWORD));
      expect(refused.status).toBe(401);
      expect(refused.headers['www-authenticate']).toBe(WWW_AUTHENTICATE);
    });

    it("When a disabled account's right password is sent, then the answer is word for word a wrong password's, by Basic and by both grants", async () => {
      const { email, userId } = await newAccount('disabled-oracle');
      await changeAccount(subject.services, userId, { type: 'DisableUser' });
      await evicted(userId);

      expect(visible(await currentUser(basic(email, PASSWORD)))).toEqual(
        visible(await currentUser(basic(email, 'a wrong password'))),
      );
      const grant = await passwordGrant(email, PASSWORD);
      expect(visible(grant)).toEqual(visible(await passwordGrant(email, 'a wrong password')));
      expect(grant.body).toEqual({
        error: 'invalid_grant',
        error_description: 'The user name or password is incorrect.',
      });
      const client = await clientCredentials(email, PASSWORD);
      expect(visible(client)).toEqual(visible(await clientCredentials(email, 'a wrong password')));
      expect(client.status).toBe(401);
      expect(client.headers['www-authenticate']).toBe(CHALLENGES.Basic);
    });

    it("When a disabled account's right password is sent, then it counts as a failed sign-in: past the limit that address gets the 429 problem", async () => {
      const { email, userId } = await newAccount('disabled-throttled');
      await changeAccount(subject.services, userId, { type: 'DisableUser' });
      await evicted(userId);
      const address = freshAddress();

      for (let i = 0; i < FAILURES_PER_ACCOUNT_AND_ADDRESS; i += 1)
        expect((await passwordGrant(email, PASSWORD, address)).status).toBe(400);

      const throttled = await passwordGrant(email, PASSWORD, address);
      expect(throttled.status).toBe(429);
      expect(Number(throttled.headers['retry-after'])).toBeGreaterThan(0);
      expect((await currentUser(basic(email, PASSWORD), address)).status).toBe(429);
    });

    it('When a disabled account is enabled again, then it signs in by every scheme, and the tokens the disable revoked stay refused', async () => {
      const { email, userId } = await newAccount('re-enabled', ['ServiceAccount']);
      const before = await tokenFor(email, PASSWORD);
      expect((await currentUser(`Bearer ${before}`)).status).toBe(200);

      await changeAccount(subject.services, userId, { type: 'DisableUser' });
      await changeAccount(subject.services, userId, { type: 'EnableUser' });
      await evicted(userId);

      expectRefusedBearer(await currentUser(`Bearer ${before}`));
      const after = await tokenFor(email, PASSWORD);
      expect((await currentUser(`Bearer ${after}`)).status).toBe(200);
      expect((await clientCredentials(email, PASSWORD)).status).toBe(200);
      expect((await currentUser(basic(email, PASSWORD))).status).toBe(200);
    });
  });

  describe("The current-password check (ChangePassword's)", () => {
    it('When the current password is right, then it matches; once the password changed, the verification it cached no longer matches and the new password does', async () => {
      const { email, userId } = await newAccount('current-password');
      const { verifier } = subject.services;
      const address = freshAddress();
      expect(await verifier.matches(email, PASSWORD, address)).toBe(true);
      // Recalled from the verification cache this time.
      const hashes = jest.spyOn(subject.services.hasher, 'verify');
      try {
        expect(await verifier.matches(email, PASSWORD, address)).toBe(true);
        expect(hashes).not.toHaveBeenCalled();
      } finally {
        hashes.mockRestore();
      }

      await changeAccount(
        subject.services,
        userId,
        { type: 'ChangePassword' },
        { newPassword: NEW_PASSWORD },
      );
      await evicted(userId);

      expect(await verifier.matches(email, PASSWORD, address)).toBe(false);
      expect(await verifier.matches(email, NEW_PASSWORD, address)).toBe(true);
    });

    it('When wrong current passwords are checked, then each counts as a failed sign-in: past the limit the check throws the 429 problem, and so does a sign-in from that address', async () => {
      const { email } = await newAccount('current-password-guessed');
      const { verifier } = subject.services;
      const address = freshAddress();
      for (let i = 0; i < FAILURES_PER_ACCOUNT_AND_ADDRESS; i += 1)
        expect(await verifier.matches(email, `guess ${i}`, address)).toBe(false);

      const checked = verifier.matches(email, PASSWORD, address);
      await expect(checked).rejects.toBeInstanceOf(AppError);
      await expect(checked).rejects.toMatchObject({ status: 429 });
      expect((await passwordGrant(email, PASSWORD, address)).status).toBe(429);
      expect((await currentUser(basic(email, PASSWORD), address)).status).toBe(429);
      // Another address is not refused for this one's failures.
      expect(await verifier.matches(email, PASSWORD, freshAddress())).toBe(true);
    });
  });

  describe('The cost of the checks', () => {
    it('When the account is cached, then admitting its token or its cached Basic credentials, stamp and disabled checks included, sends no command to Redis', async () => {
      // Without the per-account rate limit, whose lease is the one Redis call it makes now and then.
      const quiet = await createTestApp({ JWT_SECRET, RATE_LIMIT_PER_ACCOUNT: '0' });
      try {
        const email = `no-round-trip-${randomUUID().slice(0, 8)}@example.com`;
        await quiet.createUser({ email, password: PASSWORD });
        const token = (
          (
            await request(quiet.app)
              .post('/api/auth/token')
              .send({ grant_type: 'password', username: email, password: PASSWORD })
          ).body as { access_token: string }
        ).access_token;
        const ask = (authorization: string) =>
          request(quiet.app).post('/api/readmodel').set('Authorization', authorization).send(CURRENT_USER);
        // Warm: the token verified, the password verified, the account cached.
        for (const authorization of [`Bearer ${token}`, basic(email, PASSWORD)])
          expect((await ask(authorization)).status).toBe(200);
        const commands = jest.spyOn(quiet.redis, 'sendCommand');
        try {
          for (let i = 0; i < 5; i += 1) {
            const [byBearer, byBasic] = [await ask(`Bearer ${token}`), await ask(basic(email, PASSWORD))];
            expect(byBearer.body).toMatchObject({ data: [{ email, authenticationType: 'Bearer' }] });
            expect(byBasic.body).toMatchObject({ data: [{ email, authenticationType: 'Basic' }] });
          }
          expect(commands.mock.calls.map(([command]) => (command as { name: string }).name)).toEqual([]);
        } finally {
          commands.mockRestore();
        }
      } finally {
        await quiet.close();
      }
    });
  });

  describe('The account cache', () => {
    it('When its subscription drops and comes back, then it forgets what it held, keeps accounts again once resubscribed, and hears changes again', async () => {
      const { userId } = await newAccount('resubscribed');
      const subscriber = duplicateConnection(subject.redis, subject.logger, 'test-account-cache');
      const cache = await AccountCache.start(
        subject.services.accounts,
        subscriber,
        subject.services.keys,
        60,
        subject.logger,
      );
      try {
        await cache.findById(userId);
        expect(cache.holds(userId)).toBe(true);

        const closed = new Promise((resolve) => subscriber.once('close', resolve));
        subscriber.disconnect(true);
        await closed;
        expect(cache.holds(userId)).toBe(false);

        await eventually(
          async () => (await cache.findById(userId)) !== null && cache.holds(userId),
          5_000,
          20,
        );
        await changeAccount(subject.services, userId, { type: 'SetUserRoles', data: { roles: ['Admin'] } });
        await eventually(() => !cache.holds(userId), 1_000, 5);
        expect((await cache.findById(userId))?.roles).toEqual(['Admin']);
      } finally {
        await cache.close();
      }
    });

    // Through a proxy to the one test Redis: a cluster client would find the nodes behind it.
    const onOneRedis = process.env.REDIS_TEST_CLUSTER_NODES ? it.skip : it;
    onOneRedis(
      'When its subscription goes silent without closing, then it stops keeping accounts within the heartbeat deadline, so a change it did not hear is read from Redis',
      async () => {
        const { userId } = await newAccount('silent-subscription');
        const proxy = await LossyProxy.start(process.env.REDIS_TEST_URL ?? '');
        const subscriber = createRedisConnection(
          loadConfig({ ...testRedisEnv(), REDIS_URL: proxy.url }).redis,
          'background',
          subject.logger,
        );
        const cache = await AccountCache.start(
          subject.services.accounts,
          subscriber,
          subject.services.keys,
          60,
          subject.logger,
          { publisher: subject.redis, everyMs: 100, deadlineMs: 100 },
        );
        try {
          await eventually(
            async () => (await cache.findById(userId)) !== null && cache.holds(userId),
            5_000,
            20,
          );

          // Redis keeps sending; nothing reaches the subscriber, and its connection stays open.
          proxy.swallowReplies = true;
          await changeAccount(subject.services, userId, { type: 'SetUserRoles', data: { roles: ['Admin'] } });

          await eventually(() => !cache.holds(userId), 2_000, 10);
          expect((await cache.findById(userId))?.roles).toEqual(['Admin']);
          expect(cache.holds(userId)).toBe(false);

          // Heard again: it keeps accounts again.
          proxy.swallowReplies = false;
          await eventually(
            async () => (await cache.findById(userId)) !== null && cache.holds(userId),
            5_000,
            20,
          );
        } finally {
          await cache.close();
          await proxy.close();
        }
      },
    );

    it('When an account changes while a read of it is under way, then what that read found is not kept: the next request sees the change', async () => {
      const { userId } = await newAccount('read-during-change');
      let release!: () => void;
      const released = new Promise<void>((resolve) => (release = resolve));
      let readStarted!: () => void;
      const started = new Promise<void>((resolve) => (readStarted = resolve));
      let gated = true;
      // The real AccountService, holding its answer back until the change is announced.
      const source = {
        findById: async (id: string) => {
          const account = await subject.services.accounts.findById(id);
          if (gated) {
            readStarted();
            await released;
          }
          return account;
        },
      };
      const subscriber = duplicateConnection(subject.redis, subject.logger, 'test-account-cache');
      const cache = await AccountCache.start(source, subscriber, subject.services.keys, 60, subject.logger);
      try {
        const announced = new Promise<void>((resolve) =>
          // Registered after the cache's own listener, so the cache has handled the message first.
          subscriber.on('message', (_channel: string, id: string) => {
            if (id === userId) resolve();
          }),
        );
        const underWay = cache.findById(userId);
        await started;
        await changeAccount(subject.services, userId, { type: 'SetUserRoles', data: { roles: ['Admin'] } });
        await announced;
        gated = false;
        release();

        // The read that was under way answers what it read; it must not be remembered.
        expect((await underWay)?.roles).toEqual(['Member']);
        expect(cache.holds(userId)).toBe(false);
        expect((await cache.findById(userId))?.roles).toEqual(['Admin']);
        expect(cache.holds(userId)).toBe(true);
      } finally {
        await cache.close();
      }
    });
  });
});
