/**
 * The revocation promise of issue 19 across replicas: two ingress processes on one Redis, the
 * account commands sent over POST /api/command by an Admin's Bearer. Within one second of a command
 * succeeding, every replica refuses the credentials it revoked, although both replicas had them
 * cached (the verified-token cache, the Basic verification cache and the account cache).
 */
import { randomUUID } from 'node:crypto';

import { createTestApp, type TestApp, testRedisEnv } from '../../helpers/app-fixture';
import { type IngressProcess, killAll, startIngressProcess } from '../../helpers/processes';

const JWT_SECRET = 'a-replica-revocation-secret-of-at-least-32-characters';
const ADMIN = { email: 'replicas-admin@example.com', password: 'replicas admin password' };
const PASSWORD = 'the-first-password';
const NEW_PASSWORD = 'the-second-password';
/** The promise: within one second of the command's answer. */
const REVOCATION_MS = 1_000;
const BEARER_AND_BASIC_CHALLENGE =
  'Basic realm="fantasy-team-service", charset="UTF-8", Bearer realm="fantasy-team-service"';

interface Answer {
  readonly status: number;
  readonly challenge: string | null;
  readonly body: Record<string, unknown>;
}

function basic(email: string, password: string): string {
  return `Basic ${Buffer.from(`${email}:${password}`, 'utf8').toString('base64')}`;
}

