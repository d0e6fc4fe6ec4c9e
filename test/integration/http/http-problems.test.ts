import request from 'supertest';

import { DOCS_PATH } from '../../../ingress/openapi/openapi.contract';
import { jsonBody } from '../../../shared/http/request-body';
import { createTestApp, type TestApp } from '../../helpers/app-fixture';

const PROBLEM_TYPE = /^application\/problem\+json/;

describe('HTTP problems shared by every endpoint', () => {
  let subject: TestApp;

  beforeAll(async () => {
    subject = await createTestApp(
      { BODY_LIMIT: '1kb', IMPORT_BODY_LIMIT: '4kb' },
      {
        extraRoutes: (routes) => {
          routes.add('post', '/test/echo', jsonBody(1024), (req, res) => {
            res.json({ received: req.body as unknown });
          });
          routes.add('get', '/test/boom', () => {
            throw new Error('secret internal detail at /srv/app.ts:42');
          });
        },
      },
    );
  });
  afterAll(() => subject.close());

  it('When a JSON answer is given (a success or a problem), then it carries the API security headers and is not cached', async () => {
    const answers = [
      await request(subject.app).get('/healthz'),
      await request(subject.app).get('/nowhere'),
      await request(subject.app).get('/api/command'),
      await request(subject.app).post('/api/readmodel').send({}),
    ];
    for (const res of answers) {
      expect(res.headers).toMatchObject({
        'content-security-policy': "default-src 'none';frame-ancestors 'none'",
        'x-content-type-options': 'nosniff',
        'x-frame-options': 'DENY',
        'referrer-policy': 'no-referrer',
        'strict-transport-security': expect.stringContaining('max-age='),
        'cache-control': 'no-store',
      });
      // helmet's page-rendering switches have no meaning on JSON, so they are not sent.
      expect(res.headers['cross-origin-opener-policy']).toBeUndefined();
      expect(res.headers['x-powered-by']).toBeUndefined();
    }
  });

  it('When an HTML page is served (the API docs), then it carries helmet’s page defaults', async () => {
    const res = await request(subject.app).get(DOCS_PATH);

    expect(res.status).toBe(200);
    expect(res.headers).toMatchObject({
      'x-content-type-options': 'nosniff',
      'x-frame-options': 'SAMEORIGIN',
      'referrer-policy': 'no-referrer',
      'cross-origin-opener-policy': 'same-origin',
      'strict-transport-security': expect.stringContaining('max-age='),
    });
    expect(res.headers['content-security-policy']).toContain("default-src 'self'");
  });

  it('When the body is malformed JSON, then the answer is the 400 validation problem', async () => {
    const res = await request(subject.app)
      .post('/test/echo')
      .set('Content-Type', 'application/json')
      .send('{"query": ');
    expect(res.status).toBe(400);
    expect(res.headers['content-type']).toMatch(PROBLEM_TYPE);
    expect(res.body).toEqual({
      type: 'https://tools.ietf.org/html/rfc7231#section-6.5.1',
      title: 'One or more validation errors occurred.',
      status: 400,
      errors: { $: ['The request body is not valid JSON.'] },
      traceId: res.headers['x-request-id'],
    });
  });

  it('When the path is unknown, then the answer is a 404 problem', async () => {
    const res = await request(subject.app).get('/api/nothing-here');
    expect(res.status).toBe(404);
    expect(res.headers['content-type']).toMatch(PROBLEM_TYPE);
    expect(res.body).toMatchObject({ title: 'Not Found', status: 404, traceId: res.headers['x-request-id'] });
  });

  it('When a known path is called with another method, then the answer is a 405 problem with Allow', async () => {
    const res = await request(subject.app).delete('/healthz');
    expect(res.status).toBe(405);
    expect(res.headers.allow).toBe('GET, HEAD');
    expect(res.headers['content-type']).toMatch(PROBLEM_TYPE);
    expect(res.body).toMatchObject({ title: 'Method Not Allowed', status: 405 });
  });

  it('When the body is over BODY_LIMIT, then the answer is a 413 problem', async () => {
    const res = await request(subject.app)
      .post('/test/echo')
      .send({ padding: 'x'.repeat(2048) });
    expect(res.status).toBe(413);
    expect(res.headers['content-type']).toMatch(PROBLEM_TYPE);
    expect(res.body).toMatchObject({ title: 'Payload Too Large', status: 413 });
  });

  it('When an import body is over BODY_LIMIT but under IMPORT_BODY_LIMIT, then it passes the parser; over it, a 413', async () => {
    await subject.createUser({ email: 'limits@example.com', password: 'limits-password-1' });
    const basic = `Basic ${Buffer.from('limits@example.com:limits-password-1').toString('base64')}`;
    const importBody = (size: number) => ({ importerType: 'UserSeeding', padding: 'x'.repeat(size) });
    const within = await request(subject.app)
      .post('/api/import')
      .set('Authorization', basic)
      .send(importBody(2048));
    expect(within.status).toBe(400); // parsed, then refused by validation
    const over = await request(subject.app)
      .post('/api/import')
      .set('Authorization', basic)
      .send(importBody(8192));
    expect(over.status).toBe(413);
    expect(over.body).toMatchObject({ title: 'Payload Too Large', status: 413 });
  });

  it('When the body is under BODY_LIMIT, then the route receives it parsed', async () => {
    const res = await request(subject.app)
      .post('/test/echo')
      .send({ query: { queryType: 'X' } });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ received: { query: { queryType: 'X' } } });
  });

  it('When a route throws, then the answer is the spec 500 problem and leaks nothing', async () => {
    const res = await request(subject.app).get('/test/boom');
    expect(res.status).toBe(500);
    expect(res.headers['content-type']).toMatch(PROBLEM_TYPE);
    expect(res.body).toEqual({
      type: 'https://tools.ietf.org/html/rfc7231#section-6.6.1',
      title: 'An error occurred while processing your request.',
      status: 500,
      traceId: res.headers['x-request-id'],
    });
    expect(res.text).not.toContain('secret internal detail');
    expect(res.text).not.toContain('app.ts');
    // ...but the operator can find it in the log, under the same id.
    const logged = subject.logs.lines.find((line) => line.message === 'unhandled error');
    expect(logged?.requestId).toBe(res.headers['x-request-id']);
    expect(JSON.stringify(logged)).toContain('secret internal detail');
  });
});

