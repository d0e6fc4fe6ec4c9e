import { spawnSync } from 'node:child_process';
import path from 'node:path';

import { startLocalRedis } from '../scripts/lib/redis-server';
import { type Measured, settingsFromEnv, type Workload } from './lib/load';
import { CostMeter, cpuRow, type RunCost } from './lib/process-cost';
import { ensureBuilt, REPO_ROOT, type ServerProcess, startServer, stopAll, track } from './lib/processes';
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
  startRefRead,
} from './lib/service';

/**
 * CurrentUser through POST /api/readmodel, by Basic (verification cache warm) and by Bearer,
 * against ref-read (bench/baselines/ref-read.cjs: Express 5, express.json() and an HS256 verify,
 * the least a Bearer read must do) and a bare Express 5 app, measured in the same run with the same
 * load generator.
 *
 * Each measured run also reads what a request cost the processes serving it: CPU microseconds of
 * the ingress and of redis-server (from /proc), and Redis commands (INFO commandstats). The targets
 * (issue 22) are on CPU per request: Bearer at most 1.05x ref-read, Basic with a warm cache at most
 * 1.1x Bearer.
 *
 * Settings: BENCH_CONNECTIONS, BENCH_WARMUP, BENCH_DURATION (seconds), BENCH_ROUNDS;
 * BENCH_CPU_PROF=1 writes a .cpuprofile of each ingress (when it stops) to a temporary directory it names;
 * BENCH_BEFORE_DIR=<a checkout of another commit, built> measures that commit's ingress too, in the
 * same rounds (e.g. `git worktree add /tmp/before <commit>`, its node_modules hard-linked with
 * `cp -al`, then `npm run build` there).
 */

const NAME = 'current-user';
/** The targets on the ingress's CPU per request (issue 22): Bearer over ref-read, Basic over Bearer. */
const BEARER_OVER_REF_READ = 1.05;
const BASIC_OVER_BEARER = 1.1;
const BODY = JSON.stringify({ query: { queryType: 'CurrentUser' }, skip: 0, take: 10 });

const credentials = freshCredentials();
/**
 * The longest cache life the config allows, so the cache stays warm for the whole bench; with the
 * default (60 s) it would expire mid-bench and the requests arriving then would hash again, which
 * is another workload (a cold cache).
 */
const AUTH_CACHE_TTL_SECONDS = '3600';

type LogLevel = 'warn' | 'info';

/**
 * An ingress logging at `logLevel`, with keys of its own, so no two see each other's: this
 * checkout's, or the one built in `beforeDir`.
 */
function startIngressAt(redisUrl: string, logLevel: LogLevel, beforeDir?: string): Promise<ServerProcess> {
  const label = beforeDir ? `before-${logLevel}` : logLevel;
  const env = serviceEnv({
    redisUrl,
    keyPrefix: `bench-${NAME}-${process.pid}-${label}:`,
    credentials,
    extra: { LOG_LEVEL: logLevel, AUTH_CACHE_TTL_SECONDS },
  });
  if (!beforeDir) return startIngress(`ingress-${label}`, env);
  return startServer({
    name: `ingress-${label}`,
    args: [path.join(beforeDir, 'dist', 'ingress', 'main.js')],
    env,
    readyPath: '/readyz',
  });
}

function commitOf(dir: string): string {
  const result = spawnSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: dir, encoding: 'utf8' });
  return result.status === 0 ? result.stdout.trim() : 'unknown';
}

