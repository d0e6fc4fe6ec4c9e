import { randomBytes } from 'node:crypto';

import { startLocalRedis } from '../scripts/lib/redis-server';
import { measureInterleaved, reportWorkloadRun, settingsFromEnv, type Workload } from './lib/load';
import { ensureBuilt, scratchDir, startServer, stopAll, track, type ServerProcess } from './lib/processes';
import { compareWith, machineInfo, problemsOf, type BenchReport } from './lib/report';
import { runBenches } from './lib/runner';
import { NEVER_REACHED_RATE_LIMIT } from './lib/service';

/**
 * CurrentUser through POST /api/readmodel, by Basic (verification cache warm) and by Bearer,
 * against a bare Express 5 app measured in the same run with the same load generator.
 *
 * Settings: BENCH_CONNECTIONS, BENCH_WARMUP, BENCH_DURATION (seconds), BENCH_ROUNDS;
 * BENCH_CPU_PROF=1 writes a .cpuprofile of each ingress (when it stops) to a temporary directory it names.
 */

const NAME = 'current-user';
/** The issue's requirement: each authenticated workload at least this share of the baseline's rate. */
const TARGET_RATIO = 0.75;
const BODY = JSON.stringify({ query: { queryType: 'CurrentUser' }, skip: 0, take: 10 });
const JSON_HEADERS = { 'content-type': 'application/json' };

const ADMIN_EMAIL = 'bench-admin@example.com';
/** Fresh per run: the bench never reuses a credential, and these never leave the machine. */
const ADMIN_PASSWORD = randomBytes(24).toString('base64url');
const JWT_SECRET = randomBytes(48).toString('base64url');
/**
 * The longest cache life the config allows, so the cache stays warm for the whole bench; with the
 * default (60 s) it would expire mid-bench and the requests arriving then would hash again, which
 * is another workload (a cold cache).
 */
const AUTH_CACHE_TTL_SECONDS = '3600';

type LogLevel = 'warn' | 'info';

