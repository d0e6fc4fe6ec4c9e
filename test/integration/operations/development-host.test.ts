/**
 * Development stays on the developer's machine (issue 29): where a start listens, and what it
 * makes only when it listens on loopback (the sandbox administrator, a generated JWT secret,
 * private webhook targets by default), checked on the real entry points and through HTTP.
 */
import { randomUUID } from 'node:crypto';
import { type AddressInfo, connect, createServer } from 'node:net';
import { networkInterfaces } from 'node:os';

import {
  SANDBOX_ADMIN_EMAIL,
  SANDBOX_BANNER_TITLE,
  sandboxAccountsRefusedLine,
} from '../../../ingress/auth/sandbox-admin';
import { developmentBeyondLoopback } from '../../../shared/config';
import { createLogger } from '../../../shared/logger';
import { closeConnections, waitForRedis } from '../../../shared/redis/connections';
import { createKeys } from '../../../shared/redis/keys';
import {
  CapturedLogs,
  createTestApp,
  openTestRedis,
  testRedisEnv,
  uniquePrefix,
} from '../../helpers/app-fixture';
import { basicAuth, bearerToken, commandBody, exchange } from '../../helpers/http-client';
import {
  eventually,
  type IngressProcess,
  isAlive,
  killAll,
  type ServiceProcess,
  startIngressProcess,
  startServiceProcess,
} from '../../helpers/processes';
import { redisContents } from '../../helpers/redis-state';
import { adminCommander, startReceiver } from '../../helpers/webhooks';

const SECRET = 'development-host-test-secret-0123456789abcdef';
const REFUSAL = `Invalid configuration: ${developmentBeyondLoopback('0.0.0.0')} (at least 32 characters, e.g. \`openssl rand -base64 48\`); leave HOST unset to listen on 127.0.0.1 only`;

/** An IPv4 address of this machine that is not loopback, if it has one. */
function nonLoopbackAddress(): string | undefined {
  return Object.values(networkInterfaces())
    .flat()
    .find((entry) => entry?.family === 'IPv4' && !entry.internal)?.address;
}

/** Whether a TCP connection to host:port is accepted. */
function accepts(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host, port, timeout: 3_000 });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
    socket.once('timeout', () => {
      socket.destroy();
      resolve(false);
    });
  });
}

/** The keys of `prefix` in the test Redis, with their values. */
async function contentsOf(prefix: string): Promise<Record<string, string>> {
  const logger = createLogger({ level: 'error', processRole: 'test', stream: new CapturedLogs().stream });
  const redis = openTestRedis(logger);
  try {
    await waitForRedis(redis, logger);
    return await redisContents(redis, prefix);
  } finally {
    await closeConnections(redis);
    logger.close();
  }
}

/** Resolves with the exit code, or 'still running' when the process outlives `ms`. */
async function exitWithin(service: ServiceProcess, ms: number): Promise<number | null | 'still running'> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<'still running'>((resolve) => {
    timer = setTimeout(() => resolve('still running'), ms);
  });
  try {
    return await Promise.race([service.exited, late]);
  } finally {
    clearTimeout(timer);
  }
}

