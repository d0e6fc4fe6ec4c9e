import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';

import request from 'supertest';

import { type LocalRedisCluster, startLocalRedisCluster } from '../../../scripts/lib/redis-cluster';
import { type LocalRedis, startLocalRedis } from '../../../scripts/lib/redis-server';
import { createTestApp, onTestCluster, type TestApp } from '../../helpers/app-fixture';
import { eventually } from '../../helpers/processes';
import { passwordGrantToken } from '../../helpers/tokens';

/** A Redis of this test's own, of the kind the run uses (one server, or a cluster), to stop and restart. */
interface StoppableRedis {
  /** The service's environment pointing at it. */
  readonly env: Record<string, string>;
  stop(): Promise<void>;
  /** Starts it again on the same ports (a cluster with its saved cluster state). */
  restart(): Promise<void>;
  /** Stops it for good and removes what it kept on disk. */
  dispose(): Promise<void>;
}

async function ownServer(): Promise<StoppableRedis> {
  let server: LocalRedis = await startLocalRedis();
  const port = server.port;
  return {
    env: { REDIS_URL: server.url, REDIS_CLUSTER_NODES: '' },
    stop: () => server.stop(),
    async restart() {
      server = await startLocalRedis({ port });
    },
    dispose: () => server.stop(),
  };
}

async function ownCluster(): Promise<StoppableRedis> {
  const dataDir = await mkdtemp(path.join(tmpdir(), 'fts-readiness-cluster-'));
  let cluster: LocalRedisCluster = await startLocalRedisCluster({ dataDir });
  const nodes = cluster.nodes;
  return {
    env: { REDIS_CLUSTER_NODES: cluster.nodeList, REDIS_URL: '' },
    stop: () => cluster.stop(),
    async restart() {
      cluster = await startLocalRedisCluster({ dataDir, nodes });
    },
    async dispose() {
      await cluster.stop();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

describe('Health and readiness while Redis comes and goes', () => {
  // A Redis of this test's own: stopping the shared one would break tests running beside it. On a
  // cluster run it is a cluster too, so the cluster client's own "unavailable" errors are covered.
  let redis: StoppableRedis;
  let subject: TestApp;
  let bearer: string;

  beforeAll(async () => {
    redis = onTestCluster() ? await ownCluster() : await ownServer();
    subject = await createTestApp({ ...redis.env, JWT_SECRET: 'readiness-test-secret-of-at-least-32-chars' });
    await eventually(async () => (await request(subject.app).get('/readyz')).status === 200);
    await subject.createUser({ email: 'reader@example.com', password: 'reader password' });
    bearer = `Bearer ${await passwordGrantToken(subject.app, 'reader@example.com', 'reader password')}`;
  });
  afterAll(async () => {
    await subject.close();
    await redis.dispose();
  });

  it('When Redis stops, then /readyz, a sign-in and a query answer a 503 problem (not a 500), /healthz stays 200, and all recover when Redis returns', async () => {
    expect((await request(subject.app).get('/readyz')).body).toEqual({ status: 'ready' });

    await redis.stop();

    const started = Date.now();
    const down = await request(subject.app).get('/readyz');
    expect(Date.now() - started).toBeLessThan(2_500);
    expect(down.status).toBe(503);
    expect(down.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(down.headers['retry-after']).toBe('1');
    expect(down.body).toMatchObject({
      status: 503,
      title: 'Service Unavailable',
      traceId: down.headers['x-request-id'],
    });
    expect((await request(subject.app).get('/healthz')).status).toBe(200);
    // A sign-in's first Redis call is the throttle's, which has its own "not ready" error.
    const signIn = await request(subject.app)
      .post('/api/readmodel')
      .set('Authorization', `Basic ${Buffer.from('nobody@example.com:some-password').toString('base64')}`)
      .send({ query: { queryType: 'CurrentUser' } });
    expect({ status: signIn.status, retryAfter: signIn.headers['retry-after'] }).toEqual({
      status: 503,
      retryAfter: '1',
    });
    // Once the client has noticed, its errors change (a cluster client's: "Cluster isn't ready");
    // a query reading Redis still gets a 503, not a 500.
    await eventually(() => Promise.resolve(subject.redis.status !== 'ready'), 5_000, 20);
    const query = await request(subject.app)
      .post('/api/readmodel')
      .set('Authorization', bearer)
      .send({ query: { queryType: 'GetFantasyTeam', id: randomUUID() } });
    expect({ status: query.status, retryAfter: query.headers['retry-after'] }).toEqual({
      status: 503,
      retryAfter: '1',
    });

    await redis.restart();
    await eventually(async () => (await request(subject.app).get('/readyz')).status === 200, 10_000);
  });

  it('When Redis stops, then authenticated requests (Basic and Bearer) get the 503 problem, not a 500, and are answered normally after', async () => {
    await subject.createUser({ email: 'outage@example.com', password: 'outage-password-1' });
    const basic = `Basic ${Buffer.from('outage@example.com:outage-password-1').toString('base64')}`;
    const token = (
      await request(subject.app)
        .post('/api/auth/token')
        .send({ grant_type: 'password', username: 'outage@example.com', password: 'outage-password-1' })
    ).body as { access_token: string };
    const currentUser = (authorization: string) =>
      request(subject.app)
        .post('/api/readmodel')
        .set('Authorization', authorization)
        .send({ query: { queryType: 'CurrentUser' } });
    // Both schemes once while Redis is up: the account is cached and a rate-limit lease is held,
    // so what refuses them below is the outage itself, not a cache miss.
    expect((await currentUser(basic)).status).toBe(200);
    expect((await currentUser(`Bearer ${token.access_token}`)).status).toBe(200);

    await redis.stop();
    // A single server's client sees its socket close at once; an idle cluster client stays 'ready'
    // until a command fails (ioredis ends a cluster only when every node connection has). Until
    // then nothing can have changed in Redis, so answering from the caches is still right; once the
    // client knows, they must not be trusted. A query that reads Redis makes it know.
    const reading = await request(subject.app)
      .post('/api/readmodel')
      .set('Authorization', `Bearer ${token.access_token}`)
      .send({ query: { queryType: 'GetFantasyTeam', id: randomUUID() } });
    expect(reading.status).toBe(503);
    await eventually(() => Promise.resolve(subject.redis.status !== 'ready'), 5_000, 20);
    for (const authorization of [basic, `Bearer ${token.access_token}`]) {
      const down = await currentUser(authorization);
      expect(down.status).toBe(503);
      expect(down.headers['retry-after']).toBe('1');
    }

    // A private server keeps nothing on disk (the account is gone once it returns: 401), a cluster
    // restarts from its saved state (200): either way a 4xx/2xx answer shows the path reconnected.
    await redis.restart();
    await eventually(async () => [200, 401].includes((await currentUser(basic)).status), 10_000);
  });
});
