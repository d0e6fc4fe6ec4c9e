import { randomBytes, randomUUID } from 'node:crypto';

import { type LocalRedisCluster, startLocalRedisCluster } from '../../../scripts/lib/redis-cluster';
import { type LocalRedis, startLocalRedis } from '../../../scripts/lib/redis-server';
import { uniquePrefix } from '../../helpers/app-fixture';
import { basicAuth, exchange } from '../../helpers/http-client';
import { logLines } from '../../helpers/import-workers';
import {
  eventually,
  killAll,
  type ServiceProcess,
  startIngressProcess,
  startServiceProcess,
} from '../../helpers/processes';

/**
 * The packaged deployment's Redis wants a password (requirepass). These tests run the service's
 * real processes against private redis-servers that want one, never the shared test Redis.
 */
describe('Redis with a password', () => {
  // Characters a URL must escape, and a space: the password reaches Redis as it is, or not at all.
  const password = `pw/${randomBytes(12).toString('base64url')}+ &:@x`;
  const adminEmail = 'redis-password-admin@example.com';
  const adminPassword = 'redis-password-admin-password';
  let redis: LocalRedis;
  const started: ServiceProcess[] = [];

  const urlWithPassword = () => redis.url.replace('redis://', `redis://:${encodeURIComponent(password)}@`);
  const baseEnv = () => ({
    REDIS_CLUSTER_NODES: '',
    REDIS_KEY_PREFIX: uniquePrefix(),
    ADMIN_EMAIL: adminEmail,
    ADMIN_PASSWORD: adminPassword,
    REDIS_PASSWORD: '',
  });
  const track = (service: ServiceProcess) => {
    started.push(service);
    return service;
  };
  /** Everything a process printed must not hold the password, raw or URL-encoded. */
  const expectNoPasswordIn = (service: ServiceProcess) => {
    const output = service.stdout() + service.stderr();
    expect(output).not.toContain(password);
    expect(output).not.toContain(encodeURIComponent(password));
  };

  beforeAll(async () => {
    redis = await startLocalRedis({ password });
  }, 30_000);
  afterEach(async () => {
    await killAll(...started.splice(0));
  });
  afterAll(async () => {
    await redis.stop();
  });

  it('When REDIS_URL carries the password, then the ingress starts, answers ready, and logs the target without it', async () => {
    const ingress = await startIngressProcess({ ...baseEnv(), REDIS_URL: urlWithPassword() });
    track(ingress.process);

    const ready = await exchange(ingress.baseUrl, 'GET', '/readyz');
    expect(ready).toMatchObject({ ok: true, status: 200 });
    const [connected] = logLines(ingress.process.stdout(), 'redis connection ready');
    expect(connected).toMatchObject({ connection: 'request', target: `redis://***@127.0.0.1:${redis.port}` });
    expectNoPasswordIn(ingress.process);
  }, 60_000);

  it('When REDIS_PASSWORD carries it, then the ingress and a worker start, and a queued import runs on the worker', async () => {
    const env = { ...baseEnv(), REDIS_URL: redis.url, REDIS_PASSWORD: password };
    const ingress = await startIngressProcess(env);
    track(ingress.process);
    const worker = track(startServiceProcess('workers/main.ts', env));
    await worker.waitForOutput('worker ready', 30_000);

    // Normal priority always goes through the queue: BullMQ's own connections need the password too.
    const authorization = basicAuth(adminEmail, adminPassword);
    const submitted = await exchange(ingress.baseUrl, 'POST', '/api/import', {
      authorization,
      body: {
        requestId: randomUUID(),
        importerType: 'UserSeeding',
        priority: 'Normal',
        importData: {
          enabled: true,
          skipIfUsersExist: false,
          users: [
            {
              email: `seeded-${randomUUID().slice(0, 8)}@example.com`,
              userName: 'seeded',
              userType: 'Human',
              roles: ['Member'],
            },
          ],
        },
      },
    });
    expect(submitted).toMatchObject({ ok: true, status: 200, body: { status: 'Pending' } });
    const { importJobId } = (submitted as { body: { importJobId: string } }).body;
    let status: unknown;
    await eventually(async () => {
      const result = await exchange(ingress.baseUrl, 'POST', '/api/readmodel', {
        authorization,
        body: { query: { queryType: 'GetImportJobResult', importJobId } },
      });
      status = (result as { body?: { results?: { status: string }[] } }).body?.results?.[0]?.status;
      return status !== 'Pending';
    }, 30_000);
    expect(status).toBe('Completed');

    for (const service of [ingress.process, worker]) {
      const targets = logLines(service.stdout(), 'redis connection ready').map((line) => line.target);
      expect(targets.length).toBeGreaterThan(0);
      expect(new Set(targets)).toEqual(new Set([`redis://127.0.0.1:${redis.port}`]));
      expectNoPasswordIn(service);
    }
  }, 90_000);

  it.each([
    ['ingress/main.ts', 'ingress'],
    ['workers/main.ts', 'worker'],
  ])(
    'When no password is given, then %s exits 78 with one line saying Redis refused the credentials',
    async (entry, role) => {
      const service = track(startServiceProcess(entry, { ...baseEnv(), REDIS_URL: redis.url, PORT: '0' }));
      expect(await service.exited).toBe(78);
      expect(service.stderr()).toBe(
        `[${role}] failed to start: Redis refused the credentials (NOAUTH Authentication required.): set REDIS_PASSWORD, or the password in REDIS_URL (redis://:<password>@host:6379)\n`,
      );
    },
    60_000,
  );

  it('When the password is wrong, then the ingress exits 78 saying so, and prints neither password', async () => {
    const wrong = `wrong-${randomBytes(8).toString('hex')}`;
    const service = track(
      startServiceProcess('ingress/main.ts', {
        ...baseEnv(),
        REDIS_URL: redis.url,
        REDIS_PASSWORD: wrong,
        PORT: '0',
      }),
    );
    expect(await service.exited).toBe(78);
    expect(service.stderr()).toMatch(
      /^\[ingress\] failed to start: Redis refused the credentials \(WRONGPASS invalid username-password pair or user is disabled\.\)/,
    );
    expect(service.stdout() + service.stderr()).not.toContain(wrong);
    expectNoPasswordIn(service);
  }, 60_000);

  describe('on a Redis Cluster', () => {
    let cluster: LocalRedisCluster;
    beforeAll(async () => {
      cluster = await startLocalRedisCluster({ password });
    }, 60_000);
    afterAll(async () => {
      await cluster?.stop();
    });

    it('When every node wants the password, then REDIS_PASSWORD reaches each; without it the ingress exits 78', async () => {
      const env = { ...baseEnv(), REDIS_URL: '', REDIS_CLUSTER_NODES: cluster.nodeList };
      const ingress = await startIngressProcess({ ...env, REDIS_PASSWORD: password });
      track(ingress.process);
      expect(await exchange(ingress.baseUrl, 'GET', '/readyz')).toMatchObject({ ok: true, status: 200 });
      // Signing in writes to the account's slot and reads others: the nodes the slot map names too.
      const token = await exchange(ingress.baseUrl, 'POST', '/api/auth/token', {
        body: { grant_type: 'password', username: adminEmail, password: adminPassword },
      });
      expect(token).toMatchObject({ ok: true, status: 200 });
      const [connected] = logLines(ingress.process.stdout(), 'redis connection ready');
      expect(connected).toMatchObject({ mode: 'cluster', target: cluster.nodeList });
      expectNoPasswordIn(ingress.process);

      const refused = track(startServiceProcess('ingress/main.ts', { ...env, PORT: '0' }));
      expect(await refused.exited).toBe(78);
      expect(refused.stderr()).toMatch(
        /^\[ingress\] failed to start: Redis refused the credentials \(NOAUTH Authentication required\.\)/,
      );
    }, 90_000);
  });
});
