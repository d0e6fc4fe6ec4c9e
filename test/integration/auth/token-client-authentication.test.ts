/**
 * One client authentication per token request (RFC 6749 section 2.3, issue 29): client_credentials
 * with a Basic header and client_id or client_secret in the body is `400 invalid_request`, decided
 * before any credential is checked. Every other case answers as before.
 */
import request from 'supertest';

import { TWO_CLIENT_AUTHENTICATIONS } from '../../../ingress/auth/token.routes';
import { createTestApp, type TestApp } from '../../helpers/app-fixture';

const SERVICE = { email: 'token-svc@example.com', password: 'token-service-password-1' };
const OTHER = { email: 'token-other@example.com', password: 'token-other-password-1' };
const INVALID_REQUEST = { error: 'invalid_request', error_description: TWO_CLIENT_AUTHENTICATIONS };

function basic(email: string, password: string): string {
  return `Basic ${Buffer.from(`${email}:${password}`).toString('base64')}`;
}

describe('client_credentials: one client authentication per request', () => {
  let subject: TestApp;

  beforeAll(async () => {
    subject = await createTestApp({
      JWT_SECRET: 'token-client-authentication-test-secret-0123',
      // Low, so a counted failure would show as a 429 within a few requests.
      AUTH_MAX_FAILURES_PER_ACCOUNT_AND_ADDRESS: '2',
      AUTH_MAX_FAILURES_PER_ADDRESS: '1000',
    });
    for (const account of [SERVICE, OTHER]) {
      await subject.createUser({ ...account, userType: 'ServiceAccount', roles: ['ServiceAccount'] });
    }
  });
  afterAll(() => subject.close());
  afterEach(() => jest.restoreAllMocks());

  const token = (authorization: string | undefined, body: object, as: 'json' | 'form') => {
    const req = request(subject.app).post('/api/auth/token').type(as);
    return (authorization === undefined ? req : req.set('Authorization', authorization)).send(
      as === 'form' ? new URLSearchParams(body as Record<string, string>).toString() : body,
    );
  };

  const expectInvalidRequest = (res: request.Response) => {
    expect(res.status).toBe(400);
    expect(res.body).toEqual(INVALID_REQUEST);
    expect(res.body.access_token).toBeUndefined();
    expect(res.headers['www-authenticate']).toBeUndefined();
    expect(res.headers['cache-control']).toBe('no-store');
  };

  describe.each(['json', 'form'] as const)('with a %s body', (as) => {
    it("When a valid Basic header comes with another account's client_id and client_secret in the body, then 400 invalid_request", async () => {
      expectInvalidRequest(
        await token(
          basic(SERVICE.email, SERVICE.password),
          { grant_type: 'client_credentials', client_id: OTHER.email, client_secret: OTHER.password },
          as,
        ),
      );
    });

    it('When a valid Basic header comes with client_secret only in the body, over-long or not, then 400 invalid_request', async () => {
      for (const secret of ['x', 'y'.repeat(2_000)]) {
        expectInvalidRequest(
          await token(
            basic(SERVICE.email, SERVICE.password),
            { grant_type: 'client_credentials', client_secret: secret },
            as,
          ),
        );
      }
    });

    it('When a valid Basic header comes with a numeric or empty client_id in the body, then 400 invalid_request', async () => {
      for (const clientId of as === 'json' ? [12345, ''] : ['12345', '']) {
        expectInvalidRequest(
          await token(
            basic(SERVICE.email, SERVICE.password),
            { grant_type: 'client_credentials', client_id: clientId },
            as,
          ),
        );
      }
    });

    it('When a malformed or wrong Basic header comes with client_id in the body, then 400 invalid_request too', async () => {
      for (const authorization of ['Basic not-base64!', basic(SERVICE.email, 'wrong password')]) {
        expectInvalidRequest(
          await token(
            authorization,
            { grant_type: 'client_credentials', client_id: SERVICE.email, client_secret: SERVICE.password },
            as,
          ),
        );
      }
    });
  });

  it('When Basic and body credentials come together, then no credential is verified, and repeated wrong ones count no failure', async () => {
    const verify = jest.spyOn(subject.services.verifier, 'verify');
    for (let i = 0; i < 5; i++) {
      expectInvalidRequest(
        await token(
          basic(SERVICE.email, `wrong password ${i}`),
          { grant_type: 'client_credentials', client_id: SERVICE.email },
          'json',
        ),
      );
    }
    expect(verify).not.toHaveBeenCalled();
    // Past AUTH_MAX_FAILURES_PER_ACCOUNT_AND_ADDRESS a counted failure would make this a 429.
    const res = await token(
      basic(SERVICE.email, SERVICE.password),
      { grant_type: 'client_credentials' },
      'json',
    );
    expect(res.status).toBe(200);
    expect(verify).toHaveBeenCalledTimes(1);
  });

  describe('every other case answers as before', () => {
    it('When the credentials are in a Basic header alone, or in the body alone, then a token is issued', async () => {
      for (const as of ['json', 'form'] as const) {
        const byHeader = await token(
          basic(SERVICE.email, SERVICE.password),
          { grant_type: 'client_credentials' },
          as,
        );
        expect(byHeader.status).toBe(200);
        expect(byHeader.body.token_type).toBe('Bearer');
        const byBody = await token(
          undefined,
          { grant_type: 'client_credentials', client_id: SERVICE.email, client_secret: SERVICE.password },
          as,
        );
        expect(byBody.status).toBe(200);
        expect(byBody.body.token_type).toBe('Bearer');
      }
    });

    it('When the one set of credentials is wrong or missing, then 401 invalid_client', async () => {
      const cases: [string | undefined, object][] = [
        [basic(OTHER.email, 'wrong password'), { grant_type: 'client_credentials' }],
        [undefined, { grant_type: 'client_credentials', client_id: OTHER.email, client_secret: 'wrong' }],
        [undefined, { grant_type: 'client_credentials', client_id: OTHER.email }],
        [undefined, { grant_type: 'client_credentials' }],
      ];
      for (const [authorization, body] of cases) {
        const res = await token(authorization, body, 'json');
        expect(res.status).toBe(401);
        expect(res.body).toEqual({
          error: 'invalid_client',
          error_description: 'Client authentication failed.',
        });
      }
    });

    it('When the password grant comes with a Basic header, then the header is not a client authentication and the grant is decided as before', async () => {
      const res = await token(
        basic(OTHER.email, OTHER.password),
        { grant_type: 'password', username: SERVICE.email, password: SERVICE.password, client_id: 'x' },
        'json',
      );
      expect(res.status).toBe(200);
    });
  });
});
