import { randomUUID } from 'node:crypto';
import request from 'supertest';

import { createTestApp, type TestApp } from '../helpers/app-fixture';

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
});
