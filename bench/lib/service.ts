import { randomBytes, randomUUID } from 'node:crypto';

import { type LocalRedis, startLocalRedis } from '../../scripts/lib/redis-server';
import { createKeys, type Keys } from '../../shared/redis/keys';
import { logMentions, scratchDir, type ServerProcess, startServer, track } from './processes';

/**
 * The compiled service as a bench runs it: ingress and worker processes on a private Redis, one
 * key prefix per bench run, the bootstrap Admin as the caller.
 */

/** Fresh per run: the bench never reuses a credential, and these never leave the machine. */
export interface BenchCredentials {
  readonly adminEmail: string;
  readonly adminPassword: string;
  readonly jwtSecret: string;
}

export function freshCredentials(adminEmail = 'bench-admin@example.com'): BenchCredentials {
  return {
    adminEmail,
    adminPassword: randomBytes(24).toString('base64url'),
    jwtSecret: randomBytes(48).toString('base64url'),
  };
}

/**
 * One bench account sends thousands of requests a second: the per-account limit stays on (its
 * Redis counter is part of every request's cost) but high enough never to refuse one.
 */
export const NEVER_REACHED_RATE_LIMIT = '1000000000';

/** The environment every process of one service shares (each adds its own LOG_LEVEL and tuning). */
export function serviceEnv(options: {
  readonly redisUrl: string;
  readonly keyPrefix: string;
  readonly credentials: BenchCredentials;
  readonly extra?: Readonly<Record<string, string>>;
}): Record<string, string> {
  return {
    NODE_ENV: 'production',
    REDIS_URL: options.redisUrl,
    REDIS_KEY_PREFIX: options.keyPrefix,
    ADMIN_EMAIL: options.credentials.adminEmail,
    ADMIN_PASSWORD: options.credentials.adminPassword,
    JWT_SECRET: options.credentials.jwtSecret,
    RATE_LIMIT_PER_ACCOUNT: NEVER_REACHED_RATE_LIMIT,
    ...options.extra,
  };
}

/** `node --cpu-prof` arguments when BENCH_CPU_PROF=1: the profile is written when the process stops. */
function profileArgs(name: string): string[] {
  if (process.env.BENCH_CPU_PROF !== '1') return [];
  const dir = scratchDir();
  // Numbered: a bench that starts several ingresses (one per mode) keeps each one's profile.
  profiles += 1;
  const file = `${name}-${profiles}.cpuprofile`;
  process.stderr.write(`[bench] CPU profile of ${name}: ${dir}/${file}\n`);
  return ['--cpu-prof', `--cpu-prof-dir=${dir}`, `--cpu-prof-name=${file}`];
}
let profiles = 0;

/** `node dist/ingress/main.js`, ready once it answers /readyz (it listens only after bootstrapping the Admin). */
export function startIngress(name: string, env: Readonly<Record<string, string>>): Promise<ServerProcess> {
  return startServer({
    name,
    args: [...profileArgs(name), 'dist/ingress/main.js'],
    env,
    readyPath: '/readyz',
  });
}

/**
 * `node dist/workers/main.js` (the projector and the import consumer), ready once it logs
 * "worker ready"; so its LOG_LEVEL must be info or lower (a worker logs two lines per import, nothing
 * per event).
 */
export function startWorker(name: string, env: Readonly<Record<string, string>>): Promise<ServerProcess> {
  return startServer({
    name,
    args: [...profileArgs(name), 'dist/workers/main.js'],
    env: { LOG_LEVEL: 'info', ...env },
    ready: logMentions('"worker ready"'),
  });
}

/** A private Redis with the compiled service on it, started by startService. */
export interface BenchService {
  readonly redisServer: LocalRedis;
  /** `bench-<bench>-<pid>:`, so no earlier run's keys are ever read. */
  readonly keyPrefix: string;
  readonly keys: Keys;
  /** The bootstrap Admin's, fresh for this run. */
  readonly credentials: BenchCredentials;
  /** What every process of the service shares: start another worker with it. */
  readonly env: Readonly<Record<string, string>>;
  readonly ingress: ServerProcess;
  readonly workers: readonly ServerProcess[];
}

export interface StartServiceOptions {
  /** Added to every process's environment (serviceEnv's `extra`). */
  readonly env?: Readonly<Record<string, string>>;
  /** Added to the ingress's environment only; its LOG_LEVEL is warn unless this sets it. */
  readonly ingressEnv?: Readonly<Record<string, string>>;
  /** Worker processes to start: `worker` when one, `worker1`... when more (default 1). */
  readonly workers?: number;
  /** Added to each worker's environment only. */
  readonly workerEnv?: Readonly<Record<string, string>>;
}

/**
 * Starts a private Redis, one ingress and `workers` workers for the bench `bench`, every one
 * tracked, so stopAll() stops them.
 */
export async function startService(bench: string, options: StartServiceOptions = {}): Promise<BenchService> {
  const redisServer = track(await startLocalRedis());
  const keyPrefix = `bench-${bench}-${process.pid}:`;
  const credentials = freshCredentials();
  const env = serviceEnv({
    redisUrl: redisServer.url,
    keyPrefix,
    credentials,
    ...(options.env ? { extra: options.env } : {}),
  });
  const ingress = await startIngress('ingress', { ...env, LOG_LEVEL: 'warn', ...options.ingressEnv });
  const workers: ServerProcess[] = [];
  const workerCount = options.workers ?? 1;
  for (let i = 1; i <= workerCount; i += 1) {
    const name = workerCount === 1 ? 'worker' : `worker${i}`;
    workers.push(await startWorker(name, { ...env, ...options.workerEnv }));
  }
  return { redisServer, keyPrefix, keys: createKeys(keyPrefix), credentials, env, ingress, workers };
}

