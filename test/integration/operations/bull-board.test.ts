import { randomUUID } from 'node:crypto';

import request from 'supertest';

import { createTestApp, type TestApp } from '../../helpers/app-fixture';

const PASSWORD = 'bull-board-test-password';
const basic = (email: string, password = PASSWORD) =>
  `Basic ${Buffer.from(`${email}:${password}`).toString('base64')}`;

describe('GET /admin/queues (Bull Board)', () => {
  let subject: TestApp;

  beforeAll(async () => {
    subject = await createTestApp();
    await subject.createUser({ email: 'member@example.com', password: PASSWORD, roles: ['Member'] });
    await subject.createUser({ email: 'admin@example.com', password: PASSWORD, roles: ['Admin'] });
  });
  afterAll(async () => {
    await subject.services.importQueue.close();
    await subject.close();
  });

  const bearerFor = async (email: string) => {
    const res = await request(subject.app)
      .post('/api/auth/token')
      .send({ grant_type: 'password', username: email, password: PASSWORD });
    expect(res.status).toBe(200);
    return `Bearer ${res.body.access_token as string}`;
  };

  it('When no credentials are sent, then 401 problem with a WWW-Authenticate that offers Basic', async () => {
    const res = await request(subject.app).get('/admin/queues');
    expect(res.status).toBe(401);
    expect(res.headers['content-type']).toContain('application/problem+json');
    expect(res.headers['www-authenticate']).toContain('Basic realm=');
    expect(res.text).not.toContain('bull');
  });

  it('When the password is wrong, then 401', async () => {
    const res = await request(subject.app)
      .get('/admin/queues')
      .set('Authorization', basic('admin@example.com', 'not-the-password'));
    expect(res.status).toBe(401);
  });

  it("When a Member signs in, then 403 problem and the board's API refuses too", async () => {
    const page = await request(subject.app)
      .get('/admin/queues')
      .set('Authorization', basic('member@example.com'));
    expect(page.status).toBe(403);
    expect(page.body).toMatchObject({ status: 403, title: 'Forbidden' });

    const api = await request(subject.app)
      .get('/admin/queues/api/queues')
      .set('Authorization', basic('member@example.com'));
    expect(api.status).toBe(403);
  });

  it('When an Admin signs in by Basic, then 200 HTML with the board', async () => {
    const res = await request(subject.app)
      .get('/admin/queues')
      .set('Authorization', basic('admin@example.com'));
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toContain('text/html');
    expect(res.headers['x-powered-by']).toBeUndefined();
    expect(res.text).toContain('<base href="/admin/queues/" />');
    expect(res.text).toContain('<title>Fantasy team service</title>');

    const script = /src="(static\/js\/main\.[^"]+\.js)"/.exec(res.text)?.[1];
    expect(script).toBeDefined();
    const asset = await request(subject.app)
      .get(`/admin/queues/${script ?? ''}`)
      .set('Authorization', basic('admin@example.com'));
    expect(asset.status).toBe(200);
    expect(asset.headers['content-type']).toContain('javascript');
  });

  it('When an Admin signs in by Bearer, then the API lists the import queue, read-only', async () => {
    const res = await request(subject.app)
      .get('/admin/queues/api/queues')
      .set('Authorization', await bearerFor('admin@example.com'));
    expect(res.status).toBe(200);
    const queues = res.body.queues as { name: string; readOnlyMode: boolean }[];
    expect(queues).toEqual([expect.objectContaining({ name: 'imports', readOnlyMode: true })]);
  });

  it("When a queued job carries seeded users' passwords, then the board shows them redacted", async () => {
    const importJobId = randomUUID();
    await subject.services.importQueue.enqueue({
      importJobId,
      requestId: randomUUID(),
      importerType: 'UserSeeding',
      priority: 'Normal',
      submitterUserId: randomUUID(),
      importData: {
        users: [{ email: 'bot@example.com', userType: 'ServiceAccount', password: 'super-secret-1' }],
      },
    });
    const res = await request(subject.app)
      .get(`/admin/queues/api/queues/imports/${importJobId}`)
      .set('Authorization', basic('admin@example.com'));
    expect(res.status).toBe(200);
    expect(JSON.stringify(res.body)).toContain('bot@example.com');
    expect(JSON.stringify(res.body)).not.toContain('super-secret-1');
  });
  describe('Methods', () => {
    const asAdmin = (method: 'post' | 'put' | 'patch' | 'delete' | 'options' | 'head', path: string) =>
      request(subject.app)[method](path).set('Authorization', basic('admin@example.com'));
    const expect405 = (res: request.Response, allow: string) => {
      expect(res.status).toBe(405);
      expect(res.headers.allow).toBe(allow);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(res.body).toMatchObject({ title: 'Method Not Allowed', status: 405 });
    };

    it.each(['post', 'put', 'patch', 'delete', 'options'] as const)(
      'When an Admin sends %s to the dashboard page, then a 405 problem with Allow: GET, HEAD',
      async (method) => {
        expect405(await asAdmin(method, '/admin/queues'), 'GET, HEAD');
      },
    );

    it("When a method the board's API does not serve is sent, then a 405 problem naming the ones it does", async () => {
      expect405(await asAdmin('delete', '/admin/queues/api/queues'), 'GET, HEAD');
      expect405(await asAdmin('post', '/admin/queues/api/queues/imports/retry/failed'), 'PUT');
      expect405(await asAdmin('options', '/admin/queues/static/js/main.js'), 'GET, HEAD');
    });

    it("When an Admin uses the board's own methods (HEAD, PUT), then the board answers them itself", async () => {
      expect((await asAdmin('head', '/admin/queues')).status).toBe(200);
      const pause = await asAdmin('put', '/admin/queues/api/queues/pause');
      expect(pause.status).toBe(200);
      // The read-only queue refuses an action with the board's own answer, not the service's 405.
      const retry = await asAdmin('put', '/admin/queues/api/queues/imports/retry/failed');
      expect(retry.status).toBe(405);
      expect(retry.body).toEqual({ error: { key: 'ERRORS.QUEUE_READ_ONLY' } });
    });

    it('When a path the board does not serve is asked, then the 404 problem; a method it does not serve is a 405 before credentials', async () => {
      expect((await asAdmin('post', '/admin/queues/no/such/page')).status).toBe(404);
      // As on every other route: the method is checked before authentication, for anyone.
      expect405(await request(subject.app).post('/admin/queues'), 'GET, HEAD');
      expect405(
        await request(subject.app).options('/admin/queues').set('Authorization', basic('member@example.com')),
        'GET, HEAD',
      );
      // A method the board serves still asks for credentials first.
      expect((await request(subject.app).get('/admin/queues')).status).toBe(401);
    });
  });
});
