/**
 * User ids give no e-mail back (issue 38 item 3, ADR 0035): a new account's id is keyed under a
 * secret the service generates on its first start and keeps in Redis, not the public UUIDv5 of its
 * e-mail; every process and restart uses that one key, and no log line holds it. Accounts written
 * before (id = UUIDv5) keep their ids and everything that works on them. Over real HTTP.
 */
import { randomUUID } from 'node:crypto';

import request from 'supertest';

import { keyedUserId, USER_ID_KEY_BYTES, USER_ID_KEY_MESSAGES } from '../../../shared/accounts/user-ids';
import { loadConfig } from '../../../shared/config';
import { createLogger } from '../../../shared/logger';
import { closeConnections, createRedisConnection, type RedisClient } from '../../../shared/redis/connections';
import { createKeys } from '../../../shared/redis/keys';
import { legacyUserIdForEmail } from '../../../shared/user/user-id';
import { createTestApp, type TestApp, testRedisEnv, uniquePrefix } from '../../helpers/app-fixture';
import { basicAuth, bearerToken, exchange } from '../../helpers/http-client';
import { InProcessImportWorker } from '../../helpers/in-process-import-worker';
import { createAccountAsBefore0035 } from '../../helpers/pre-0035-ids';
import {
  eventually,
  type IngressProcess,
  killAll,
  type ServiceProcess,
  startIngressProcess,
  startServiceProcess,
} from '../../helpers/processes';
import { passwordGrantToken } from '../../helpers/tokens';

const JWT_SECRET = 'user-ids-test-jwt-secret-of-at-least-32-chars';
const ADMIN = { email: 'ids-admin@example.com', password: 'ids-admin-password' };

const seedRow = (email: string, password: string) => ({
  email,
  userType: 'Human',
  roles: ['Member'],
  password,
});

/** The environment of a service started for the first time: a fresh prefix, so no user id key yet. */
const firstStartEnv = () => ({
  ...testRedisEnv(),
  REDIS_KEY_PREFIX: uniquePrefix(),
  JWT_SECRET,
  ADMIN_EMAIL: ADMIN.email,
  ADMIN_PASSWORD: ADMIN.password,
});