/** bench/baselines/bare-express.cjs: Express 5 and express.json() answering one POST route. */
export function startBareExpress(): Promise<ServerProcess> {
  return startServer({
    name: 'bare-express',
    args: ['bench/baselines/bare-express.cjs'],
    env: { NODE_ENV: 'production' },
    readyPath: '/',
  });
}

/**
 * bench/baselines/ref-read.cjs: ref-read, the least a CurrentUser read by Bearer must do (Express 5,
 * express.json(), an HS256 verify with a KeyObject made once). It verifies tokens the service
 * issued under `credentials`' JWT_SECRET.
 */
export function startRefRead(credentials: BenchCredentials): Promise<ServerProcess> {
  return startServer({
    name: 'ref-read',
    args: ['bench/baselines/ref-read.cjs'],
    env: { NODE_ENV: 'production', JWT_SECRET: credentials.jwtSecret },
    readyPath: '/',
  });
}

/**
 * bench/baselines/ref-command.cjs: ref-command, ref-read plus the two Redis round trips of a locked,
 * fenced append (lock-and-load, append-and-unlock), on `redisUrl` under keys of its own.
 */
export function startRefCommand(credentials: BenchCredentials, redisUrl: string): Promise<ServerProcess> {
  return startServer({
    name: 'ref-command',
    args: ['bench/baselines/ref-command.cjs'],
    env: {
      NODE_ENV: 'production',
      JWT_SECRET: credentials.jwtSecret,
      REDIS_URL: redisUrl,
      REDIS_KEY_PREFIX: `bench-ref-command-${process.pid}:`,
    },
    readyPath: '/',
  });
}

/** Sends one command to POST /api/command as `token`'s caller; throws unless it is answered 200. */
export async function commandOrThrow(
  ingress: ServerProcess,
  token: string,
  commandType: string,
  command: Readonly<Record<string, unknown>>,
): Promise<void> {
  const answer = await postJson(
    `${ingress.baseUrl}/api/command`,
    { commandType, command },
    { authorization: `Bearer ${token}` },
  );
  if (answer.status !== 200)
    throw new Error(`${commandType} answered ${answer.status}: ${JSON.stringify(answer.body)}`);
}

export const JSON_HEADERS: Readonly<Record<string, string>> = { 'content-type': 'application/json' };

/** POSTs JSON and reads the answer; throws on a network error, never on a status. */
export async function postJson(
  url: string,
  body: unknown,
  headers: Readonly<Record<string, string>> = {},
): Promise<{ status: number; body: unknown }> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { ...JSON_HEADERS, ...headers },
    body: JSON.stringify(body),
  });
  const text = await response.text();
  let parsed: unknown = text;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch {
    // Not JSON: kept as text for the error message.
  }
  return { status: response.status, body: parsed };
}

/** A Bearer token for the Admin from POST /api/auth/token. */
export async function issueToken(ingress: ServerProcess, credentials: BenchCredentials): Promise<string> {
  const answer = await postJson(`${ingress.baseUrl}/api/auth/token`, {
    grant_type: 'password',
    username: credentials.adminEmail,
    password: credentials.adminPassword,
  });
  const token = (answer.body as { access_token?: unknown } | null)?.access_token;
  if (answer.status !== 200 || typeof token !== 'string') {
    throw new Error(`POST /api/auth/token answered ${answer.status}: ${JSON.stringify(answer.body)}`);
  }
  return token;
}

/** The Admin's Basic Authorization header value. */
export function basicAuthorization(credentials: BenchCredentials): string {
  return `Basic ${Buffer.from(`${credentials.adminEmail}:${credentials.adminPassword}`).toString('base64')}`;
}

/**
 * Creates a role-less Member (an inline High UserSeeding by the bootstrap Admin) and returns its Basic
 * Authorization header value: the account the import benches send as.
 */
export async function createMember(
  ingress: ServerProcess,
  credentials: BenchCredentials,
  password: string,
): Promise<string> {
  const email = `member-${randomUUID().slice(0, 8)}@example.com`;
  const answer = await postJson(
    `${ingress.baseUrl}/api/import`,
    {
      requestId: randomUUID(),
      importerType: 'UserSeeding',
      priority: 'High',
      importData: { users: [{ email, userType: 'Human', roles: ['Member'], password }] },
    },
    { authorization: basicAuthorization(credentials) },
  );
  const status = (answer.body as { status?: unknown } | null)?.status;
  if (answer.status !== 200 || status !== 'Completed')
    throw new Error(`the Member was not created: ${answer.status} ${JSON.stringify(answer.body)}`);
  return `Basic ${Buffer.from(`${email}:${password}`).toString('base64')}`;
}

/** Runs `work` over `items` with at most `limit` at once (set-up work: creating teams). */
export async function forEachConcurrently<T>(
  items: readonly T[],
  limit: number,
  work: (item: T, index: number) => Promise<void>,
): Promise<void> {
  let next = 0;
  const lane = async () => {
    while (next < items.length) {
      const index = next++;
      await work(items[index] as T, index);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, lane));
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
