import {
  SANDBOX_ADMIN_EMAIL,
  SANDBOX_BANNER_TITLE,
  SANDBOX_NOT_NEEDED_LINE,
} from '../../../ingress/auth/sandbox-admin';
import { createLogger } from '../../../shared/logger';
import { closeConnections, waitForRedis } from '../../../shared/redis/connections';
import { CapturedLogs, openTestRedis, testRedisEnv, uniquePrefix } from '../../helpers/app-fixture';
import { basicAuth, bearerToken, commandBody, exchange } from '../../helpers/http-client';
import { eventually, type IngressProcess, killAll, startIngressProcess } from '../../helpers/processes';
import { redisContents } from '../../helpers/redis-state';

const PASSWORD_LINE = /^ {4}password: {2}(\S+)$/m;
const EXISTS_LINE = `[sandbox] the sandbox administrator ${SANDBOX_ADMIN_EMAIL} exists`;

/** The password a banner shows, or undefined when the output has none. */
function printedPassword(stdout: string): string | undefined {
  return PASSWORD_LINE.exec(stdout)?.[1];
}

async function currentUserStatus(baseUrl: string, password: string): Promise<number | undefined> {
  const answer = await exchange(baseUrl, 'POST', '/api/readmodel', {
    authorization: basicAuth(SANDBOX_ADMIN_EMAIL, password),
    body: { query: { queryType: 'CurrentUser' } },
  });
  return answer.ok ? answer.status : undefined;
}

/**
 * The sandbox administrator of a development start with no ADMIN_EMAIL (ADR 0017), on real
 * ingress processes: shown once, never again, exactly once across replicas, never in production.
 */