describe('User ids on a service started for the first time (ingress and worker processes)', () => {
  const logger = createLogger({ level: 'error', processRole: 'test', silent: true });
  const env = firstStartEnv();
  const keyName = createKeys(env.REDIS_KEY_PREFIX).userIdKey();
  let redis: RedisClient;
  let ingress: IngressProcess | undefined;
  let worker: ServiceProcess | undefined;
  const logsSoFar: string[] = [];

  beforeAll(async () => {
    redis = createRedisConnection(loadConfig(env).redis, 'request', logger);
    ingress = await startIngressProcess(env);
    worker = startServiceProcess('workers/main.ts', env);
    await worker.waitForOutput('worker ready', 30_000);
  }, 90_000);
  afterAll(async () => {
    await killAll(ingress?.process, worker);
    await closeConnections(redis);
    logger.close();
  });

  const admin = basicAuth(ADMIN.email, ADMIN.password);
  const readmodel = async (query: object, authorization = admin) => {
    const answer = await exchange(ingress!.baseUrl, 'POST', '/api/readmodel', {
      authorization,
      body: { query },
    });
    if (!answer.ok) throw new Error(answer.error);
    return answer;
  };
  const idOf = async (email: string) => {
    const answer = await readmodel({ queryType: 'GetUser', email });
    expect(answer.status).toBe(200);
    return (answer.body as { results: { id: string }[] }).results[0]!.id;
  };
  /** A UserSeeding import (High runs in the ingress, Normal in the worker), to its end. */
  async function seed(priority: 'High' | 'Normal', users: object[]): Promise<void> {
    const answer = await exchange(ingress!.baseUrl, 'POST', '/api/import', {
      authorization: admin,
      body: { requestId: randomUUID(), importerType: 'UserSeeding', priority, importData: { users } },
    });
    expect(answer.ok && answer.status).toBe(200);
    const { importJobId } = (answer.ok ? answer.body : {}) as { importJobId: string };
    let status = '';
    await eventually(async () => {
      const result = await readmodel({ queryType: 'GetImportJobResult', importJobId });
      status = (result.body as { results?: { status: string }[] }).results?.[0]?.status ?? '';
      return status !== '' && status !== 'Pending' && status !== 'Processing';
    }, 60_000);
    expect(status).toBe('Completed');
  }
  const storedKey = async () => Buffer.from((await redis.get(keyName)) ?? '', 'base64url');

  it('When the service starts for the first time, then it generates one user id key, kept in Redis, and new accounts made by the ingress and by the worker are keyed under it, not the UUIDv5 of their e-mail', async () => {
    const key = await storedKey();
    expect(key).toHaveLength(USER_ID_KEY_BYTES);

    const inline = `Inline.${randomUUID().slice(0, 8)}@Example.com`;
    const queued = `queued.${randomUUID().slice(0, 8)}@example.com`;
    await seed('High', [seedRow(inline, 'inline-password')]);
    await seed('Normal', [seedRow(queued, 'queued-password')]);

    for (const email of [ADMIN.email, inline, queued]) {
      const id = await idOf(email);
      expect(id).not.toBe(legacyUserIdForEmail(email));
      expect(id).toBe(keyedUserId(key, email));
      // Without the key, the id is nothing a guess can be checked against.
      expect(id).not.toBe(keyedUserId(Buffer.alloc(USER_ID_KEY_BYTES), email));
    }
    expect(await storedKey()).toEqual(key);
    logsSoFar.push(ingress!.process.stdout(), ingress!.process.stderr(), worker!.stdout(), worker!.stderr());
  });

  it('When the ingress restarts, then the key is the same, accounts sign in and keep their ids, and no log line of any process held the key', async () => {
    const key = await storedKey();
    const email = `restart.${randomUUID().slice(0, 8)}@example.com`;
    await seed('Normal', [seedRow(email, 'restart-password')]);
    const before = await idOf(email);

    await killAll(ingress?.process);
    logsSoFar.push(ingress!.process.stdout(), ingress!.process.stderr());
    ingress = await startIngressProcess(env);

    expect(await storedKey()).toEqual(key);
    expect(await idOf(email)).toBe(before);
    const token = await bearerToken(ingress.baseUrl, email, 'restart-password');
    const me = await readmodel({ queryType: 'CurrentUser' }, token);
    expect(me.status).toBe(200);

    logsSoFar.push(ingress.process.stdout(), ingress.process.stderr(), worker!.stdout(), worker!.stderr());
    const logs = logsSoFar.join('\n');
    expect(logs.length).toBeGreaterThan(0);
    for (const form of [key.toString('base64url'), key.toString('base64'), key.toString('hex')]) {
      expect(logs).not.toContain(form);
    }
  }, 90_000);
});

