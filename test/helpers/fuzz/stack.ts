import { randomUUID } from 'node:crypto';

import { testRedisEnv, uniquePrefix } from '../app-fixture';
import {
  eventually,
  isAlive,
  killAll,
  type ServiceProcess,
  startIngressProcess,
  startServiceProcess,
} from '../processes';
import type { AccountName, KnownData } from './requests';

/**
 * The service the contract fuzzer talks to: a real ingress process and a real worker process on
 * the test run's Redis under a key prefix of their own, reached over real HTTP, with an account of
 * every role (the bootstrap Admin from ADMIN_EMAIL/ADMIN_PASSWORD; a Member, a UserManager and a
 * ServiceAccount seeded through a UserSeeding import), a team, imported players and import jobs.
 */

/** The HTTP timeouts the ingress is started with, small so the socket cases finish quickly. */
export const FUZZ_HTTP_TIMEOUTS = { requestMs: 3_000, headersMs: 2_000, keepAliveMs: 1_000 } as const;

/** BODY_LIMIT of the fuzzed ingress (its default). */
export const FUZZ_BODY_LIMIT_BYTES = 1024 * 1024;

export interface Account {
  readonly email: string;
  readonly password: string;
  readonly bearer: string;
}

export interface FuzzStack {
  readonly baseUrl: string;
  readonly host: string;
  readonly port: number;
  readonly ingress: ServiceProcess;
  readonly worker: ServiceProcess;
  readonly accounts: Readonly<Record<AccountName, Account>>;
  readonly metricsToken: string;
  readonly known: KnownData;
  /** Both processes still run. */
  alive(): boolean;
  close(): Promise<void>;
}

const TEAM_IDS = ['0f6f6b52-3a8e-4c1d-9b7e-2d4c6a8e0f11', '0f6f6b52-3a8e-4c1d-9b7e-2d4c6a8e0f12'];
const PLAYERS = [1, 2, 3].map((n) => ({
  feedId: 9_100 + n,
  fantasyId: 8_100 + n,
  platformId: `7c0d9a2e-5b1f-4e3a-8d6c-00000000000${n}`,
}));

function basic(email: string, password: string): string {
  return `Basic ${Buffer.from(`${email}:${password}`).toString('base64')}`;
}

