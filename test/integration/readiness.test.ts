import request from 'supertest';

import { startLocalRedis, type LocalRedis } from '../../scripts/lib/redis-server';
import { createTestApp, type TestApp } from '../helpers/app-fixture';
import { eventually } from '../helpers/processes';

describe('Health and readiness while Redis comes and goes', () => {
  // A Redis of this test's own: stopping the shared one would break tests running beside it.
  let redis: LocalRedis;
  let subject: TestApp;

  beforeAll(async () => {
    redis = await startLocalRedis();
    subject = await createTestApp({ REDIS_URL: redis.url });
    await eventually(async () => (await request(subject.app).get('/readyz')).status === 200);
  });
  afterAll(async () => {
    await subject.close();
    await redis.stop();
  });

  it('When Redis stops, then /readyz answers a fast 503 problem, /healthz stays 200, and both recover when Redis returns', async () => {
    expect((await request(subject.app).get('/readyz')).body).toEqual({ status: 'ready' });

    const port = redis.port;
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

    redis = await startLocalRedis({ port });
    await eventually(async () => (await request(subject.app).get('/readyz')).status === 200, 10_000);
  });
});