describe('sandbox administrator', () => {
  const started: IngressProcess[] = [];
  const start = async (env: Record<string, string>) => {
    const ingress = await startIngressProcess({
      ...testRedisEnv(),
      ADMIN_EMAIL: '',
      ADMIN_PASSWORD: '',
      ...env,
    });
    started.push(ingress);
    return ingress;
  };
  /** Everything the process wrote up to its sandbox line: the banner, or the line saying it exists. */
  const settled = async (ingress: IngressProcess) => {
    const output = () => ingress.process.stdout() + ingress.process.stderr();
    await eventually(
      () =>
        output().includes(SANDBOX_BANNER_TITLE) ||
        output().includes(EXISTS_LINE) ||
        output().includes(SANDBOX_NOT_NEEDED_LINE),
      15_000,
    );
    return output();
  };

  /** All a process wrote from its start to its graceful stop. */
  const everythingWritten = async (ingress: IngressProcess) => {
    ingress.process.child.kill('SIGTERM');
    await ingress.process.exited;
    return ingress.process.stdout() + ingress.process.stderr();
  };

  afterEach(async () => {
    await killAll(...started.splice(0).map((ingress) => ingress.process));
  });

  it('When a development ingress starts for the first time, then it prints the account and its password once, and the password signs in', async () => {
    const prefix = uniquePrefix();
    const first = await start({ NODE_ENV: 'development', REDIS_KEY_PREFIX: prefix });
    const output = await settled(first);

    const password = printedPassword(output);
    expect(output.split(SANDBOX_BANNER_TITLE)).toHaveLength(2);
    expect(output).toContain(`e-mail:    ${SANDBOX_ADMIN_EMAIL}`);
    expect(password).toMatch(/^[A-Za-z0-9_-]{24}$/);
    expect(output).toContain(`${first.baseUrl}/api/docs`);
    expect(output).toContain('npm run seed:demo');
    expect(await currentUserStatus(first.baseUrl, password ?? '')).toBe(200);
    // The password is on the banner only: no JSON log line carries it.
    const logLines = output.split('\n').filter((line) => line.startsWith('{'));
    expect(logLines.some((line) => line.includes('sandbox administrator created'))).toBe(true);
    expect(logLines.filter((line) => line.includes(password ?? ''))).toEqual([]);

    // Nor does Redis, in any key: the account holds its argon2 hash.
    const logger = createLogger({ level: 'error', processRole: 'test', stream: new CapturedLogs().stream });
    const redis = openTestRedis(logger);
    try {
      await waitForRedis(redis, logger);
      const contents = Object.entries(await redisContents(redis, prefix));
      expect(contents.length).toBeGreaterThan(0);
      expect(contents.filter(([key, value]) => `${key} ${value}`.includes(password ?? ''))).toEqual([]);
    } finally {
      await closeConnections(redis);
      logger.close();
    }
  });

  it('When it starts again, then it says the account exists and never prints the password', async () => {
    const prefix = uniquePrefix();
    const first = await start({ NODE_ENV: 'development', REDIS_KEY_PREFIX: prefix });
    const password = printedPassword(await settled(first));

    const second = await start({ NODE_ENV: 'development', REDIS_KEY_PREFIX: prefix });
    const output = await settled(second);

    expect(output).toContain(EXISTS_LINE);
    expect(output).not.toContain(SANDBOX_BANNER_TITLE);
    expect(printedPassword(output)).toBeUndefined();
    expect(output).not.toContain(password);
    // The first start's account is untouched: its password still signs in.
    expect(await currentUserStatus(second.baseUrl, password ?? '')).toBe(200);
  });

  it('When two replicas start at once on a fresh Redis, then exactly one creates the account and prints it, and its password is the one that signs in', async () => {
    const prefix = uniquePrefix();
    const replicas = await Promise.all([
      start({ NODE_ENV: 'development', REDIS_KEY_PREFIX: prefix }),
      start({ NODE_ENV: 'development', REDIS_KEY_PREFIX: prefix }),
    ]);
    const outputs = await Promise.all(replicas.map(settled));

    const passwords = outputs.map(printedPassword).filter((password) => password !== undefined);
    expect(passwords).toHaveLength(1);
    expect(outputs.filter((output) => output.includes(SANDBOX_BANNER_TITLE))).toHaveLength(1);
    expect(outputs.filter((output) => output.includes(EXISTS_LINE))).toHaveLength(1);
    for (const replica of replicas)
      expect(await currentUserStatus(replica.baseUrl, passwords[0] ?? '')).toBe(200);
  });

  it('When NODE_ENV=production, then no account is made and nothing is printed, so a later development start is the first', async () => {
    const prefix = uniquePrefix();
    const production = await start({
      NODE_ENV: 'production',
      JWT_SECRET: 'sandbox-admin-test-secret-0123456789abcdef',
      REDIS_KEY_PREFIX: prefix,
    });
    const output = await everythingWritten(production);
    expect(output).not.toContain('[sandbox]');
    expect(output).not.toContain(SANDBOX_BANNER_TITLE);
    expect(output).not.toContain('sandbox administrator');

    const development = await start({ NODE_ENV: 'development', REDIS_KEY_PREFIX: prefix });
    expect(await settled(development)).toContain(SANDBOX_BANNER_TITLE);
  });

  it("When ADMIN_EMAIL is set, then the operator's administrator is made and no sandbox one", async () => {
    const prefix = uniquePrefix();
    const ingress = await start({
      NODE_ENV: 'development',
      REDIS_KEY_PREFIX: prefix,
      ADMIN_EMAIL: 'operator@example.com',
      ADMIN_PASSWORD: 'the-operators-password',
    });
    const output = await everythingWritten(ingress);
    expect(output).not.toContain('[sandbox]');
    expect(output).not.toContain(SANDBOX_BANNER_TITLE);
  });

  const OPERATOR = { ADMIN_EMAIL: 'operator@example.com', ADMIN_PASSWORD: 'the-operators-password' };

  it('When the service already has an administrator, then a development start without ADMIN_EMAIL makes no sandbox Admin and prints no password', async () => {
    const prefix = uniquePrefix();
    await everythingWritten(await start({ NODE_ENV: 'development', REDIS_KEY_PREFIX: prefix, ...OPERATOR }));
    const later = await start({ NODE_ENV: 'development', REDIS_KEY_PREFIX: prefix });
    const output = await settled(later);
    expect(output).toContain(SANDBOX_NOT_NEEDED_LINE);
    expect(output).not.toContain(SANDBOX_BANNER_TITLE);
    expect(printedPassword(output)).toBeUndefined();
    expect(await currentUserStatus(later.baseUrl, 'anything-at-all')).toBe(401);
  });

  it('When an Admin deleted the sandbox administrator, then a restart does not make it again', async () => {
    const prefix = uniquePrefix();
    const fresh = await start({ NODE_ENV: 'development', REDIS_KEY_PREFIX: prefix });
    const password = printedPassword(await settled(fresh));
    await everythingWritten(fresh);
    // The operator's administrator joins, and deletes the sandbox one.
    const withOperator = await start({ NODE_ENV: 'development', REDIS_KEY_PREFIX: prefix, ...OPERATOR });
    await eventually(() => withOperator.process.stdout().includes('ingress listening'), 15_000);
    const token = await bearerToken(withOperator.baseUrl, OPERATOR.ADMIN_EMAIL, OPERATOR.ADMIN_PASSWORD);
    // Its id is the service's to say (keyed, ADR 0035): GetUser by e-mail.
    const found = await exchange(withOperator.baseUrl, 'POST', '/api/readmodel', {
      authorization: token,
      body: { query: { queryType: 'GetUser', email: SANDBOX_ADMIN_EMAIL } },
    });
    const sandboxId = found.ok ? (found.body as { results: { id: string }[] }).results[0]?.id : undefined;
    expect(sandboxId).toBeDefined();
    const deleted = await exchange(withOperator.baseUrl, 'POST', '/api/command', {
      authorization: token,
      body: commandBody('DeleteUser', { aggregateRootId: sandboxId }),
    });
    expect(deleted.ok && deleted.status).toBe(200);
    await everythingWritten(withOperator);

    const restarted = await start({ NODE_ENV: 'development', REDIS_KEY_PREFIX: prefix });
    const output = await settled(restarted);
    expect(output).toContain(SANDBOX_NOT_NEEDED_LINE);
    expect(printedPassword(output)).toBeUndefined();
    expect(await currentUserStatus(restarted.baseUrl, password ?? '')).toBe(401);
  });
});
