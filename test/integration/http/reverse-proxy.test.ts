import request from 'supertest';

import { createTestApp, type TestApp } from '../../helpers/app-fixture';
import { eventually } from '../../helpers/processes';

const CURRENT_USER = { query: { queryType: 'CurrentUser' }, skip: 0, take: 10 };
const WRONG = `Basic ${Buffer.from('nobody@example.com:not-the-password').toString('base64')}`;
const THROTTLE = { AUTH_MAX_FAILURES_PER_ADDRESS: '2', AUTH_MAX_FAILURES_PER_ACCOUNT: '1000' };

/** A failed sign-in that a proxy forwarded for `client`. */
function signInFailureFrom(subject: TestApp, client: string) {
  return request(subject.app)
    .post('/api/readmodel')
    .set('X-Forwarded-For', client)
    .set('Authorization', WRONG)
    .send(CURRENT_USER);
}

describe('Running behind a reverse proxy', () => {
  describe('with TRUST_PROXY naming the proxy (loopback here)', () => {
    let subject: TestApp;
    beforeAll(async () => {
      subject = await createTestApp({ ...THROTTLE, TRUST_PROXY: 'loopback' });
    });
    afterAll(() => subject.close());

    it('When one client address collects too many failures, then only that address is throttled', async () => {
      expect((await signInFailureFrom(subject, '203.0.113.7')).status).toBe(401);
      expect((await signInFailureFrom(subject, '203.0.113.7')).status).toBe(401);
      expect((await signInFailureFrom(subject, '203.0.113.7')).status).toBe(429);
      expect((await signInFailureFrom(subject, '198.51.100.9')).status).toBe(401);
    });

    it('When a request passes the proxy, then the access log names the client, not the proxy', async () => {
      await request(subject.app).get('/healthz').set('X-Forwarded-For', '192.0.2.44');
      await eventually(() =>
        Promise.resolve(
          subject.logs.lines.some((line) => line.path === '/healthz' && line.clientAddress === '192.0.2.44'),
        ),
      );
    });
  });

  describe('with TRUST_PROXY unset', () => {
    let subject: TestApp;
    beforeAll(async () => {
      subject = await createTestApp(THROTTLE);
    });
    afterAll(() => subject.close());

    it('When clients forge X-Forwarded-For, then the header is ignored and the TCP peer is throttled', async () => {
      expect((await signInFailureFrom(subject, '203.0.113.1')).status).toBe(401);
      expect((await signInFailureFrom(subject, '203.0.113.2')).status).toBe(401);
      expect((await signInFailureFrom(subject, '203.0.113.3')).status).toBe(429);
    });
  });
});
