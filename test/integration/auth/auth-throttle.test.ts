import request, { type Response } from 'supertest';

import { VERIFICATIONS_BUSY_MESSAGE } from '../../../ingress/auth/credential-verifier';
import { PROBLEMS } from '../../../shared/http/problem';
import { createTestApp, type TestApp } from '../../helpers/app-fixture';
import { parseExposition, sampleSum } from '../../helpers/metrics';
import { userIdForEmail } from '../../helpers/user-ids';

const CURRENT_USER = { query: { queryType: 'CurrentUser' } };
const RIGHT = 'the right password';
/** AUTH_MAX_FAILURES_PER_ACCOUNT_AND_ADDRESS by default. */
const DEFAULT_LIMIT_PER_ACCOUNT_AND_ADDRESS = 10;
const WARNING_LINE = 'sign-in failures for one account passed the warning threshold';

function basic(email: string, password: string): string {
  return `Basic ${Buffer.from(`${email}:${password}`, 'utf8').toString('base64')}`;
}

/** A Basic sign-in (CurrentUser) that a proxy forwarded for `address`. */
function signIn(subject: TestApp, address: string, email: string, password: string) {
  return request(subject.app)
    .post('/api/readmodel')
    .set('X-Forwarded-For', address)
    .set('Authorization', basic(email, password))
    .send(CURRENT_USER);
}

/** A password grant that a proxy forwarded for `address`. */
function token(subject: TestApp, address: string, email: string, password: string) {
  return request(subject.app)
    .post('/api/auth/token')
    .set('X-Forwarded-For', address)
    .send({ grant_type: 'password', username: email, password });
}

async function metric(subject: TestApp, name: string, labels: Record<string, string> = {}): Promise<number> {
  return sampleSum(parseExposition((await subject.metrics.exposition()).text), name, labels);
}

function expect429(res: Response): void {
  expect(res.status).toBe(429);
  expect(res.body).toMatchObject({ ...PROBLEMS[429], status: 429 });
  expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
}

