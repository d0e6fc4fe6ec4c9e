import { spawn } from 'node:child_process';
import path from 'node:path';

import { startLocalRedis } from '../scripts/lib/redis-server';
import type { HostileLoadSummary } from './lib/hostile-load';
import { type LoadResult, reportRun, settingsFromEnv, summarise } from './lib/load';
import { runOpenLoop } from './lib/open-loop';
import { cpuSeconds } from './lib/process-cost';
import { ensureBuilt, REPO_ROOT, type ServerProcess, startServer, stopAll, track } from './lib/processes';
import { type BenchReport, type ComparisonRow, machineInfo, problemsOf } from './lib/report';
import { runBenches } from './lib/runner';
import { freshCredentials, serviceEnv, sleep } from './lib/service';

/**
 * Anonymous 12 MB bodies sent to POST /api/import from 8 connections, while
 * another client measures GET /healthz. With nothing read before authentication, the hostile
 * requests cost the ingress a 401 each, and /healthz's p99 should stay within 2x of its p99 with no
 * hostile load.
 *
 * BENCH_BEFORE_DIR=<a checkout of another commit, built> measures that commit's ingress too, in the
 * same rounds (e.g. the parent: `git worktree add /tmp/before HEAD~1`, its node_modules linked,
 * `npm run build` there).
 *
 * Settings: BENCH_DURATION (seconds per measured run), BENCH_WARMUP (seconds of hostile load before
 * measuring), BENCH_ROUNDS.
 */

const NAME = 'hostile-bodies';
const BODY_BYTES = 12 * 1024 * 1024;
const HOSTILE_CONNECTIONS = 8;
/** /healthz requests per second, open loop: a client that keeps asking whether the service lives. */
const PROBE_RATE = 50;
/** The target: healthz p99 under hostile load at most this many times its p99 without. */
const P99_FACTOR = 2;

interface Service {
  readonly label: string;
  readonly ingress: ServerProcess;
}

function probeHealthz(ingress: ServerProcess, seconds: number): Promise<LoadResult> {
  return runOpenLoop({
    url: `${ingress.baseUrl}/healthz`,
    method: 'GET',
    headers: {},
    ratePerSecond: PROBE_RATE,
    durationSeconds: seconds,
    next: () => ({ body: '' }),
    maxSockets: 16,
    timeoutMs: 10_000,
  });
}

/** The hostile client in its own process (bench/lib/hostile-load.ts), for `seconds`. */
function hostileLoad(ingress: ServerProcess, seconds: number): Promise<HostileLoadSummary> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        path.join(__dirname, 'lib', 'hostile-load.ts'),
        `${ingress.baseUrl}/api/import`,
        String(HOSTILE_CONNECTIONS),
        String(seconds),
        String(BODY_BYTES),
      ],
      { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'inherit'] },
    );
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.once('error', reject);
    child.once('exit', (code) => {
      if (code !== 0) reject(new Error(`hostile load exited with ${String(code)}`));
      else resolve(JSON.parse(out) as HostileLoadSummary);
    });
  });
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
}

function standalone(row: ReturnType<typeof summarise>, p99BelowMs?: number): ComparisonRow {
  return {
    ...row,
    ratio: null,
    standalone: true,
    target: null,
    ...(p99BelowMs === undefined ? {} : { p99BelowMs: Math.round(p99BelowMs * 10) / 10 }),
  };
}

function describeHostile(summaries: readonly HostileLoadSummary[]): string {
  const statuses: Record<string, number> = {};
  for (const summary of summaries)
    for (const [status, count] of Object.entries(summary.statuses))
      statuses[status] = (statuses[status] ?? 0) + count;
  const requests = summaries.reduce((sum, summary) => sum + summary.requests, 0);
  const seconds = summaries.reduce((sum, summary) => sum + summary.seconds, 0);
  const errors = summaries.reduce((sum, summary) => sum + summary.errors, 0);
  const p50 = summaries.map((summary) => summary.answerP50Ms).sort((a, b) => a - b);
  return (
    `${requests} hostile requests (${(requests / seconds).toFixed(1)}/s), answered ` +
    `${Object.entries(statuses)
      .map(([status, count]) => `${count} x ${status}`)
      .join(', ')}${errors > 0 ? `, ${errors} cut before an answer` : ''}; ` +
    `time to the answer, median of the runs' p50: ${(p50[Math.floor(p50.length / 2)] ?? Number.NaN).toFixed(0)} ms`
  );
}

