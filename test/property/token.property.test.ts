import fc from 'fast-check';
import request, { type Response } from 'supertest';

import {
  createHostileSubject,
  expectPrototypesIntact,
  type HostileSubject,
} from '../helpers/hostile-fixture';
import {
  applyMutations,
  hostileEmail,
  hostileKey,
  mutations,
  PROPERTY_TIMEOUT_MS,
  propertyParameters,
  randomBodyText,
  toJsonText,
} from '../helpers/hostile-json';
import { expectTokenAnswer } from '../helpers/response-shapes';

/** Failed sign-ins are counted on purpose (the throttle): that is the one change a refusal makes. */
const THROTTLE_COUNTERS = [/:auth:failures:/];

// Every case is an HTTP request and a check of Redis (PROPERTY_TIMEOUT_MS).
jest.setTimeout(PROPERTY_TIMEOUT_MS);

describe('POST /api/auth/token under hostile input', () => {
  let subject: HostileSubject;

  beforeAll(async () => {
    // Limits out of reach, so every wrong guess is really verified rather than cut short by a 429.
    subject = await createHostileSubject({
      AUTH_MAX_FAILURES_PER_ACCOUNT: '10000',
      AUTH_MAX_FAILURES_PER_ADDRESS: '10000',
    });
  });
  afterAll(() => subject.close());

  async function expectTokenWithoutChange(send: () => Promise<Response>) {
    const before = await subject.state(THROTTLE_COUNTERS);
    const res = await send();
    expectTokenAnswer(res);
    expect(await subject.state(THROTTLE_COUNTERS)).toEqual(before);
    expectPrototypesIntact();
  }

  /** Both grants, with right or hostile credentials. */
  const grants = () =>
    fc.oneof(
      fc.record({
        grant_type: fc.constant('password'),
        username: fc.oneof(fc.constant(subject.admin.email), hostileEmail),
        password: fc.oneof(fc.constant(subject.admin.password), fc.string({ maxLength: 30 })),
      }),
      fc.record({
        grant_type: fc.constant('client_credentials'),
        client_id: fc.oneof(fc.constant(subject.admin.email), hostileEmail),
        client_secret: fc.oneof(fc.constant(subject.admin.password), fc.string({ maxLength: 30 })),
      }),
    );

  it('When the fields of a token request are mutated, then it answers a token, an RFC 6749 error or a problem, never a 5xx, and only failure counters change', async () => {
    await fc.assert(
      fc.asyncProperty(grants(), mutations, async (valid, edits) => {
        const text = toJsonText(applyMutations(valid, edits));
        await expectTokenWithoutChange(() => subject.post('/api/auth/token', text));
      }),
      propertyParameters(40),
    );
  });

  it('When the body is any JSON at all, or not JSON, then the answer is a documented shape, never a 5xx', async () => {
    await fc.assert(
      fc.asyncProperty(randomBodyText, async (text) => {
        await expectTokenWithoutChange(() => subject.post('/api/auth/token', text));
      }),
      propertyParameters(100),
    );
  });

  it('When a form-encoded body holds any keys and values, then the answer is a documented shape, never a 5xx', async () => {
    const forms = fc.array(fc.tuple(hostileKey, fc.string({ unit: 'binary', maxLength: 30 })), {
      maxLength: 6,
    });
    await fc.assert(
      fc.asyncProperty(forms, fc.boolean(), async (entries, withGrant) => {
        const form = new URLSearchParams(entries);
        if (withGrant) form.set('grant_type', 'password');
        await expectTokenWithoutChange(() =>
          request(subject.app)
            .post('/api/auth/token')
            .set('Content-Type', 'application/x-www-form-urlencoded')
            .send(form.toString()),
        );
      }),
      propertyParameters(40),
    );
  });
});