describe('Accounts written before ADR 0035 (id = UUIDv5 of the e-mail), after the upgrade', () => {
  let subject: TestApp;
  let worker: InProcessImportWorker;

  beforeAll(async () => {
    subject = await createTestApp({ JWT_SECRET });
    await createAccountAsBefore0035(subject.services, { ...ADMIN, roles: ['Admin'] });
    worker = new InProcessImportWorker(subject);
    worker.start();
  });
  afterAll(async () => {
    await worker.close();
    await subject.services.importQueue.close();
    await subject.close();
  });

  const admin = basicAuth(ADMIN.email, ADMIN.password);
  const readmodel = (query: object, authorization = admin) =>
    request(subject.app).post('/api/readmodel').set('Authorization', authorization).send({ query });
  const command = async (commandType: string, body: object) =>
    request(subject.app)
      .post('/api/command')
      .set('Authorization', `Bearer ${await passwordGrantToken(subject.app, ADMIN.email, ADMIN.password)}`)
      .send({ commandType, command: body, requestId: randomUUID() });
  const tokenStatus = async (email: string, password: string) =>
    (
      await request(subject.app)
        .post('/api/auth/token')
        .send({ grant_type: 'password', username: email, password })
    ).status;
  /**
   * A UserSeeding import, inline or queued (the in-process worker runs it), to its final record.
   * Racing imports of one e-mail wait on its lock; on a busy machine one may be answered 503 with
   * Retry-After, and is sent again with its requestId, as the guide tells a client to.
   */
  async function seed(users: object[]) {
    const body = {
      requestId: randomUUID(),
      importerType: 'UserSeeding',
      priority: 'High',
      importData: { users },
    };
    const submit = () => request(subject.app).post('/api/import').set('Authorization', admin).send(body);
    let res = await submit();
    for (const until = Date.now() + 30_000; res.status === 503 && Date.now() < until; res = await submit()) {
      expect(res.headers['retry-after']).toBeDefined();
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(res.status).toBe(200);
    const importJobId = res.body.importJobId as string;
    await eventually(async () => {
      const status = (await subject.services.importResults.get(importJobId))?.status;
      return status !== undefined && status !== 'Pending';
    }, 30_000);
    return (await subject.services.importResults.get(importJobId))!;
  }
  const idOf = async (email: string) => {
    const res = await readmodel({ queryType: 'GetUser', email });
    return res.status === 200 ? (res.body.results[0].id as string) : null;
  };

  it('When an account written before the upgrade signs in, is read, takes commands, is erased and its e-mail registered again, then all of it works on its old id', async () => {
    const email = `Old.Timer-${randomUUID().slice(0, 8)}@Example.com`;
    const oldId = await createAccountAsBefore0035(subject.services, { email, password: 'old-password' });
    expect(oldId).toBe(legacyUserIdForEmail(email));

    // Sign-in, CurrentUser and GetUser by e-mail find it under its old id.
    expect(await tokenStatus(email, 'old-password')).toBe(200);
    const me = await readmodel({ queryType: 'CurrentUser' }, basicAuth(email, 'old-password'));
    expect(me.status).toBe(200);
    expect(await idOf(email.toUpperCase())).toBe(oldId);
    expect(await idOf(ADMIN.email)).toBe(legacyUserIdForEmail(ADMIN.email));

    // Its e-mail is still taken: registering it again is refused, no second account appears.
    const again = await seed([seedRow(email, 'second-password')]);
    expect(again.status).toBe('Failed');
    expect(
      await subject.services.store.streamLength(
        'user',
        await subject.services.accounts.userIds.newIdFor(email),
      ),
    ).toBe(0);

    // A command on its old id.
    expect(
      (await command('SetUserPassword', { aggregateRootId: oldId, newPassword: 'new-password-1' })).status,
    ).toBe(200);
    expect(await tokenStatus(email, 'old-password')).toBe(400);
    expect(await tokenStatus(email, 'new-password-1')).toBe(200);

    // Erasure, then its e-mail registered again: the new account continues the old id (ADR 0014).
    expect((await command('DeleteUser', { aggregateRootId: oldId })).status).toBe(200);
    expect(await tokenStatus(email, 'new-password-1')).toBe(400);
    expect(await idOf(email)).toBeNull();
    const reborn = await seed([seedRow(email, 'reborn-password')]);
    expect(reborn.status).toBe('Completed');
    expect(await idOf(email)).toBe(oldId);
    expect(await tokenStatus(email, 'reborn-password')).toBe(200);
  });

  it('When a new account is registered after the upgrade, then its id is keyed, not the UUIDv5 of its e-mail', async () => {
    const email = `newcomer-${randomUUID().slice(0, 8)}@example.com`;
    expect((await seed([seedRow(email, 'newcomer-password')])).status).toBe('Completed');
    const id = await idOf(email);
    expect(id).not.toBeNull();
    expect(id).not.toBe(legacyUserIdForEmail(email));
    expect(id).toBe(await subject.services.accounts.userIds.newIdFor(email));
    expect(await tokenStatus(email, 'newcomer-password')).toBe(200);
  });

  it.each([
    ['a new e-mail', false],
    ['the e-mail of an erased account written before the upgrade', true],
  ])(
    'When %s is registered by several imports at once, then exactly one account results',
    async (_, legacy) => {
      const email = `racer-${randomUUID().slice(0, 8)}@example.com`;
      if (legacy) {
        const oldId = await createAccountAsBefore0035(subject.services, { email, password: 'racer-old' });
        expect((await command('DeleteUser', { aggregateRootId: oldId })).status).toBe(200);
      }
      const results = await Promise.all(
        Array.from({ length: 6 }, (__, i) =>
          seed([seedRow(i % 2 ? email.toUpperCase() : email, `racer-password-${i}`)]),
        ),
      );
      expect(results.filter((result) => result.status === 'Completed')).toHaveLength(1);
      const id = await idOf(email);
      expect(id).toBe(
        legacy ? legacyUserIdForEmail(email) : await subject.services.accounts.userIds.newIdFor(email),
      );
      const ids = [legacyUserIdForEmail(email), await subject.services.accounts.userIds.newIdFor(email)];
      const created = await Promise.all(
        ids.map(async (userId) =>
          (await subject.services.accounts.readEvents(userId)).filter(
            (event) => event.eventType === 'UserCreatedEvent',
          ),
        ),
      );
      expect(created.flat()).toHaveLength(legacy ? 2 : 1);
    },
  );
});

describe('A store that lost its user id key, or holds another one (ADR 0046)', () => {
  const logger = createLogger({ level: 'error', processRole: 'test', silent: true });
  const env = firstStartEnv();
  const keys = createKeys(env.REDIS_KEY_PREFIX);
  let redis: RedisClient;
  let key: string;

  beforeAll(async () => {
    redis = createRedisConnection(loadConfig(env).redis, 'request', logger);
    // The first start makes the key, keys the administrator under it, and writes the key's fingerprint.
    const first = await startIngressProcess(env);
    await killAll(first.process);
    key = (await redis.get(keys.userIdKey()))!;
    expect(await redis.get(keys.userIdKeyFingerprint())).toMatch(/^[\w-]{43}$/);
  }, 60_000);
  afterAll(async () => {
    await closeConnections(redis);
    logger.close();
  });

  /** Starts `entry` and resolves with its exit code and what it wrote to stderr. */
  const refusedStart = async (entry: 'ingress/main.ts' | 'workers/main.ts') => {
    const started = startServiceProcess(entry, { ...env, PORT: '0', HOST: '127.0.0.1' });
    const code = await started.exited;
    return { code, stderr: started.stderr() };
  };

  it.each(['ingress/main.ts', 'workers/main.ts'] as const)(
    'When the key is deleted, then %s refuses to start with one line saying to restore it, and makes no new key',
    async (entry) => {
      await redis.del(keys.userIdKey());
      const { code, stderr } = await refusedStart(entry);
      expect(code).toBe(78);
      expect(stderr.trim().split('\n')).toEqual([
        expect.stringContaining(USER_ID_KEY_MESSAGES.lost(keys.userIdKey())),
      ]);
      expect(await redis.get(keys.userIdKey())).toBeNull();
      await redis.set(keys.userIdKey(), key);
    },
    60_000,
  );

  it('When the key is replaced by another, then the ingress refuses to start saying so; with its own key back, it starts and the administrator signs in', async () => {
    await redis.set(keys.userIdKey(), Buffer.alloc(USER_ID_KEY_BYTES, 7).toString('base64url'));
    const { code, stderr } = await refusedStart('ingress/main.ts');
    expect(code).toBe(78);
    expect(stderr).toContain(USER_ID_KEY_MESSAGES.replaced(keys.userIdKey()));

    await redis.set(keys.userIdKey(), key);
    const again = await startIngressProcess(env);
    try {
      expect(await bearerToken(again.baseUrl, ADMIN.email, ADMIN.password)).toMatch(/^Bearer /);
    } finally {
      await killAll(again.process);
    }
  }, 60_000);

  it('When a store keyed before fingerprints existed starts, then its key is kept and its fingerprint written', async () => {
    await redis.del(keys.userIdKeyFingerprint());
    const again = await startIngressProcess(env);
    await killAll(again.process);
    expect(await redis.get(keys.userIdKey())).toBe(key);
    expect(await redis.get(keys.userIdKeyFingerprint())).toMatch(/^[\w-]{43}$/);
  }, 60_000);
});