describe('development stays on the developer machine', () => {
  const started: ServiceProcess[] = [];
  // Blank, so nothing from the caller's shell decides the outcome.
  const env = (prefix: string, extra: Record<string, string>) => ({
    ...testRedisEnv(),
    REDIS_KEY_PREFIX: prefix,
    NODE_ENV: 'development',
    HOST: '',
    ADMIN_EMAIL: '',
    ADMIN_PASSWORD: '',
    JWT_SECRET: '',
    JWT_PREVIOUS_SECRET: '',
    JWT_PREVIOUS_SECRET_UNTIL: '',
    DATA_ENCRYPTION_KEY: '',
    WEBHOOK_ALLOW_PRIVATE_TARGETS: '',
    METRICS_PORT: '',
    ...extra,
  });
  const startIngress = async (
    prefix: string,
    extra: Record<string, string> = {},
  ): Promise<IngressProcess> => {
    const ingress = await startIngressProcess(env(prefix, extra));
    started.push(ingress.process);
    return ingress;
  };

  afterEach(async () => {
    const services = started.splice(0);
    // SIGTERM first: a supervisor (`npm start`) killed outright would leave its detached children.
    for (const service of services) if (isAlive(service)) service.child.kill('SIGTERM');
    await Promise.race([
      Promise.all(services.map((service) => service.exited)),
      new Promise((resolve) => setTimeout(resolve, 15_000)),
    ]);
    await killAll(...services);
  });

  it('When a development ingress starts without HOST, then it listens on 127.0.0.1 only, prints that address in one line, and makes the sandbox and its generated secret', async () => {
    const prefix = uniquePrefix();
    const ingress = await startIngress(prefix);
    const port = Number(new URL(ingress.baseUrl).port);
    await ingress.process.waitForOutput(SANDBOX_BANNER_TITLE, 30_000);

    const lines = ingress.process.stdout().split('\n');
    expect(lines.filter((line) => line.startsWith('[ingress] listening'))).toEqual([
      `[ingress] listening on http://127.0.0.1:${port} (loopback: this machine only)`,
    ]);
    expect(await exchange(ingress.baseUrl, 'GET', '/healthz')).toMatchObject({ ok: true, status: 200 });
    // Another address of this machine reaches nothing (this host has one: eth0 or alike).
    const outside = nonLoopbackAddress();
    expect(outside).toBeDefined();
    expect(await accepts(outside ?? '', port)).toBe(false);
    // On loopback, the generated secret is kept in Redis (so replicas agree).
    expect(Object.keys(await contentsOf(prefix))).toContain(createKeys(prefix).generatedJwtSecret());
  }, 60_000);

  it.each([
    ['ingress', 'ingress/main.ts', 'ingress'],
    ['worker', 'workers/main.ts', 'worker'],
    ['`npm start`', 'scripts/start-all.ts', 'start'],
  ])(
    'When a development %s is asked to listen on 0.0.0.0 without JWT_SECRET, then it exits 78 with one line saying it has no sandbox and needs JWT_SECRET, and writes nothing to Redis',
    async (_what, entry, role) => {
      const prefix = uniquePrefix();
      const service = startServiceProcess(entry, env(prefix, { HOST: '0.0.0.0', PORT: '0' }));
      started.push(service);
      expect(await exitWithin(service, 30_000)).toBe(78);
      expect(service.stderr()).toBe(`[${role}] ${REFUSAL}\n`);
      expect(service.stdout()).toBe('');
      expect(await contentsOf(prefix)).toEqual({});
    },
    60_000,
  );

  it('When a development ingress listens on 0.0.0.0 with JWT_SECRET, then it says in one line that it has no sandbox, makes no sandbox administrator and keeps no generated secret', async () => {
    const prefix = uniquePrefix();
    const ingress = await startIngress(prefix, { HOST: '0.0.0.0', JWT_SECRET: SECRET });
    const port = Number(new URL(ingress.baseUrl).port);
    const sandboxLine = `[sandbox] ${developmentBeyondLoopback('0.0.0.0')}`;
    await eventually(() => ingress.process.stdout().includes(sandboxLine), 15_000);
    // Give a late banner the time it would take.
    await new Promise((resolve) => setTimeout(resolve, 500));

    const lines = ingress.process.stdout().split('\n');
    expect(lines.filter((line) => line.startsWith('['))).toEqual([
      `[ingress] listening on http://0.0.0.0:${port} (reachable from other machines)`,
      sandboxLine,
    ]);
    expect(ingress.process.stdout()).not.toContain(SANDBOX_BANNER_TITLE);
    const keys = Object.keys(await contentsOf(prefix));
    expect(keys).not.toContain(createKeys(prefix).generatedJwtSecret());
    // No account at all: no user stream under any id (a sandbox account's id is keyed, ADR 0035).
    const userStream = createKeys(prefix).aggregateStream('user', 'x').replace(/x$/, '');
    const userStreamTail = userStream.slice(userStream.indexOf('}') + 1);
    expect(keys.filter((key) => key.includes(userStreamTail))).toEqual([]);
  }, 60_000);

  it('When the Redis of a loopback sandbox is later served by an ingress on 0.0.0.0, then the sandbox administrator cannot sign in by any scheme and the start says so in one line', async () => {
    const prefix = uniquePrefix();
    const currentUser = async (baseUrl: string, authorization: string) => {
      const answer = await exchange(baseUrl, 'POST', '/api/readmodel', {
        authorization,
        body: { query: { queryType: 'CurrentUser' } },
      });
      return { status: answer.ok ? answer.status : undefined };
    };
    // On loopback, as before: the banner's password signs in, with Basic and with a token.
    const local = await startIngress(prefix, { JWT_SECRET: SECRET });
    await local.process.waitForOutput(SANDBOX_BANNER_TITLE, 30_000);
    const password = /^ {4}password: {2}(\S+)$/m.exec(local.process.stdout())?.[1] ?? '';
    const basic = basicAuth(SANDBOX_ADMIN_EMAIL, password);
    expect((await currentUser(local.baseUrl, basic)).status).toBe(200);
    const bearer = await bearerToken(local.baseUrl, SANDBOX_ADMIN_EMAIL, password);
    expect((await currentUser(local.baseUrl, bearer)).status).toBe(200);
    local.process.child.kill('SIGTERM');
    await local.process.exited;

    // The same Redis (prefix), now served beyond loopback; requests still go to 127.0.0.1.
    const wide = await startIngress(prefix, { HOST: '0.0.0.0', JWT_SECRET: SECRET });
    const refusedLine = sandboxAccountsRefusedLine('0.0.0.0', [SANDBOX_ADMIN_EMAIL]);
    await eventually(() => wide.process.stdout().includes(refusedLine), 15_000);
    expect(
      wide.process
        .stdout()
        .split('\n')
        .filter((line) => line === refusedLine),
    ).toHaveLength(1);
    expect((await currentUser(wide.baseUrl, basic)).status).toBe(401);
    expect((await currentUser(wide.baseUrl, bearer)).status).toBe(401);
    const token = await exchange(wide.baseUrl, 'POST', '/api/auth/token', {
      body: { grant_type: 'password', username: SANDBOX_ADMIN_EMAIL, password },
    });
    // As a wrong password is answered: nothing tells a guesser the password was right.
    expect(token).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
  }, 120_000);

  it('When NODE_ENV=production and HOST is unset, then the ingress binds every interface as before and prints no console line', async () => {
    const prefix = uniquePrefix();
    const ingress = await startIngress(prefix, { NODE_ENV: 'production', JWT_SECRET: SECRET });
    const listening = ingress.process
      .stdout()
      .split('\n')
      .find((line) => line.includes('"message":"ingress listening"'));
    expect(JSON.parse(listening ?? '{}')).toMatchObject({ host: '0.0.0.0' });
    expect(
      ingress.process
        .stdout()
        .split('\n')
        .filter((line) => line.startsWith('[')),
    ).toEqual([]);
  }, 60_000);

  describe('webhook targets', () => {
    const create = async (env: Record<string, string>) => {
      const subject = await createTestApp({ JWT_SECRET: SECRET, WEBHOOK_ALLOW_PRIVATE_TARGETS: '', ...env });
      try {
        const admin = await adminCommander(subject.app, (user) => subject.createUser(user));
        const res = await admin.send('CreateWebhookSubscription', {
          aggregateRootId: randomUUID(),
          url: 'http://127.0.0.1:9/hook',
          eventTypes: ['FantasyTeamLinkedEvent'],
        });
        return { status: res.status, text: res.text };
      } finally {
        await subject.close();
      }
    };

    it('When development runs on loopback and WEBHOOK_ALLOW_PRIVATE_TARGETS is unset, then a subscription to an http loopback receiver is accepted', async () => {
      expect(await create({ NODE_ENV: 'development', HOST: '127.0.0.1' })).toMatchObject({ status: 200 });
    });

    it('When development listens beyond loopback, or runs in production, then the same subscription is refused', async () => {
      const beyondLoopback: Record<string, string>[] = [
        { NODE_ENV: 'development', HOST: '0.0.0.0' },
        { NODE_ENV: 'production' },
      ];
      for (const env of beyondLoopback) {
        const refused = await create(env);
        expect(refused.status).toBe(400);
        // The refusal names the setting that would allow it.
        expect(refused.text).toContain('WEBHOOK_ALLOW_PRIVATE_TARGETS=true');
      }
    });

    it('When a development worker is started on its own, without HOST and WEBHOOK_ALLOW_PRIVATE_TARGETS, then it refuses a delivery to a loopback receiver and the delivery log says so', async () => {
      // A receiver on loopback that only counts: the https attempt must never reach it.
      let connections = 0;
      const receiver = createServer((socket) => {
        connections++;
        socket.destroy();
      });
      await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
      const port = (receiver.address() as AddressInfo).port;
      const prefix = uniquePrefix();
      // The ingress knows it listens on loopback, so it accepts the subscription...
      const subject = await createTestApp({
        NODE_ENV: 'development',
        HOST: '127.0.0.1',
        JWT_SECRET: SECRET,
        WEBHOOK_ALLOW_PRIVATE_TARGETS: '',
        REDIS_KEY_PREFIX: prefix,
      });
      try {
        const admin = await adminCommander(subject.app, (user) => subject.createUser(user));
        const subscriptionId = randomUUID();
        const subscribed = await admin.send('CreateWebhookSubscription', {
          aggregateRootId: subscriptionId,
          url: `https://127.0.0.1:${port}/hook`,
          eventTypes: ['FantasyTeamCreatedEvent'],
        });
        expect(subscribed.status).toBe(200);
        // ...but the worker, as `npm run start:worker` on a shared box starts it, binds nothing:
        // its HOST (unset) proves nothing about where it runs.
        const worker = startServiceProcess('workers/main.ts', env(prefix, { JWT_SECRET: SECRET }));
        started.push(worker);
        await worker.waitForOutput('worker ready', 60_000);
        const team = await admin.send('CreateFantasyTeam', {
          aggregateRootId: randomUUID(),
          name: 'refused',
        });
        expect(team.status).toBe(200);

        let attempts: { httpStatus: number | null; error: string | null }[] = [];
        await eventually(async () => {
          const log = await admin.query({ queryType: 'GetWebhookDeliveries', subscriptionId });
          attempts = (log.body as { results: typeof attempts }).results;
          return attempts.length > 0;
        }, 30_000);
        expect(attempts[0]).toMatchObject({ httpStatus: null, error: 'target refused: private address' });
        expect(connections).toBe(0);
      } finally {
        await subject.close();
        await new Promise<void>((resolve) => receiver.close(() => resolve()));
      }
    }, 120_000);

    it('When `npm start` runs development on loopback without WEBHOOK_ALLOW_PRIVATE_TARGETS, then it tells its worker too, and a loopback receiver gets the delivery', async () => {
      const receiver = await startReceiver();
      const prefix = uniquePrefix();
      const adminEmail = 'npm-start-webhooks@example.com';
      const adminPassword = 'npm-start-webhooks-password';
      const supervisor = startServiceProcess(
        'scripts/start-all.ts',
        env(prefix, {
          PORT: '0',
          ADMIN_EMAIL: adminEmail,
          ADMIN_PASSWORD: adminPassword,
          JWT_SECRET: SECRET,
        }),
      );
      started.push(supervisor);
      try {
        await supervisor.waitForOutput('"message":"ingress listening"', 60_000);
        await supervisor.waitForOutput('worker ready', 60_000);
        const listening = supervisor
          .stdout()
          .split('\n')
          .find((line) => line.includes('"message":"ingress listening"'));
        const { port } = JSON.parse(listening ?? '{}') as { port: number };
        const baseUrl = `http://127.0.0.1:${port}`;
        // The ingress makes the administrator before it listens.
        const authorization = await bearerToken(baseUrl, adminEmail, adminPassword);
        const send = (commandType: string, command: Record<string, unknown>) =>
          exchange(baseUrl, 'POST', '/api/command', {
            authorization,
            body: commandBody(commandType, command),
          });

        const subscribed = await send('CreateWebhookSubscription', {
          aggregateRootId: randomUUID(),
          url: receiver.url,
          eventTypes: ['FantasyTeamCreatedEvent'],
        });
        expect(subscribed).toMatchObject({ ok: true, status: 200 });
        const teamId = randomUUID();
        expect(await send('CreateFantasyTeam', { aggregateRootId: teamId, name: 'delivered' })).toMatchObject(
          {
            ok: true,
            status: 200,
          },
        );
        await eventually(() => receiver.received.some((delivery) => delivery.body.includes(teamId)), 30_000);
      } finally {
        await receiver.stop();
      }
    }, 150_000);
  });
});