async function startIngress(redisUrl: string, logLevel: LogLevel): Promise<ServerProcess> {
  const profile = process.env.BENCH_CPU_PROF === '1';
  const profileDir = scratchDir();
  if (profile) {
    process.stderr.write(
      `[bench] CPU profile of the ${logLevel} ingress: ${profileDir}/ingress-${logLevel}.cpuprofile\n`,
    );
  }
  return startServer({
    name: `ingress-${logLevel}`,
    args: [
      ...(profile
        ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`, `--cpu-prof-name=ingress-${logLevel}.cpuprofile`]
        : []),
      'dist/ingress/main.js',
    ],
    env: {
      NODE_ENV: 'production',
      REDIS_URL: redisUrl,
      // Its own keys, so the two ingress processes (and any earlier run) never see each other's.
      REDIS_KEY_PREFIX: `bench-${NAME}-${process.pid}-${logLevel}:`,
      LOG_LEVEL: logLevel,
      ADMIN_EMAIL,
      ADMIN_PASSWORD,
      JWT_SECRET,
      AUTH_CACHE_TTL_SECONDS,
      RATE_LIMIT_PER_ACCOUNT: NEVER_REACHED_RATE_LIMIT,
    },
    readyPath: '/readyz',
  });
}

async function issueToken(ingress: ServerProcess): Promise<string> {
  const response = await fetch(`${ingress.baseUrl}/api/auth/token`, {
    method: 'POST',
    headers: JSON_HEADERS,
    body: JSON.stringify({ grant_type: 'password', username: ADMIN_EMAIL, password: ADMIN_PASSWORD }),
  });
  const answer = (await response.json()) as { access_token?: unknown };
  if (!response.ok || typeof answer.access_token !== 'string') {
    throw new Error(`POST /api/auth/token answered ${response.status}: ${JSON.stringify(answer)}`);
  }
  return answer.access_token;
}

/**
 * Sends the workload's request once and checks it does the intended work (200, the admin, by the
 * intended scheme), so the load measures CurrentUser and not a 401. For Basic this also fills the
 * verification cache: the one argon2 hash happens here, not under load.
 */
async function checkOnce(workload: Workload, scheme: 'Basic' | 'Bearer'): Promise<void> {
  const response = await fetch(workload.url, {
    method: workload.method,
    headers: { ...workload.headers },
    body: workload.body ?? null,
  });
  const text = await response.text();
  const item = response.ok
    ? (JSON.parse(text) as { data?: { email?: string; authenticationType?: string }[] }).data?.[0]
    : undefined;
  if (item?.email !== ADMIN_EMAIL || item.authenticationType !== scheme) {
    throw new Error(`${workload.name}: expected the admin by ${scheme}, got ${response.status} ${text}`);
  }
}

function workloadsFor(ingress: ServerProcess, token: string, logLevel: LogLevel) {
  const url = `${ingress.baseUrl}/api/readmodel`;
  const basic = `Basic ${Buffer.from(`${ADMIN_EMAIL}:${ADMIN_PASSWORD}`).toString('base64')}`;
  const suffix = logLevel === 'warn' ? '' : `, LOG_LEVEL=${logLevel}`;
  return {
    basic: {
      name: `CurrentUser by Basic (cache warm${suffix})`,
      url,
      method: 'POST',
      headers: { ...JSON_HEADERS, authorization: basic },
      body: BODY,
    } satisfies Workload,
    bearer: {
      name: `CurrentUser by Bearer${suffix ? ` (${suffix.slice(2)})` : ''}`,
      url,
      method: 'POST',
      headers: { ...JSON_HEADERS, authorization: `Bearer ${token}` },
      body: BODY,
    } satisfies Workload,
  };
}

/** Starts Redis, the baseline and two ingress processes (warn and info), measures, stops everything. */
export async function run(): Promise<BenchReport> {
  const machine = machineInfo();
  const settings = settingsFromEnv({ connections: 50, warmupSeconds: 2, durationSeconds: 8, rounds: 3 });
  ensureBuilt();
  try {
    const redis = track(await startLocalRedis());
    const baselineServer = await startServer({
      name: 'bare-express',
      args: ['bench/baselines/bare-express.cjs'],
      env: { NODE_ENV: 'production' },
      readyPath: '/',
    });
    const quiet = await startIngress(redis.url, 'warn');
    const chatty = await startIngress(redis.url, 'info');

    const baseline: Workload = {
      name: 'bare Express 5 + express.json() (baseline)',
      url: `${baselineServer.baseUrl}/api/readmodel`,
      method: 'POST',
      headers: JSON_HEADERS,
      body: BODY,
    };
    const atWarn = workloadsFor(quiet, await issueToken(quiet), 'warn');
    const atInfo = workloadsFor(chatty, await issueToken(chatty), 'info');
    for (const { basic, bearer } of [atWarn, atInfo]) {
      await checkOnce(basic, 'Basic');
      await checkOnce(bearer, 'Bearer');
    }

    const measured = await measureInterleaved(
      [baseline, atWarn.basic, atWarn.bearer, atInfo.basic, atInfo.bearer],
      settings,
      reportWorkloadRun,
    );
    const [base, basicWarn, bearerWarn, basicInfo, bearerInfo] = measured;
    if (!base || !basicWarn || !bearerWarn || !basicInfo || !bearerInfo)
      throw new Error('a workload is missing');
    const rows = [
      ...compareWith(base, [basicWarn, bearerWarn], TARGET_RATIO),
      ...compareWith(base, [basicInfo, bearerInfo], null).slice(1),
    ];

    const report: BenchReport = {
      name: NAME,
      title: 'CurrentUser (POST /api/readmodel) vs a bare Express 5 app',
      settings,
      machine,
      rows,
      notes: [
        `Body of every request: \`${BODY}\` (the baseline gets it too, without an Authorization header).`,
        'The baseline (bench/baselines/bare-express.cjs) is Express 5 with express.json() and one POST route answering JSON; like the service it disables X-Powered-By and ETag.',
        'The service runs compiled (`npm run build`, then `node dist/ingress/main.js`, NODE_ENV=production) against a private redis-server on loopback, as the bootstrap Admin.',
        `The target (${TARGET_RATIO} of the baseline's rate) is judged with LOG_LEVEL=warn, so no access line reaches stdout; the LOG_LEVEL=info rows (the default level: one JSON access line per request, to a file) are for reference.`,
        `Basic: the first request (before any load) hashes the password; AUTH_CACHE_TTL_SECONDS=${AUTH_CACHE_TTL_SECONDS} keeps the verification cache warm for the whole bench. Bearer: a JWT from POST /api/auth/token.`,
        '"vs baseline" is the ratio of the medians; each round runs every workload once, in rotated order.',
      ],
      problems: problemsOf(measured),
    };
    return report;
  } finally {
    await stopAll();
  }
}

if (require.main === module) void runBenches([{ name: NAME, load: () => Promise.resolve({ run }) }]);
