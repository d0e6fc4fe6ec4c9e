import { randomUUID } from 'node:crypto';

import request from 'supertest';

import { METRICS_NOT_SERVED } from '../../../ingress/metrics/public-metrics.routes';
import { freePort } from '../../../scripts/lib/free-port';
import { createTestApp, type TestApp, testRedisEnv, uniquePrefix } from '../../helpers/app-fixture';
import { parseExposition, type Sample, samplesOf, sampleSum } from '../../helpers/metrics';
import { startServiceProcess } from '../../helpers/processes';

const PASSWORD = 'metrics-test-password';
const METRICS_TOKEN = 'metrics-scrape-token-0123456789';
const basic = (email: string) => `Basic ${Buffer.from(`${email}:${PASSWORD}`).toString('base64')}`;

describe('GET /metrics on the ingress', () => {
  let subject: TestApp;
  let memberToken: string;

  const scrape = async (): Promise<Sample[]> => {
    const res = await request(subject.app).get('/metrics').set('Authorization', `Bearer ${METRICS_TOKEN}`);
    expect(res.status).toBe(200);
    return parseExposition(res.text);
  };
  const command = (body: object) =>
    request(subject.app).post('/api/command').set('Authorization', `Bearer ${memberToken}`).send(body);
  const createTeam = async () => {
    const id = randomUUID();
    const res = await command({
      commandType: 'CreateFantasyTeam',
      command: { aggregateRootId: id, name: 'Metrics XI' },
    });
    expect(res.status).toBe(200);
    return id;
  };

  beforeAll(async () => {
    subject = await createTestApp({ METRICS_TOKEN, LOCK_WAIT_MS: '100' });
    await subject.createUser({ email: 'member@example.com', password: PASSWORD });
    await subject.createUser({ email: 'manager@example.com', password: PASSWORD, roles: ['UserManager'] });
    const token = await request(subject.app)
      .post('/api/auth/token')
      .send({ grant_type: 'password', username: 'member@example.com', password: PASSWORD });
    memberToken = token.body.access_token as string;
  });
  afterAll(() => subject.close());

  describe('the token guard', () => {
    it('When no token is sent, then 401 problem with a Bearer challenge and no metrics', async () => {
      const res = await request(subject.app).get('/metrics');
      expect(res.status).toBe(401);
      expect(res.headers['content-type']).toBe('application/problem+json; charset=utf-8');
      expect(res.headers['www-authenticate']).toBe('Bearer realm="metrics"');
      expect(res.body).toMatchObject({
        type: 'https://tools.ietf.org/html/rfc7235#section-3.1',
        title: 'Unauthorized',
        status: 401,
        traceId: res.headers['x-request-id'],
      });
      expect(res.text).not.toContain('fts_');
    });

    it('When a wrong token, an account token or Basic credentials are sent, then 401', async () => {
      for (const authorization of [
        `Bearer ${METRICS_TOKEN}x`,
        `Bearer ${METRICS_TOKEN.slice(0, -1)}`,
        `Bearer ${memberToken}`,
        basic('member@example.com'),
        METRICS_TOKEN,
      ]) {
        const res = await request(subject.app).get('/metrics').set('Authorization', authorization);
        expect(res.status).toBe(401);
      }
    });

    it('When the right token is sent, then 200 in Prometheus text format with the process defaults', async () => {
      const res = await request(subject.app).get('/metrics').set('Authorization', `Bearer ${METRICS_TOKEN}`);
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toBe('text/plain; version=0.0.4; charset=utf-8');
      expect(res.text).toContain('# TYPE fts_http_request_duration_seconds histogram');
      const samples = parseExposition(res.text);
      expect(samplesOf(samples, 'fts_process_cpu_user_seconds_total')).toHaveLength(1);
      expect(samplesOf(samples, 'fts_nodejs_heap_size_used_bytes')).toHaveLength(1);
      expect(sampleSum(samples, 'fts_redis_connection_up', { connection: 'request' })).toBe(1);
    });

    it('When METRICS_TOKEN is not set, then /metrics on the public port answers a 404 problem saying so', async () => {
      const bare = await createTestApp();
      try {
        const res = await request(bare.app).get('/metrics').set('Authorization', `Bearer ${METRICS_TOKEN}`);
        expect(res.status).toBe(404);
        expect(res.body).toMatchObject({ title: 'Not Found', status: 404, detail: METRICS_NOT_SERVED });
      } finally {
        await bare.close();
      }
    });
  });

  describe('after real requests', () => {
    it('When queries are answered, then request durations are counted by route, query type and status; an unknown type is one "unknown" value', async () => {
      const labels = { method: 'POST', route: '/api/readmodel', operation: 'CurrentUser', status: '200' };
      const before = sampleSum(await scrape(), 'fts_http_request_duration_seconds_count', labels);
      for (let i = 0; i < 3; i++) {
        const res = await request(subject.app)
          .post('/api/readmodel')
          .set('Authorization', basic('member@example.com'))
          .send({ query: { queryType: 'CurrentUser' } });
        expect(res.status).toBe(200);
      }
      const madeUp = `NoSuchQuery${randomUUID().slice(0, 8)}`;
      const unknown = await request(subject.app)
        .post('/api/readmodel')
        .set('Authorization', basic('member@example.com'))
        .send({ query: { queryType: madeUp } });
      expect(unknown.status).toBe(400);
      const anonymous = await request(subject.app)
        .post('/api/readmodel')
        .send({ query: { queryType: 'CurrentUser' } });
      expect(anonymous.status).toBe(401);

      const res = await request(subject.app).get('/metrics').set('Authorization', `Bearer ${METRICS_TOKEN}`);
      const samples = parseExposition(res.text);
      expect(sampleSum(samples, 'fts_http_request_duration_seconds_count', labels)).toBe(before + 3);
      expect(sampleSum(samples, 'fts_http_request_duration_seconds_sum', labels)).toBeGreaterThan(0);
      // Nobody read the anonymous caller's body, so it names no query.
      expect(
        sampleSum(samples, 'fts_http_request_duration_seconds_count', {
          ...labels,
          operation: 'unknown',
          status: '401',
        }),
      ).toBeGreaterThanOrEqual(1);
      expect(
        sampleSum(samples, 'fts_http_request_duration_seconds_count', { ...labels, status: '401' }),
      ).toBe(0);
      expect(
        sampleSum(samples, 'fts_http_request_duration_seconds_count', {
          route: '/api/readmodel',
          operation: 'unknown',
          status: '400',
        }),
      ).toBeGreaterThanOrEqual(1);
      expect(res.text).not.toContain(madeUp);
    });

    it('When commands succeed and fail, then outcomes are counted by command type and errorCode, with events appended and lock waits', async () => {
      const before = await scrape();
      const teamId = await createTeam();
      const missingTeam = await command({
        commandType: 'LinkFantasyTeam',
        command: { aggregateRootId: randomUUID(), fantasyTeamExternalId: 1, fantasyUserId: 2 },
      });
      expect(missingTeam.body).toMatchObject({ errorCode: 'COMMAND_VALIDATION_ERROR' });
      const madeUp = `Explode${randomUUID().slice(0, 8)}`;
      const unknown = await command({ commandType: madeUp, command: {} });
      expect(unknown.body).toMatchObject({ errorCode: 'UNKNOWN_COMMAND_TYPE' });
      // Another holder keeps the team's lock past LOCK_WAIT_MS: the command gives up busy.
      await subject.redis.set(
        subject.services.keys.aggregateLock('fantasy-team', teamId),
        'held-by-the-test',
        'PX',
        5_000,
      );
      const busy = await command({
        commandType: 'LinkFantasyTeam',
        command: { aggregateRootId: teamId, fantasyTeamExternalId: 1, fantasyUserId: 2 },
      });
      expect(busy.status).toBe(503);
      expect(busy.body).toMatchObject({ errorCode: 'AGGREGATE_BUSY' });

      const after = await scrape();
      const moved = (name: string, labels: Record<string, string>) =>
        sampleSum(after, name, labels) - sampleSum(before, name, labels);
      expect(moved('fts_commands_total', { command_type: 'CreateFantasyTeam', outcome: 'success' })).toBe(1);
      expect(
        moved('fts_commands_total', { command_type: 'LinkFantasyTeam', outcome: 'COMMAND_VALIDATION_ERROR' }),
      ).toBe(1);
      expect(moved('fts_commands_total', { command_type: 'unknown', outcome: 'UNKNOWN_COMMAND_TYPE' })).toBe(
        1,
      );
      expect(
        moved('fts_commands_total', { command_type: 'LinkFantasyTeam', outcome: 'AGGREGATE_BUSY' }),
      ).toBe(1);
      expect(
        moved('fts_events_appended_total', {
          aggregate_type: 'fantasy-team',
          event_type: 'FantasyTeamCreatedEvent',
        }),
      ).toBe(1);
      expect(
        moved('fts_lock_wait_seconds_count', { aggregate_type: 'fantasy-team', outcome: 'acquired' }),
      ).toBe(2);
      expect(moved('fts_lock_wait_seconds_count', { aggregate_type: 'fantasy-team', outcome: 'busy' })).toBe(
        1,
      );
      // The busy wait lasted at least LOCK_WAIT_MS.
      expect(
        moved('fts_lock_wait_seconds_sum', { aggregate_type: 'fantasy-team', outcome: 'busy' }),
      ).toBeGreaterThanOrEqual(0.1);
      expect(
        moved('fts_http_request_duration_seconds_count', {
          route: '/api/command',
          operation: 'CreateFantasyTeam',
          status: '200',
        }),
      ).toBe(1);
      expect(
        moved('fts_http_request_duration_seconds_count', {
          route: '/api/command',
          operation: 'LinkFantasyTeam',
          status: '503',
        }),
      ).toBe(1);
      expect(samplesOf(after, 'fts_commands_total').map((s) => s.labels.command_type)).not.toContain(madeUp);
    });

    it('When an import runs inline, then its duration, rows and rows per second are recorded as inline', async () => {
      const before = await scrape();
      const tag = randomUUID().slice(0, 8);
      const users = [0, 1, 2].map((i) => ({
        email: `metrics-${tag}-${i}@example.com`,
        userName: `metrics-${tag}-${i}`,
        userType: 'Human',
        roles: ['Member'],
      }));
      const res = await request(subject.app)
        .post('/api/import')
        .set('Authorization', basic('manager@example.com'))
        .send({
          requestId: randomUUID(),
          importerType: 'UserSeeding',
          priority: 'High',
          importData: { enabled: true, skipIfUsersExist: false, users },
        });
      expect(res.body).toMatchObject({ status: 'Completed', processedSynchronously: true });

      const after = await scrape();
      const moved = (name: string, labels: Record<string, string>) =>
        sampleSum(after, name, labels) - sampleSum(before, name, labels);
      const labels = { importer_type: 'UserSeeding', status: 'Completed', mode: 'inline' };
      expect(moved('fts_import_duration_seconds_count', labels)).toBe(1);
      expect(moved('fts_import_duration_seconds_sum', labels)).toBeGreaterThan(0);
      expect(moved('fts_import_rows_total', labels)).toBe(3);
      expect(
        moved('fts_import_rows_per_second_count', { importer_type: 'UserSeeding', mode: 'inline' }),
      ).toBe(1);
      expect(
        moved('fts_events_appended_total', { aggregate_type: 'user', event_type: 'UserCreatedEvent' }),
      ).toBe(3);
      expect(
        moved('fts_http_request_duration_seconds_count', {
          route: '/api/import',
          operation: 'UserSeeding',
          status: '200',
        }),
      ).toBe(1);
    });

    it('When a path matches no route, then it is counted under route "unknown", never its raw path', async () => {
      const path = `/nothing-here-${randomUUID().slice(0, 8)}`;
      expect((await request(subject.app).get(path)).status).toBe(404);
      const res = await request(subject.app).get('/metrics').set('Authorization', `Bearer ${METRICS_TOKEN}`);
      expect(
        sampleSum(parseExposition(res.text), 'fts_http_request_duration_seconds_count', {
          method: 'GET',
          route: 'unknown',
          status: '404',
        }),
      ).toBeGreaterThanOrEqual(1);
      expect(res.text).not.toContain(path);
    });
  });

  describe('import queue depth', () => {
    it('When imports wait in the queue, then they are counted as prioritized by priority', async () => {
      // An app of its own: the imports it queues stay queued (no worker runs here).
      const queued = await createTestApp({ METRICS_TOKEN });
      try {
        await queued.createUser({ email: 'manager@example.com', password: PASSWORD, roles: ['UserManager'] });
        queued.metrics.collectImportQueueDepth(() => queued.services.importQueue.depth());
        const submit = (priority: 'Normal' | 'High') =>
          request(queued.app)
            .post('/api/import')
            .set('Authorization', basic('manager@example.com'))
            .send({
              requestId: randomUUID(),
              importerType: 'UserSeeding',
              priority,
              importData: {
                enabled: true,
                skipIfUsersExist: false,
                users: [
                  { email: `queued-${randomUUID()}@example.com`, userType: 'Human', roles: ['Member'] },
                ],
              },
            });
        expect((await submit('Normal')).body.status).toBe('Pending');
        expect((await submit('Normal')).body.status).toBe('Pending');
        // The queue is busy, so High is queued too, ahead of the Normal ones.
        expect((await submit('High')).body).toMatchObject({
          status: 'Pending',
          processedSynchronously: false,
        });

        const res = await request(queued.app).get('/metrics').set('Authorization', `Bearer ${METRICS_TOKEN}`);
        const samples = parseExposition(res.text);
        expect(
          sampleSum(samples, 'fts_import_queue_jobs', { state: 'prioritized', priority: 'Normal' }),
        ).toBe(2);
        expect(sampleSum(samples, 'fts_import_queue_jobs', { state: 'prioritized', priority: 'High' })).toBe(
          1,
        );
        for (const state of ['waiting', 'active', 'delayed', 'paused', 'completed', 'failed']) {
          expect(samplesOf(samples, 'fts_import_queue_jobs', { state })).toEqual([
            { name: 'fts_import_queue_jobs', labels: { state }, value: 0 },
          ]);
        }
      } finally {
        await queued.close();
      }
    });
  });

  describe('on a METRICS_PORT of its own', () => {
    it('When the ingress process has METRICS_PORT and no token, then /metrics answers there without auth, and not on PORT', async () => {
      const metricsPort = await freePort();
      const ingress = startServiceProcess('ingress/main.ts', {
        PORT: '0',
        HOST: '127.0.0.1',
        METRICS_PORT: String(metricsPort),
        METRICS_HOST: '127.0.0.1',
        ...testRedisEnv(),
        REDIS_KEY_PREFIX: uniquePrefix(),
      });
      try {
        await ingress.waitForOutput('ingress listening');
        const listening = ingress
          .stdout()
          .split('\n')
          .find((line) => line.includes('ingress listening'));
        const { port } = JSON.parse(listening ?? '{}') as { port: number };
        expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(200);
        expect((await fetch(`http://127.0.0.1:${port}/metrics`)).status).toBe(404);

        const res = await fetch(`http://127.0.0.1:${metricsPort}/metrics`);
        expect(res.status).toBe(200);
        const samples = parseExposition(await res.text());
        expect(
          sampleSum(samples, 'fts_http_request_duration_seconds_count', { route: '/healthz', status: '200' }),
        ).toBe(1);
        expect(sampleSum(samples, 'fts_redis_connection_up', { connection: 'request' })).toBe(1);
      } finally {
        ingress.child.kill('SIGTERM');
      }
      expect(await ingress.exited).toBe(0);
    });
  });
});