describe('Request ids', () => {
  let subject: TestApp;
  beforeAll(async () => {
    subject = await createTestApp();
  });
  afterAll(() => subject.close());

  it('When the caller sends a well-formed X-Request-Id, then it is echoed and logged', async () => {
    const res = await request(subject.app).get('/healthz').set('X-Request-Id', 'caller-id-42');
    expect(res.headers['x-request-id']).toBe('caller-id-42');
    const access = subject.logs.lines.find((line) => line.requestId === 'caller-id-42');
    expect(access).toMatchObject({
      message: 'request finished',
      method: 'GET',
      path: '/healthz',
      status: 200,
    });
    expect(typeof access?.durationMs).toBe('number');
  });

  it('When the caller sends no X-Request-Id, then a new UUID is returned', async () => {
    const res = await request(subject.app).get('/healthz');
    expect(res.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('When the incoming X-Request-Id is malformed, then it is replaced rather than trusted', async () => {
    const res = await request(subject.app).get('/healthz').set('X-Request-Id', 'bad id\twith "quotes"');
    expect(res.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('When a request carries credentials, then no log line contains them', async () => {
    await request(subject.app)
      .post('/healthz')
      .set('Authorization', 'Basic c2VjcmV0LXVzZXI6c2VjcmV0LXBhc3N3b3Jk')
      .send({ password: 'hunter2-hunter2' });
    subject.logger.info('probe', { password: 'hunter2-hunter2', nested: { token: 'tkn-123' } });
    expect(subject.logs.text).not.toContain('c2VjcmV0');
    expect(subject.logs.text).not.toContain('hunter2');
    expect(subject.logs.text).not.toContain('tkn-123');
  });
});
