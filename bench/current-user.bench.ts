import { startLocalRedis } from '../scripts/lib/redis-server';
import { measureInterleaved, reportWorkloadRun, settingsFromEnv, type Workload } from './lib/load';
import { ensureBuilt, type ServerProcess, stopAll, track } from './lib/processes';
import { type BenchReport, compareWith, machineInfo, problemsOf } from './lib/report';
import { runBenches } from './lib/runner';
import {
  basicAuthorization,
  freshCredentials,
  issueToken,
  JSON_HEADERS,
  serviceEnv,
  startBareExpress,
  startIngress,
} from './lib/service';

/**
 * CurrentUser through POST /api/readmodel, by Basic (verification cache warm) and by Bearer,
 * against a bare Express 5 app measured in the same run with the same load generator.
 *
 * Settings: BENCH_CONNECTIONS, BENCH_WARMUP, BENCH_DURATION (seconds), BENCH_ROUNDS;
 * BENCH_CPU_PROF=1 writes a .cpuprofile of each ingress (when it stops) to a temporary directory it names.
 */

const NAME = 'current-user';
/** The target: each authenticated workload at least this share of the baseline's rate. */
const TARGET_RATIO = 0.75;
const BODY = JSON.stringify({ query: { queryType: 'CurrentUser' }, skip: 0, take: 10 });

const credentials = freshCredentials();
/**
 * The longest cache life the config allows, so the cache stays warm for the whole bench; with the
 * default (60 s) it would expire mid-bench and the requests arriving then would hash again, which
 * is another workload (a cold cache).
 */
const AUTH_CACHE_TTL_SECONDS = '3600';

type LogLevel = 'warn' | 'info';

/** An ingress logging at `logLevel`, with keys of its own, so the two never see each other's. */
function startIngressAt(redisUrl: string, logLevel: LogLevel): Promise<ServerProcess> {
  const env = serviceEnv({
    redisUrl,
    keyPrefix: `bench-${NAME}-${process.pid}-${logLevel}:`,
    credentials,
    extra: { LOG_LEVEL: logLevel, AUTH_CACHE_TTL_SECONDS },
  });
  return startIngress(`ingress-${logLevel}`, env);
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
  if (item?.email !== credentials.adminEmail || item.authenticationType !== scheme) {
    throw new Error(`${workload.name}: expected the admin by ${scheme}, got ${response.status} ${text}`);
  }
}

function workloadsFor(ingress: ServerProcess, token: string, logLevel: LogLevel) {
  const url = `${ingress.baseUrl}/api/readmodel`;
  const basic = basicAuthorization(credentials);
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
    const baselineServer = await startBareExpress();
    const quiet = await startIngressAt(redis.url, 'warn');
    const chatty = await startIngressAt(redis.url, 'info');

    const baseline: Workload = {
      name: 'bare Express 5 + express.json() (baseline)',
      url: `${baselineServer.baseUrl}/api/readmodel`,
      method: 'POST',
      headers: JSON_HEADERS,
      body: BODY,
    };
    const atWarn = workloadsFor(quiet, await issueToken(quiet, credentials), 'warn');
    const atInfo = workloadsFor(chatty, await issueToken(chatty, credentials), 'info');
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