/** "after vs before" for one scheme: rate, p50/p99 and CPU per request. */
function changeNote(
  scheme: string,
  after: Measured,
  before: Measured,
  afterCost: RunCost | undefined,
  beforeCost: RunCost | undefined,
): string {
  const percent = (now: number, then: number) =>
    `${now >= then ? '+' : ''}${(((now - then) / then) * 100).toFixed(1)}%`;
  const cpuAfter = afterCost?.cpuMicros.ingress ?? NaN;
  const cpuBefore = beforeCost?.cpuMicros.ingress ?? NaN;
  return (
    `${scheme}, this commit vs before: ${after.requestsPerSecond.toFixed(0)} vs ${before.requestsPerSecond.toFixed(0)} req/s ` +
    `(${percent(after.requestsPerSecond, before.requestsPerSecond)}), p50 ${after.p50Ms.toFixed(1)} vs ${before.p50Ms.toFixed(1)} ms, ` +
    `p99 ${after.p99Ms.toFixed(1)} vs ${before.p99Ms.toFixed(1)} ms, ingress CPU per request ${cpuAfter.toFixed(1)} vs ` +
    `${cpuBefore.toFixed(1)} us (${percent(cpuAfter, cpuBefore)})`
  );
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

function workloadsFor(ingress: ServerProcess, token: string, logLevel: LogLevel, before = false) {
  const url = `${ingress.baseUrl}/api/readmodel`;
  const basic = basicAuthorization(credentials);
  const suffix = `${logLevel === 'warn' ? '' : `, LOG_LEVEL=${logLevel}`}${before ? ', before' : ''}`;
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

/** ref-read answers the Admin's token with its claims: 200 and the Admin's e-mail, or the workload measures a 401. */
async function checkRefRead(workload: Workload): Promise<void> {
  const response = await fetch(workload.url, {
    method: workload.method,
    headers: { ...workload.headers },
    body: workload.body ?? null,
  });
  const text = await response.text();
  const item = response.ok ? (JSON.parse(text) as { data?: { email?: string }[] }).data?.[0] : undefined;
  if (item?.email !== credentials.adminEmail)
    throw new Error(`${workload.name}: expected the admin, got ${response.status} ${text}`);
}

/** Starts Redis, the baseline and two ingress processes (warn and info), measures, stops everything. */
export async function run(): Promise<BenchReport> {
  const machine = machineInfo();
  const settings = settingsFromEnv({ connections: 32, warmupSeconds: 2, durationSeconds: 6, rounds: 5 });
  const beforeDir = process.env.BENCH_BEFORE_DIR;
  ensureBuilt();
  let meter: CostMeter | undefined;
  try {
    const redis = track(await startLocalRedis());
    const baselineServer = await startBareExpress();
    const refReadServer = await startRefRead(credentials);
    const quiet = await startIngressAt(redis.url, 'warn');
    const chatty = await startIngressAt(redis.url, 'info');
    const previous = beforeDir ? await startIngressAt(redis.url, 'warn', beforeDir) : undefined;

    const baseline: Workload = {
      name: 'bare Express 5 + express.json() (baseline)',
      url: `${baselineServer.baseUrl}/api/readmodel`,
      method: 'POST',
      headers: JSON_HEADERS,
      body: BODY,
    };
    const quietToken = await issueToken(quiet, credentials);
    const refRead: Workload = {
      name: 'ref-read: Express 5 + express.json() + HS256 verify (reference)',
      url: `${refReadServer.baseUrl}/api/readmodel`,
      method: 'POST',
      headers: { ...JSON_HEADERS, authorization: `Bearer ${quietToken}` },
      body: BODY,
    };
    await checkRefRead(refRead);
    const atWarn = workloadsFor(quiet, quietToken, 'warn');
    const atInfo = workloadsFor(chatty, await issueToken(chatty, credentials), 'info');
    const atBefore =
      previous && workloadsFor(previous, await issueToken(previous, credentials), 'warn', true);
    for (const { basic, bearer } of [atWarn, atInfo, ...(atBefore ? [atBefore] : [])]) {
      await checkOnce(basic, 'Basic');
      await checkOnce(bearer, 'Bearer');
    }

    // Which process serves each workload: its CPU, and redis-server's, are what a request costs.
    const servers = new Map<string, ServerProcess>([
      [baseline.name, baselineServer],
      [refRead.name, refReadServer],
      [atWarn.basic.name, quiet],
      [atWarn.bearer.name, quiet],
      [atInfo.basic.name, chatty],
      [atInfo.bearer.name, chatty],
      ...(atBefore && previous
        ? ([
            [atBefore.basic.name, previous],
            [atBefore.bearer.name, previous],
          ] as const)
        : []),
    ]);
    meter = CostMeter.open(redis.url, (workload) => ({
      ingress: servers.get(workload.name)?.pid ?? 0,
      redis: redis.pid,
    }));
    const costs = meter;
    const background = await costs.background(3);

    const workloads = [
      baseline,
      refRead,
      atWarn.basic,
      atWarn.bearer,
      atInfo.basic,
      atInfo.bearer,
      ...(atBefore ? [atBefore.basic, atBefore.bearer] : []),
    ];
    const measured = await costs.measure(workloads, settings);
    const [base, ref, basicWarn, bearerWarn, basicInfo, bearerInfo, basicBefore, bearerBefore] = measured;
    if (!base || !ref || !basicWarn || !bearerWarn || !basicInfo || !bearerInfo)
      throw new Error('a workload is missing');
    const rows = [
      ...compareWith(base, [ref, basicWarn, bearerWarn], null),
      ...compareWith(base, [basicInfo, bearerInfo], null).slice(1),
      ...(basicBefore && bearerBefore ? compareWith(base, [basicBefore, bearerBefore], null).slice(1) : []),
    ];
    const backgroundCommands = [...background.byCommand]
      .map(([command, perSecond]) => `${command} ${perSecond.toFixed(1)}/s`)
      .join(', ');

    const report: BenchReport = {
      name: NAME,
      title: 'CurrentUser (POST /api/readmodel): CPU per request vs ref-read',
      settings,
      machine,
      rows,
      cpu: [
        cpuRow(costs, base.workload),
        cpuRow(costs, ref.workload),
        cpuRow(costs, bearerWarn.workload, {
          reference: ref.workload,
          targets: [{ role: 'ingress', atMostRatio: BEARER_OVER_REF_READ }],
        }),
        cpuRow(costs, basicWarn.workload, {
          reference: bearerWarn.workload,
          targets: [{ role: 'ingress', atMostRatio: BASIC_OVER_BEARER }],
        }),
        cpuRow(costs, basicWarn.workload, { reference: ref.workload }),
        cpuRow(costs, bearerInfo.workload, { reference: ref.workload }),
        cpuRow(costs, basicInfo.workload, { reference: bearerInfo.workload }),
        ...(basicBefore && bearerBefore
          ? [
              cpuRow(costs, bearerBefore.workload, { reference: ref.workload }),
              cpuRow(costs, basicBefore.workload, { reference: bearerBefore.workload }),
            ]
          : []),
      ],
      notes: [
        `Body of every request: \`${BODY}\` (the baseline gets it too, without an Authorization header).`,
        'The baseline (bench/baselines/bare-express.cjs) is Express 5 with express.json() and one POST route answering JSON; like the service it disables X-Powered-By and ETag. Its rate targets are retired (issue 22): a bare app measures Express, not the work a request must do.',
        `The reference (bench/baselines/ref-read.cjs, ref-read) is the bare app plus what a Bearer read cannot skip: jsonwebtoken's HS256 verify of the Admin's token (issuer and audience checked) with a KeyObject made once, and a CurrentUser-like answer from its claims. Targets, on the ingress's CPU per request (the CPU table): Bearer at most ${BEARER_OVER_REF_READ}x ref-read, Basic (cache warm) at most ${BASIC_OVER_BEARER}x Bearer.`,
        'The service runs compiled (`npm run build`, then `node dist/ingress/main.js`, NODE_ENV=production) against a private redis-server on loopback, as the bootstrap Admin.',
        'The targets are judged with LOG_LEVEL=warn, so no access line reaches stdout; the LOG_LEVEL=info rows (the default level: one JSON access line per request, to a file) are for reference.',
        `Basic: the first request (before any load) hashes the password; AUTH_CACHE_TTL_SECONDS=${AUTH_CACHE_TTL_SECONDS} keeps the verification cache warm for the whole bench. Bearer: a JWT from POST /api/auth/token.`,
        '"vs baseline" is the ratio of the medians; each round runs every workload once, in rotated order.',
        ...(beforeDir
          ? [
              `The "before" rows are commit ${commitOf(beforeDir)} (its own build, in ${beforeDir}), this commit is ${commitOf(REPO_ROOT)}; both on the same Redis under key prefixes of their own, measured in the same rounds.`,
            ]
          : []),
        `Redis commands with no load (3 s, before the first run): ${background.perSecond.toFixed(1)}/s${backgroundCommands ? ` (${backgroundCommands})` : ''}.`,
        ...(basicBefore && bearerBefore
          ? [
              changeNote(
                'Basic',
                basicWarn,
                basicBefore,
                costs.summary(basicWarn.workload),
                costs.summary(basicBefore.workload),
              ),
              changeNote(
                'Bearer',
                bearerWarn,
                bearerBefore,
                costs.summary(bearerWarn.workload),
                costs.summary(bearerBefore.workload),
              ),
            ]
          : []),
      ],
      problems: problemsOf(measured),
    };
    return report;
  } finally {
    await meter?.close();
    await stopAll();
  }
}

if (require.main === module) void runBenches([{ name: NAME, load: () => Promise.resolve({ run }) }]);
