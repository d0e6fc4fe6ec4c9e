import { randomBytes } from 'node:crypto';

import { logMentions, scratchDir, startServer, type ServerProcess } from './processes';

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
  process.stderr.write(`[bench] CPU profile of ${name}: ${dir}/${name}.cpuprofile\n`);
  return ['--cpu-prof', `--cpu-prof-dir=${dir}`, `--cpu-prof-name=${name}.cpuprofile`];
}

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