/** Starts Redis and the ingress (and the BENCH_BEFORE_DIR one), measures, stops everything. */
export async function run(): Promise<BenchReport> {
  const machine = machineInfo();
  const settings = settingsFromEnv({
    connections: HOSTILE_CONNECTIONS,
    warmupSeconds: 2,
    durationSeconds: 10,
    rounds: 3,
  });
  const beforeDir = process.env.BENCH_BEFORE_DIR;
  ensureBuilt();
  try {
    const redis = track(await startLocalRedis());
    const credentials = freshCredentials();
    const start = (label: string, dir: string) =>
      startServer({
        name: `ingress-${label.replace(/\W+/g, '-')}`,
        args: [path.join(dir, 'dist', 'ingress', 'main.js')],
        env: serviceEnv({
          redisUrl: redis.url,
          keyPrefix: `bench-${NAME}-${process.pid}-${label.replace(/\W+/g, '-')}:`,
          credentials,
          extra: { LOG_LEVEL: 'warn' },
        }),
        readyPath: '/readyz',
      });
    const services: Service[] = [
      { label: 'this commit', ingress: await start('this commit', REPO_ROOT) },
      {
        label: 'bare Node refusing at once',
        ingress: await startServer({
          name: 'refuse-at-once',
          args: ['bench/baselines/refuse-at-once.cjs'],
          env: { NODE_ENV: 'production' },
          readyPath: '/healthz',
        }),
      },
    ];
    if (beforeDir) services.push({ label: 'before', ingress: await start('before', beforeDir) });

    const quiet = new Map<string, LoadResult[]>(services.map((s) => [s.label, []]));
    const loaded = new Map<string, LoadResult[]>(services.map((s) => [s.label, []]));
    const hostile = new Map<string, HostileLoadSummary[]>(services.map((s) => [s.label, []]));
    /** Per run: the ingress's CPU (from /proc) over the hostile run, per hostile request, ms. */
    const cpuPerHostile = new Map<string, number[]>(services.map((s) => [s.label, []]));
    for (let round = 0; round < settings.rounds; round += 1) {
      for (let index = 0; index < services.length; index += 1) {
        const service = services[(index + round) % services.length];
        if (!service) continue;
        await probeHealthz(service.ingress, settings.warmupSeconds); // JIT, first connections: discarded
        const calm = await probeHealthz(service.ingress, settings.durationSeconds);
        quiet.get(service.label)?.push(calm);
        reportRun(`${service.label}: /healthz, no hostile load`, round + 1, calm);

        const cpuAtStart = cpuSeconds(service.ingress.pid);
        const load = hostileLoad(service.ingress, settings.warmupSeconds + settings.durationSeconds + 1);
        await sleep(settings.warmupSeconds * 1000);
        const underLoad = await probeHealthz(service.ingress, settings.durationSeconds);
        const summary = await load;
        // Lingering connections end within HTTP_LINGER_IDLE_MS of the client's close: counted too.
        await sleep(2_500);
        cpuPerHostile
          .get(service.label)
          ?.push(((cpuSeconds(service.ingress.pid) - cpuAtStart) * 1000) / summary.requests);
        loaded.get(service.label)?.push(underLoad);
        hostile.get(service.label)?.push(summary);
        reportRun(`${service.label}: /healthz under hostile load`, round + 1, underLoad);
        process.stderr.write(`[bench]   hostile load: ${JSON.stringify(summary)}\n`);
        await sleep(1000); // let the heap settle before the next run
      }
    }

    const rows: ComparisonRow[] = services.flatMap((service) => {
      const calm = summarise(
        `GET /healthz, no hostile load (${service.label})`,
        quiet.get(service.label) ?? [],
      );
      const underLoad = summarise(
        `GET /healthz, 8 connections of anonymous 12 MB POST /api/import (${service.label})`,
        loaded.get(service.label) ?? [],
      );
      return [standalone(calm), standalone(underLoad, calm.p99Ms * P99_FACTOR)];
    });

    return {
      name: NAME,
      title: 'GET /healthz while anonymous 12 MB bodies are sent to POST /api/import',
      settings,
      loadDescription:
        `GET /healthz at ${PROBE_RATE} req/s (open loop, bench/lib/open-loop.ts, in the bench process) for ` +
        `${settings.durationSeconds} s per run, alone and under the hostile load: ${HOSTILE_CONNECTIONS} connections in ` +
        `another process (bench/lib/hostile-load.ts), each POSTing a ${BODY_BYTES / 1024 / 1024} MB nested-array JSON body ` +
        `without credentials to /api/import, one after the other, started ${settings.warmupSeconds} s before the probe; ` +
        `${settings.rounds} round(s), medians reported`,
      machine,
      rows,
      notes: [
        `The target: /healthz p99 under the hostile load at most ${P99_FACTOR}x its p99 without (the "target" cell is that bound, from this run's own quiet p99).`,
        ...services.map(
          (service) =>
            `Hostile load on ${service.label}: ${describeHostile(hostile.get(service.label) ?? [])}; ` +
            `its CPU per hostile request (ingress process, /proc, the probe's /healthz included), median of the runs: ` +
            `${median(cpuPerHostile.get(service.label) ?? []).toFixed(2)} ms (runs: ${(cpuPerHostile.get(service.label) ?? []).map((ms) => ms.toFixed(2)).join(' / ')}).`,
        ),
        'The "bare Node refusing at once" rows (bench/baselines/refuse-at-once.cjs) are the floor: a plain Node http server answering the same hostile requests with an empty 401 and `Connection: close` as soon as their heads are in, and /healthz with a small JSON. What /healthz loses there is what the flood of connections costs Node and this machine (the hostile client shares its 2 cores) before the service adds anything.',
        'The service runs compiled (`node dist/ingress/main.js`, NODE_ENV=production, LOG_LEVEL=warn, default BODY_LIMIT and IMPORT_BODY_LIMIT 16mb) on a private redis-server on loopback; no worker.',
        ...(beforeDir
          ? [
              '"before" is the commit named by BENCH_BEFORE_DIR, built in a worktree of its own and measured in the same rounds.',
            ]
          : []),
        'The rate column is the probe rate (fixed, open loop): not a throughput. A /healthz request not answered within 10 s counts as an error (the "before" rows may have some: the stall is what they show).',
        'A hostile request "cut before an answer" got EPIPE while still writing its body: the ingress answered 401 with `Connection: close` and closed the connection at once, and the reset lost the answer (the bare-Node floor does that). Since ADR 0039 the ingress shuts its side after the 401 and reads and drops the rest of the body (at most HTTP_LINGER_MAX_BYTES, 64 MB): every hostile request reads its 401, and its 12 MB are read, never parsed.',
      ],
      // The commit before stalls /healthz past the probe's 10 s timeout: that is its finding, not a
      // broken run. The other rows must be clean.
      problems: problemsOf(rows.filter((row) => !row.workload.endsWith('(before)'))),
      failuresExpectedOn: rows
        .filter((row) => row.workload.endsWith('(before)') && problemsOf([row]).length > 0)
        .map((row) => `${row.workload} (${row.errors} /healthz requests unanswered within 10 s)`),
    };
  } finally {
    await stopAll();
  }
}

if (require.main === module) void runBenches([{ name: NAME, load: () => Promise.resolve({ run }) }]);