describe('Sign-in throttling an attacker cannot turn against the victim', () => {
  describe('with the default limits', () => {
    let subject: TestApp;
    beforeAll(async () => {
      subject = await createTestApp({ TRUST_PROXY: 'loopback', AUTH_CACHE_TTL_SECONDS: '0' });
    });
    afterAll(() => subject.close());

    it("When one address sends more wrong passwords for the admin's e-mail than the limit, then the admin still signs in from another address, by Basic and by token", async () => {
      const admin = 'the-admin@example.com';
      await subject.createUser({ email: admin, password: RIGHT, roles: ['Admin'] });
      const limit = DEFAULT_LIMIT_PER_ACCOUNT_AND_ADDRESS;

      const guesses: number[] = [];
      for (let i = 0; i < limit + 2; i += 1) {
        guesses.push((await signIn(subject, '198.51.100.66', admin, `guess-${i}`)).status);
      }
      expect(guesses).toEqual([...Array<number>(limit).fill(401), 429, 429]);
      expect((await token(subject, '198.51.100.66', admin, 'one more')).status).toBe(429);

      // The admin, elsewhere, is not locked out by the attacker's failures.
      expect((await signIn(subject, '192.0.2.1', admin, RIGHT)).status).toBe(200);
      const issued = await token(subject, '192.0.2.2', admin, RIGHT);
      expect(issued.status).toBe(200);
      expect(issued.body).toMatchObject({ token_type: 'Bearer' });
      // The attacker's address stays refused for this account, even with the right password.
      expect429(await signIn(subject, '198.51.100.66', admin, RIGHT));
    });

    it('When an IPv6 client guesses from many addresses of one /64, then they count as one address', async () => {
      const email = 'v6-victim@example.com';
      await subject.createUser({ email, password: RIGHT });
      const limit = DEFAULT_LIMIT_PER_ACCOUNT_AND_ADDRESS;
      for (let i = 0; i < limit; i += 1) {
        expect(
          (await signIn(subject, `2001:db8:7:8::${(i + 1).toString(16)}`, email, `guess-${i}`)).status,
        ).toBe(401);
      }
      expect429(await signIn(subject, '2001:db8:7:8:ffff:ffff:ffff:fffe', email, 'guess-next'));
      // Another /64 has failed nothing: its right password signs in.
      expect((await signIn(subject, '2001:db8:7:9::1', email, RIGHT)).status).toBe(200);
    });
  });

  describe('with a small allowance per address', () => {
    let subject: TestApp;
    beforeAll(async () => {
      subject = await createTestApp({
        TRUST_PROXY: 'loopback',
        AUTH_CACHE_TTL_SECONDS: '0',
        AUTH_MAX_FAILURES_PER_ADDRESS: '3',
        // The old name (an alias now), so the same test runs on the code before the change.
        AUTH_MAX_FAILURES_PER_ACCOUNT: '1000',
      });
    });
    afterAll(() => subject.close());

    it('When one IPv6 host rotates through its /64, then its failures count as one address across accounts', async () => {
      expect((await signIn(subject, '2001:db8:aa:bb::1', 'a@example.com', 'x')).status).toBe(401);
      expect((await signIn(subject, '2001:db8:aa:bb:ffff::2', 'b@example.com', 'x')).status).toBe(401);
      expect((await signIn(subject, '2001:db8:aa:bb:1:2:3:4', 'c@example.com', 'x')).status).toBe(401);
      expect429(await signIn(subject, '2001:db8:aa:bb::99', 'd@example.com', 'x'));
      expect((await signIn(subject, '2001:db8:aa:bc::1', 'd@example.com', 'x')).status).toBe(401);
    });

    it('When an IPv4 client also arrives as IPv4-mapped IPv6, then both count as the one IPv4 address', async () => {
      expect((await signIn(subject, '::ffff:203.0.113.9', 'e@example.com', 'x')).status).toBe(401);
      expect((await signIn(subject, '::ffff:cb00:7109', 'f@example.com', 'x')).status).toBe(401);
      expect((await signIn(subject, '203.0.113.9', 'g@example.com', 'x')).status).toBe(401);
      expect429(await signIn(subject, '203.0.113.9', 'h@example.com', 'x'));
      expect429(await signIn(subject, '::ffff:203.0.113.9', 'h@example.com', 'x'));
    });
  });

  describe('with a small allowance per account and address', () => {
    let subject: TestApp;
    beforeAll(async () => {
      subject = await createTestApp({
        TRUST_PROXY: 'loopback',
        AUTH_CACHE_TTL_SECONDS: '0',
        AUTH_MAX_FAILURES_PER_ACCOUNT_AND_ADDRESS: '3',
        AUTH_MAX_FAILURES_PER_ACCOUNT: '3',
        AUTH_ACCOUNT_WARNING_FAILURES: '4',
      });
    });
    afterAll(() => subject.close());

    it('When a client signs in rightly between wrong passwords, then its successes give back only their own attempt and the failures stay counted', async () => {
      const email = 'regular@example.com';
      await subject.createUser({ email, password: RIGHT });
      for (let round = 0; round < 3; round += 1) {
        expect((await signIn(subject, '192.0.2.30', email, RIGHT)).status).toBe(200);
        expect((await signIn(subject, '192.0.2.30', email, `guess-${round}`)).status).toBe(401);
      }
      // Three failures in the window, successes between them or not: the fourth guess is refused.
      expect429(await signIn(subject, '192.0.2.30', email, 'guess-4'));
      expect429(await token(subject, '192.0.2.30', email, RIGHT));
    });

    it('When one account fails from many addresses, then a warning names its user id once and a metric counts it, and its owner still signs in', async () => {
      const email = 'targeted@example.com';
      const userId = await subject.createUser({ email, password: RIGHT });
      expect(userId).toBe(userIdForEmail(email));
      const before = await metric(subject, 'fts_auth_accounts_under_attack_total');

      for (let i = 0; i < 6; i += 1) {
        expect((await signIn(subject, `198.51.100.${i + 1}`, email, `guess-${i}`)).status).toBe(401);
      }
      const warnings = subject.logs.lines.filter((line) => line.message === WARNING_LINE);
      expect(warnings).toEqual([
        expect.objectContaining({ level: 'warn', userId, failures: 4, windowSeconds: 900 }),
      ]);
      expect(JSON.stringify(warnings)).not.toContain(email);
      expect(await metric(subject, 'fts_auth_accounts_under_attack_total')).toBe(before + 1);
      expect(await metric(subject, 'fts_auth_sign_ins_total', { outcome: 'failed' })).toBeGreaterThanOrEqual(
        6,
      );

      // A signal only: nothing is blocked for an address that has not failed.
      expect((await signIn(subject, '192.0.2.99', email, RIGHT)).status).toBe(200);
    });
  });
});