async function post(
  replica: IngressProcess,
  path: string,
  body: unknown,
  authorization?: string,
): Promise<Answer> {
  const res = await fetch(`${replica.baseUrl}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(authorization ? { authorization } : {}) },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  return {
    status: res.status,
    challenge: res.headers.get('www-authenticate'),
    // Parsed here, not by fetch: objects from fetch's realm fail strict deep equality in jest.
    body: text ? (JSON.parse(text) as Record<string, unknown>) : {},
  };
}

const currentUser = (replica: IngressProcess, authorization: string) =>
  post(replica, '/api/readmodel', { query: { queryType: 'CurrentUser' }, skip: 0, take: 10 }, authorization);

const rolesOf = (answer: Answer) => (answer.body.data as { roles?: unknown }[] | undefined)?.[0]?.roles;

const passwordGrant = (replica: IngressProcess, email: string, password: string) =>
  post(replica, '/api/auth/token', { grant_type: 'password', username: email, password });

const clientCredentials = (replica: IngressProcess, email: string, password: string) =>
  post(replica, '/api/auth/token', { grant_type: 'client_credentials' }, basic(email, password));

async function tokenFrom(replica: IngressProcess, email: string, password: string): Promise<string> {
  const answer = await passwordGrant(replica, email, password);
  if (answer.status !== 200)
    throw new Error(`token refused: ${answer.status} ${JSON.stringify(answer.body)}`);
  return String(answer.body.access_token);
}

/**
 * Polls `holds` until it is true or REVOCATION_MS have passed since `since` (when the command was
 * answered), without failing: the test asserts the state itself afterwards, so a broken promise
 * shows what each replica answered.
 */
async function pollWithinThePromise(since: number, holds: () => Promise<boolean>): Promise<void> {
  while (!(await holds()) && Date.now() - since < REVOCATION_MS) {
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe('Revocation across two ingress processes on one Redis', () => {
  let subject: TestApp;
  let replicas: [IngressProcess, IngressProcess];
  let adminToken: string;

  beforeAll(async () => {
    // The test's own app only creates accounts, under the replicas' key prefix.
    subject = await createTestApp({ JWT_SECRET });
    const env = {
      ...testRedisEnv(),
      REDIS_KEY_PREFIX: subject.config.redisKeyPrefix,
      JWT_SECRET,
      ADMIN_EMAIL: ADMIN.email,
      ADMIN_PASSWORD: ADMIN.password,
      // Every request comes from 127.0.0.1, and refused old passwords count as failures.
      AUTH_MAX_FAILURES_PER_ACCOUNT_AND_ADDRESS: '1000',
      AUTH_MAX_FAILURES_PER_ADDRESS: '1000',
    };
    const started = await Promise.allSettled([startIngressProcess(env), startIngressProcess(env)]);
    const [a, b] = started.map((result) => (result.status === 'fulfilled' ? result.value : undefined));
    if (!a || !b) {
      await killAll(a?.process, b?.process);
      throw new Error('an ingress process did not start');
    }
    replicas = [a, b];
    adminToken = await tokenFrom(a, ADMIN.email, ADMIN.password);
  }, 90_000);
  afterAll(async () => {
    await killAll(...(replicas ?? []).map((replica) => replica.process));
    await subject?.close();
  });

  /** Sends an account command as the Admin, to replica B; resolves when it is answered 200. */
  async function command(commandType: string, fields: Record<string, unknown>): Promise<number> {
    const answer = await post(
      replicas[1],
      '/api/command',
      { commandType, command: fields },
      `Bearer ${adminToken}`,
    );
    expect(answer).toMatchObject({ status: 200, body: { success: true, eventCount: 1, commandType } });
    return Date.now();
  }

  /** A new account, signed in on both replicas by Basic and with a token from replica A used on both. */
  async function accountInUseOnBothReplicas(label: string) {
    const email = `${label}-${randomUUID().slice(0, 8)}@example.com`;
    const userId = await subject.createUser({ email, password: PASSWORD, roles: ['Member'] });
    const token = await tokenFrom(replicas[0], email, PASSWORD);
    for (const replica of replicas) {
      // Twice each: the first verifies (and caches), the second is recalled from the caches.
      for (let i = 0; i < 2; i += 1) {
        expect((await currentUser(replica, `Bearer ${token}`)).status).toBe(200);
        expect((await currentUser(replica, basic(email, PASSWORD))).status).toBe(200);
      }
    }
    return { email, userId, token };
  }

  function expectRefused(answer: Answer): void {
    expect(answer).toMatchObject({
      status: 401,
      challenge: BEARER_AND_BASIC_CHALLENGE,
      body: { title: 'Unauthorized', status: 401 },
    });
  }

  it("When an account's password is set, then within a second both replicas refuse its token and its old password with 401, and accept the new password", async () => {
    const { email, userId, token } = await accountInUseOnBothReplicas('password-set');

    const answered = await command('SetUserPassword', { aggregateRootId: userId, newPassword: NEW_PASSWORD });
    const refusals = () =>
      Promise.all(
        replicas.flatMap((replica) => [
          currentUser(replica, `Bearer ${token}`),
          currentUser(replica, basic(email, PASSWORD)),
        ]),
      );
    await pollWithinThePromise(answered, async () =>
      (await refusals()).every((answer) => answer.status === 401),
    );

    for (const answer of await refusals()) expectRefused(answer);
    for (const replica of replicas) {
      expect((await currentUser(replica, basic(email, NEW_PASSWORD))).status).toBe(200);
      expect((await passwordGrant(replica, email, PASSWORD)).body).toMatchObject({ error: 'invalid_grant' });
    }
    const fresh = await tokenFrom(replicas[1], email, NEW_PASSWORD);
    for (const replica of replicas) expect((await currentUser(replica, `Bearer ${fresh}`)).status).toBe(200);
  });

  it("When an account's roles are set, then within a second CurrentUser on both replicas shows the new roles, and the token issued before is refused on both", async () => {
    const { email, userId, token } = await accountInUseOnBothReplicas('roles-set');

    const answered = await command('SetUserRoles', { aggregateRootId: userId, roles: ['ServiceAccount'] });
    const views = () => Promise.all(replicas.map((replica) => currentUser(replica, basic(email, PASSWORD))));
    const oldToken = () => Promise.all(replicas.map((replica) => currentUser(replica, `Bearer ${token}`)));
    await pollWithinThePromise(
      answered,
      async () =>
        (await views()).every((answer) => JSON.stringify(rolesOf(answer)) === '["ServiceAccount"]') &&
        (await oldToken()).every((answer) => answer.status === 401),
    );

    for (const answer of await views()) {
      expect(answer.status).toBe(200);
      expect(rolesOf(answer)).toEqual(['ServiceAccount']);
    }
    for (const answer of await oldToken()) expectRefused(answer);
    const fresh = await tokenFrom(replicas[0], email, PASSWORD);
    for (const replica of replicas) {
      expect(rolesOf(await currentUser(replica, `Bearer ${fresh}`))).toEqual(['ServiceAccount']);
    }
  });

  it('When an account is disabled, then within a second neither replica issues it a token by password or client_credentials, nor admits its Basic credentials or its token; enabled again, it signs in, and the tokens the disable revoked stay refused', async () => {
    const { email, userId, token } = await accountInUseOnBothReplicas('disabled');

    const disabled = await command('DisableUser', { aggregateRootId: userId, reason: 'left the company' });
    const attempts = () =>
      Promise.all(
        replicas.flatMap((replica) => [
          currentUser(replica, `Bearer ${token}`),
          currentUser(replica, basic(email, PASSWORD)),
          passwordGrant(replica, email, PASSWORD),
          clientCredentials(replica, email, PASSWORD),
        ]),
      );
    const allRefused = (answers: Answer[]) => answers.every((answer) => answer.status !== 200);
    await pollWithinThePromise(disabled, async () => allRefused(await attempts()));

    const refused = await attempts();
    for (const [bearer, byBasic, grant, client] of [refused.slice(0, 4), refused.slice(4)]) {
      expectRefused(bearer as Answer);
      expectRefused(byBasic as Answer);
      // Word for word what a wrong password gets.
      expect(grant).toEqual({
        status: 400,
        challenge: null,
        body: { error: 'invalid_grant', error_description: 'The user name or password is incorrect.' },
      });
      expect(client).toEqual({
        status: 401,
        challenge: 'Basic realm="fantasy-team-service", charset="UTF-8"',
        body: { error: 'invalid_client', error_description: 'Client authentication failed.' },
      });
    }

    const enabled = await command('EnableUser', { aggregateRootId: userId });
    const signIns = () =>
      Promise.all(
        replicas.flatMap((replica) => [
          currentUser(replica, basic(email, PASSWORD)),
          passwordGrant(replica, email, PASSWORD),
          clientCredentials(replica, email, PASSWORD),
        ]),
      );
    await pollWithinThePromise(enabled, async () =>
      (await signIns()).every((answer) => answer.status === 200),
    );

    for (const answer of await signIns()) expect(answer.status).toBe(200);
    for (const replica of replicas) expectRefused(await currentUser(replica, `Bearer ${token}`));
  });
});
