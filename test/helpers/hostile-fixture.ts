import { once } from 'node:events';
import { setTimeout as delay } from 'node:timers/promises';

import request, { type Response } from 'supertest';

import { TEMPORARILY_UNAVAILABLE_DETAIL } from '../../shared/http/error-handler';
import { createTestApp, type TestApp } from './app-fixture';
import { type IgnoredKeys, redisState } from './redis-state';

/** An account of the hostile tests, with both ways to present it. */
export interface Caller {
  readonly email: string;
  readonly password: string;
  readonly userId: string;
  readonly basic: string;
  readonly bearer: string;
}

export interface HostileSubject extends TestApp {
  /** Every role (Admin, ServiceAccount, UserManager, Member): reaches every query's fields. */
  readonly admin: Caller;
  /** Only Member: the owner of `teamId`. */
  readonly member: Caller;
  /** A team `member` created, so commands and queries can hit an aggregate that exists. */
  readonly teamId: string;
  /**
   * Sends `text` as it is, as application/json, with `authorization` if given; sent again, as a
   * client does, while the answer is the 503 of a Redis round trip that took too long.
   */
  post(path: string, text: string, authorization?: string): Promise<Response>;
  /** Keys and value digests under the app's prefix, without `ignored`. */
  state(ignored?: IgnoredKeys): Promise<Record<string, string>>;
}

const TEAM_ID = '4b1d6c9e-2f3a-4e5b-8c7d-9e0f1a2b3c4d';

/**
 * How often a request answered "temporarily unavailable" is sent again. On a machine busy enough to
 * keep this process off the CPU for the ingress's Redis command timeout (2 s), a round trip times
 * out and the ingress answers that 503 with Retry-After, as it must; a client sends the request
 * again (a requestId makes that safe). Not a PROJECTION_BEHIND 503 (the tests look for those), nor
 * Redis out of memory (its own detail: a resend would not pass).
 */
const UNAVAILABLE_RESENDS = 5;

function isTemporarilyUnavailable(res: Response): boolean {
  return (
    res.status === 503 &&
    res.headers['retry-after'] !== undefined &&
    (res.body as { detail?: unknown } | null)?.detail === TEMPORARILY_UNAVAILABLE_DETAIL
  );
}

/** The hostile tests' app: real Redis, real queue (no worker), two accounts and one team. */
export async function createHostileSubject(env: Record<string, string> = {}): Promise<HostileSubject> {
  const subject = await createTestApp({
    JWT_SECRET: 'hostile-tests-secret-at-least-32-characters',
    // These tests send far more than any client would; the per-account limit has its own tests, and
    // its counters would be the one change every request makes.
    RATE_LIMIT_PER_ACCOUNT: '0',
    // No worker runs: every accepted import stays Pending, and these tests accept thousands.
    MAX_PENDING_IMPORTS_PER_USER: '100000',
    // Nor a projector: a read with minVersion answers PROJECTION_BEHIND at once instead of waiting.
    READ_WAIT_MS: '0',
    ...env,
  });
  // One server for the thousands of requests of a file: supertest would start one per request.
  const server = subject.app.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const sendOnce = (path: string, text: string, authorization?: string) => {
    const req = request(server).post(path).set('Content-Type', 'application/json');
    return (authorization === undefined ? req : req.set('Authorization', authorization)).send(text);
  };
  const post = async (path: string, text: string, authorization?: string) => {
    let res = await sendOnce(path, text, authorization);
    for (let resent = 0; resent < UNAVAILABLE_RESENDS && isTemporarilyUnavailable(res); resent++) {
      await delay(Number(res.headers['retry-after']) * 1_000);
      res = await sendOnce(path, text, authorization);
    }
    return res;
  };
  const caller = async (email: string, password: string, roles: string[]): Promise<Caller> => {
    const userId = await subject.createUser({ email, password, roles: roles as never });
    const token = await post(
      '/api/auth/token',
      JSON.stringify({ grant_type: 'password', username: email, password }),
    );
    if (token.status !== 200) throw new Error(`no token for ${email}: ${token.status} ${token.text}`);
    return {
      email,
      password,
      userId,
      basic: `Basic ${Buffer.from(`${email}:${password}`).toString('base64')}`,
      bearer: `Bearer ${(token.body as { access_token: string }).access_token}`,
    };
  };
  const admin = await caller('hostile-admin@example.com', 'hostile admin password', [
    'Admin',
    'ServiceAccount',
    'UserManager',
    'Member',
  ]);
  const member = await caller('hostile-member@example.com', 'hostile member password', ['Member']);
  const created = await post(
    '/api/command',
    JSON.stringify({
      commandType: 'CreateFantasyTeam',
      command: { aggregateRootId: TEAM_ID, name: 'Hostile XI' },
    }),
    member.bearer,
  );
  if (created.status !== 200) throw new Error(`team not created: ${created.status} ${created.text}`);
  const closeApp = subject.close.bind(subject);
  return Object.assign(subject, {
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await closeApp();
    },
    admin,
    member,
    teamId: TEAM_ID,
    post,
    state: (ignored: IgnoredKeys = []) => redisState(subject.redis, subject.config.redisKeyPrefix, ignored),
  });
}

const PROTOTYPES = [Object.prototype, Array.prototype, Function.prototype, String.prototype] as const;
const PRISTINE: Record<string, PropertyDescriptor>[] = PROTOTYPES.map((prototype) =>
  Object.getOwnPropertyDescriptors(prototype),
);

/** No request may have added to, or replaced a member of, a built-in prototype. */
export function expectPrototypesIntact(): void {
  PROTOTYPES.forEach((prototype, i) => {
    const pristine = PRISTINE[i] ?? {};
    const now = Object.getOwnPropertyDescriptors(prototype);
    expect(Object.keys(now).sort()).toEqual(Object.keys(pristine).sort());
    for (const [name, descriptor] of Object.entries(now)) {
      const before = pristine[name];
      if (
        descriptor.value !== before?.value ||
        descriptor.get !== before?.get ||
        descriptor.set !== before?.set
      ) {
        throw new Error(`a built-in prototype's ${name} was replaced`);
      }
    }
  });
  expect(({} as Record<string, unknown>).polluted).toBeUndefined();
}