describe('A bound on password verifications waiting at once', () => {
  const BOUND = 2;
  const PARALLEL = 30;
  let subject: TestApp;

  beforeAll(async () => {
    subject = await createTestApp({
      TRUST_PROXY: 'loopback',
      AUTH_CACHE_TTL_SECONDS: '0',
      AUTH_MAX_PENDING_VERIFICATIONS: String(BOUND),
      AUTH_MAX_FAILURES_PER_ACCOUNT: '10000',
      AUTH_MAX_FAILURES_PER_ADDRESS: '10000',
    });
    await subject.createUser({ email: 'crowded@example.com', password: RIGHT });
  });
  afterAll(() => subject.close());

  /** Fires `send` PARALLEL times at once. */
  async function burst(send: (i: number) => request.Test): Promise<{ res: Response }[]> {
    return Promise.all(Array.from({ length: PARALLEL }, async (_, i) => ({ res: await send(i) })));
  }

  function expectBusy(res: Response): void {
    expect(res.status).toBe(503);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(res.headers['retry-after']).toBe('1');
    expect(res.body).toEqual({
      ...PROBLEMS[503],
      status: 503,
      detail: VERIFICATIONS_BUSY_MESSAGE,
      traceId: res.headers['x-request-id'],
    });
  }

  it('When many distinct wrong Basic passwords arrive at once, then those past the bound get the 503 problem with Retry-After and the rest are checked', async () => {
    const busyBefore = await metric(subject, 'fts_auth_sign_ins_total', { outcome: 'busy' });
    const answers = await burst((i) =>
      signIn(subject, `198.51.100.${i + 1}`, 'crowded@example.com', `guess-${i}`),
    );

    const busy = answers.filter(({ res }) => res.status === 503);
    const checked = answers.filter(({ res }) => res.status === 401);
    expect(busy.length + checked.length).toBe(PARALLEL);
    expect(busy.length).toBeGreaterThan(0);
    expect(checked.length).toBeGreaterThanOrEqual(BOUND);
    for (const { res } of busy) expectBusy(res);
    // How much faster a refusal is than a checked answer is measured, not asserted: timing is a
    // bench's to judge on a shared machine (ADR 0005, "Verification bound").
    expect(await metric(subject, 'fts_auth_sign_ins_total', { outcome: 'busy' })).toBe(
      busyBefore + busy.length,
    );
    expect(await metric(subject, 'fts_auth_pending_verifications')).toBe(0);

    // The places are given back: a right password afterwards is checked and admitted.
    expect((await signIn(subject, '192.0.2.77', 'crowded@example.com', RIGHT)).status).toBe(200);
  });

  it('When many distinct wrong password grants arrive at once, then those past the bound get the 503 problem too', async () => {
    const answers = await burst((i) =>
      token(subject, `203.0.113.${i + 1}`, 'crowded@example.com', `guess-${i}`),
    );
    const busy = answers.filter(({ res }) => res.status === 503);
    expect(busy.length).toBeGreaterThan(0);
    for (const { res } of busy) expectBusy(res);
    for (const { res } of answers.filter(({ res }) => res.status !== 503)) {
      expect(res.status).toBe(400);
      expect(res.body).toEqual({
        error: 'invalid_grant',
        error_description: 'The user name or password is incorrect.',
      });
    }
  });
});