async function post(baseUrl: string, path: string, body: unknown, authorization?: string) {
  const res = await fetch(`${baseUrl}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(authorization ? { authorization } : {}) },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, text, body: (text ? JSON.parse(text) : undefined) as Record<string, unknown> };
}

export async function startFuzzStack(): Promise<FuzzStack> {
  const tag = randomUUID().slice(0, 8);
  const admin = { email: `fuzz-admin-${tag}@example.com`, password: 'fuzz admin password 1' };
  const metricsToken = `fuzz-metrics-token-${tag}`;
  const env = {
    ...testRedisEnv(),
    REDIS_KEY_PREFIX: uniquePrefix(),
    NODE_ENV: 'test',
    LOG_LEVEL: 'info',
    JWT_SECRET: 'contract-fuzzer-secret-of-at-least-32-characters',
    ADMIN_EMAIL: admin.email,
    ADMIN_PASSWORD: admin.password,
    METRICS_TOKEN: metricsToken,
    // The fuzzer sends thousands of requests, many with wrong credentials: the limits have tests of
    // their own, and a 429 here would only hide what is behind it.
    RATE_LIMIT_PER_ACCOUNT: '0',
    AUTH_MAX_FAILURES_PER_ACCOUNT: '10000',
    AUTH_MAX_FAILURES_PER_ADDRESS: '100000',
    // The HTTP timeouts, small so that the malformed-HTTP cases are decided within seconds.
    HTTP_REQUEST_TIMEOUT_MS: String(FUZZ_HTTP_TIMEOUTS.requestMs),
    HTTP_HEADERS_TIMEOUT_MS: String(FUZZ_HTTP_TIMEOUTS.headersMs),
    HTTP_KEEP_ALIVE_TIMEOUT_MS: String(FUZZ_HTTP_TIMEOUTS.keepAliveMs),
  };
  const worker = startServiceProcess('workers/main.ts', env);
  let ingress: ServiceProcess | undefined;
  try {
    const started = await startIngressProcess(env);
    ingress = started.process;
    await worker.waitForOutput('worker ready', 30_000);
    const { baseUrl } = started;
    const port = Number(new URL(baseUrl).port);

    // The other roles, seeded as an operator would: a UserSeeding import by the Admin.
    const others = {
      member: {
        email: `fuzz-member-${tag}@example.com`,
        password: 'fuzz member password',
        userType: 'Human',
        roles: ['Member'],
      },
      userManager: {
        email: `fuzz-manager-${tag}@example.com`,
        password: 'fuzz manager password',
        userType: 'Human',
        roles: ['UserManager'],
      },
      serviceAccount: {
        email: `fuzz-service-${tag}@example.com`,
        password: 'fuzz service password',
        userType: 'ServiceAccount',
        roles: ['ServiceAccount'],
      },
    } as const;
    const adminBasic = basic(admin.email, admin.password);
    const seeding = await post(
      baseUrl,
      '/api/import',
      {
        requestId: randomUUID(),
        importerType: 'UserSeeding',
        importData: {
          users: Object.values(others).map(({ email, password, userType, roles }) => ({
            email,
            password,
            userType,
            roles,
          })),
        },
      },
      adminBasic,
    );
    if (seeding.status !== 200) throw new Error(`seeding answered ${seeding.status}: ${seeding.text}`);
    const players = await post(
      baseUrl,
      '/api/import',
      {
        requestId: randomUUID(),
        importerType: 'PlayerSeeding',
        importData: {
          season: '2026',
          players: PLAYERS.map((player) => ({
            ...player,
            leaguePlayerId: `L${player.feedId}`,
            stats: { rating: 7.5, price: 100 },
          })),
        },
      },
      adminBasic,
    );
    if (players.status !== 200) throw new Error(`player seeding answered ${players.status}: ${players.text}`);
    const importJobIds = [String(seeding.body.importJobId), String(players.body.importJobId)];
    for (const importJobId of importJobIds) {
      await eventually(async () => {
        const job = await post(
          baseUrl,
          '/api/readmodel',
          { query: { queryType: 'GetImportJobResult', importJobId } },
          adminBasic,
        );
        const result = (job.body.results as { status: string }[] | undefined)?.[0];
        if (result?.status === 'Failed') throw new Error(`import ${importJobId} failed: ${job.text}`);
        return result?.status === 'Completed';
      }, 30_000);
    }

    const token = async (email: string, password: string) => {
      const res = await post(baseUrl, '/api/auth/token', {
        grant_type: 'password',
        username: email,
        password,
      });
      if (res.status !== 200) throw new Error(`no token for ${email}: ${res.status} ${res.text}`);
      return `Bearer ${String(res.body.access_token)}`;
    };
    const accounts = {
      admin: { ...admin, bearer: await token(admin.email, admin.password) },
      member: { ...others.member, bearer: await token(others.member.email, others.member.password) },
      userManager: {
        ...others.userManager,
        bearer: await token(others.userManager.email, others.userManager.password),
      },
      serviceAccount: {
        ...others.serviceAccount,
        bearer: await token(others.serviceAccount.email, others.serviceAccount.password),
      },
    };
    for (const [i, aggregateRootId] of TEAM_IDS.entries()) {
      const created = await post(
        baseUrl,
        '/api/command',
        { commandType: 'CreateFantasyTeam', command: { aggregateRootId, name: `Fuzz XI ${i}` } },
        accounts.member.bearer,
      );
      if (created.status !== 200) throw new Error(`team not created: ${created.status} ${created.text}`);
    }

    const worker_ = worker;
    const ingress_ = ingress;
    return {
      baseUrl,
      host: '127.0.0.1',
      port,
      ingress: ingress_,
      worker: worker_,
      accounts,
      metricsToken,
      known: {
        accounts,
        teamIds: TEAM_IDS,
        importJobIds,
        platformIds: PLAYERS.map((player) => player.platformId),
        feedIds: PLAYERS.map((player) => player.feedId),
        fantasyIds: PLAYERS.map((player) => player.fantasyId),
        bodyLimitBytes: FUZZ_BODY_LIMIT_BYTES,
      },
      alive: () => isAlive(ingress_) && isAlive(worker_),
      close: () => killAll(ingress_, worker_),
    };
  } catch (error) {
    await killAll(ingress, worker);
    throw error;
  }
}
