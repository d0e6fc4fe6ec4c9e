import { randomUUID } from 'node:crypto';
import path from 'node:path';

import { startLocalRedis } from '../scripts/lib/redis-server';
import { type LoadResult, median, reportRun, settingsFromEnv } from './lib/load';
import { markdownTable } from './lib/markdown-table';
import { cpuSeconds } from './lib/process-cost';
import { ensureBuilt, REPO_ROOT, type ServerProcess, startServer, stopAll, track } from './lib/processes';
import { type BenchReport, type ComparisonRow, machineInfo, problemsOf } from './lib/report';
import { runBenches } from './lib/runner';
import { createMember, freshCredentials, serviceEnv } from './lib/service';

/**
 * Issue 29: what a Member's import costs the ingress. The spec has the endpoint accept it and fail
 * it while processing (5 rule 4); this measures the ingress CPU of one such import of the largest
 * size in use (8.7 MB, UserSeeding rows that are all valid), sent one after the other by one Member
 * by Basic, against a bare Express app reading the same body (one parse: the floor).
 *
 * BENCH_BEFORE_DIR=<a checkout of another commit, built> measures that commit's ingress too, in the
 * same rounds (e.g. main: `git worktree add --detach /tmp/before main`, its node_modules linked,
 * `npm run build` there).
 *
 * Settings: BENCH_REQUESTS (measured requests per run, 12), BENCH_ROUNDS (3).
 */

const NAME = 'roleless-import';
/**
 * The bodies measured: the 8.7 MB (valid rows), and the largest IMPORT_BODY_LIMIT (16mb)
 * lets in, whose names are longer than the schema allows: a role-less import's rows are never
 * validated, so nothing stops a Member from sending those.
 */
const BODY_SIZES = [
  { label: '8.7 MB', targetBytes: 8.7 * 1000 * 1000, before: true },
  { label: 'largest allowed', targetBytes: 16 * 1024 * 1024 - 2_048, before: false },
] as const;
const ROWS = 10_000;
const WARMUP_REQUESTS = 3;
const MEMBER_PASSWORD = 'roleless-import-member-password';
/** The ingress CPU a refused import may cost, at most (issue 29). */
const CPU_TARGET_MS = 100;

interface Service {
  readonly label: string;
  readonly ingress: ServerProcess;
  /** Basic credentials of the account the imports are sent as. */
  readonly authorization?: string;
  /** What a 200 answer's body must say for the request to count as done. */
  readonly expectedStatus: string;
}

/** One UserSeeding body of about `targetBytes`: ROWS users, their names padded to the size. */
function bodyTemplate(targetBytes: number): { readonly text: string; readonly requestIdAt: number } {
  const requestId = '00000000-0000-4000-8000-000000000000';
  const user = (i: number, pad: number) => ({
    email: `roleless-${i}@example.com`,
    userName: `roleless-user-${i}-${'U'.repeat(pad)}`.slice(0, 256),
    userType: 'Human',
    roles: ['Member'],
    firstName: 'F'.repeat(pad),
    lastName: 'L'.repeat(pad),
    password: 'a-password-of-twenty',
    emailVerified: false,
  });
  const build = (pad: number) =>
    JSON.stringify({
      requestId,
      importerType: 'UserSeeding',
      priority: 'Normal',
      importData: {
        enabled: true,
        skipIfUsersExist: false,
        users: Array.from({ length: ROWS }, (_, i) => user(i, pad)),
      },
    });
  // The longest padding whose body still fits (the body's length grows with the padding).
  let [low, high] = [0, 4_096];
  while (low < high) {
    const mid = Math.ceil((low + high) / 2);
    if (build(mid).length <= targetBytes) low = mid;
    else high = mid - 1;
  }
  const pad = low;
  const text = build(pad);
  return { text, requestIdAt: text.indexOf(requestId) };
}

/** The template with a fresh requestId (same length), so every import is a new one. */
function freshBody(template: { readonly text: string; readonly requestIdAt: number }): string {
  const { text, requestIdAt } = template;
  return text.slice(0, requestIdAt) + randomUUID() + text.slice(requestIdAt + 36);
}

interface RunCost extends LoadResult {
  /** Ingress CPU per request, microseconds (user + system, /proc/<pid>/stat). */
  readonly cpuMicros: number;
}

/** `count` imports one after the other; the ingress CPU they took, per request, and their times. */
async function measure(
  service: Service,
  template: ReturnType<typeof bodyTemplate>,
  count: number,
): Promise<RunCost> {
  const times: number[] = [];
  let non2xx = 0;
  let errors = 0;
  const cpuBefore = cpuSeconds(service.ingress.pid);
  const startedAt = performance.now();
  for (let i = 0; i < count; i += 1) {
    const body = freshBody(template);
    const sentAt = performance.now();
    try {
      const response = await fetch(`${service.ingress.baseUrl}/api/import`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          ...(service.authorization ? { authorization: service.authorization } : {}),
        },
        body,
      });
      const answer = (await response.json()) as { status?: unknown };
      if (response.status !== 200 || answer.status !== service.expectedStatus) non2xx += 1;
    } catch {
      errors += 1;
    }
    times.push(performance.now() - sentAt);
  }
  const seconds = (performance.now() - startedAt) / 1000;
  const cpuMicros = ((cpuSeconds(service.ingress.pid) - cpuBefore) * 1e6) / count;
  const sorted = [...times].sort((a, b) => a - b);
  return {
    requestsPerSecond: count / seconds,
    p50Ms: sorted[Math.floor(sorted.length / 2)] ?? Number.NaN,
    p99Ms: sorted[Math.min(sorted.length - 1, Math.ceil(sorted.length * 0.99) - 1)] ?? Number.NaN,
    responses: count - errors,
    non2xx,
    errors,
    warmupFailures: 0,
    cpuMicros,
  };
}

/** Starts Redis, the ingress (and the BENCH_BEFORE_DIR one) and the bare reference; measures; stops all. */
export async function run(): Promise<BenchReport> {
  const machine = machineInfo();
  const settings = settingsFromEnv({ connections: 1, warmupSeconds: 0, durationSeconds: 0, rounds: 3 });
  const requests = Math.round(Number(process.env.BENCH_REQUESTS ?? 12));
  const beforeDir = process.env.BENCH_BEFORE_DIR;
  const bodies = BODY_SIZES.map((size) => {
    const template = bodyTemplate(size.targetBytes);
    return { ...size, template, bytes: Buffer.byteLength(template.text) };
  });
  ensureBuilt();
  try {
    const redis = track(await startLocalRedis());
    const credentials = freshCredentials();
    const start = async (label: string, dir: string): Promise<Service> => {
      const ingress = await startServer({
        name: `ingress-${label.replace(/\W+/g, '-')}`,
        args: [path.join(dir, 'dist', 'ingress', 'main.js')],
        env: serviceEnv({
          redisUrl: redis.url,
          keyPrefix: `bench-${NAME}-${process.pid}-${label.replace(/\W+/g, '-')}:`,
          credentials,
          extra: {
            LOG_LEVEL: 'warn',
            // One verification hash for the Member, before any measurement.
            AUTH_CACHE_TTL_SECONDS: '3600',
            // Counted (its Redis call is part of the cost) but never reached: one Member sends
            // far more than the default 50mb a minute here.
            IMPORT_BYTES_PER_ACCOUNT_PER_MINUTE: '1000000mb',
          },
        }),
        readyPath: '/readyz',
      });
      return {
        label,
        ingress,
        authorization: await createMember(ingress, credentials, MEMBER_PASSWORD),
        expectedStatus: 'Pending',
      };
    };
    const services: Service[] = [
      await start('this commit', REPO_ROOT),
      {
        label: 'bare Express, express.json() (one parse)',
        ingress: await startServer({
          name: 'bare-json-body',
          args: ['bench/baselines/bare-json-body.cjs'],
          env: { NODE_ENV: 'production' },
          readyPath: '/',
        }),
        expectedStatus: 'Pending',
      },
    ];
    if (beforeDir) services.push(await start('before', beforeDir));

    // Each measured pair: a service and a body ("before" only with the body it was measured with).
    const pairs = bodies.flatMap((body) =>
      services
        .filter((service) => body.before || service.label !== 'before')
        .map((service) => ({ service, body, key: `${service.label}, ${(body.bytes / 1e6).toFixed(2)} MB` })),
    );
    const runs = new Map<string, RunCost[]>(pairs.map(({ key }) => [key, []]));
    for (let round = 0; round < settings.rounds; round += 1) {
      for (let index = 0; index < pairs.length; index += 1) {
        const pair = pairs[(index + round) % pairs.length];
        if (!pair) continue;
        const { service, body, key } = pair;
        await measure(service, body.template, WARMUP_REQUESTS); // JIT, connections, heap growth: discarded
        const cost = await measure(service, body.template, requests);
        runs.get(key)?.push(cost);
        reportRun(`${key}: ${(cost.cpuMicros / 1000).toFixed(0)} ms ingress CPU per import`, round + 1, cost);
      }
    }

    const rows: ComparisonRow[] = pairs.map(({ key }) => {
      const measured = runs.get(key) ?? [];
      return {
        workload: `Member's UserSeeding (${key})`,
        runs: measured,
        requestsPerSecond: median(measured.map((cost) => cost.requestsPerSecond)),
        p50Ms: median(measured.map((cost) => cost.p50Ms)),
        p99Ms: median(measured.map((cost) => cost.p99Ms)),
        non2xx: measured.reduce((sum, cost) => sum + cost.non2xx, 0),
        errors: measured.reduce((sum, cost) => sum + cost.errors, 0),
        warmupFailures: 0,
        ratio: null,
        standalone: true,
        target: null,
      };
    });
    const cpuCell = (label: string) => {
      const values = (runs.get(label) ?? []).map((cost) => cost.cpuMicros);
      return {
        median: median(values),
        perRound: values.map((value) => Math.round(value).toLocaleString('en-US')).join(' / '),
      };
    };
    const bareOf = (bytes: number) =>
      cpuCell(`bare Express, express.json() (one parse), ${(bytes / 1e6).toFixed(2)} MB`).median;
    const cpuRows = pairs.map(({ service, body, key }) => {
      const cell = cpuCell(key);
      return [
        key,
        Math.round(cell.median).toLocaleString('en-US'),
        (cell.median / bareOf(body.bytes)).toFixed(2),
        service.authorization ? `< ${(CPU_TARGET_MS * 1000).toLocaleString('en-US')}` : '',
        service.authorization ? (cell.median < CPU_TARGET_MS * 1000 ? 'yes' : 'NO') : '',
        cell.perRound,
      ];
    });
    const cpuTableText = markdownTable(
      ['Ingress', 'CPU µs per import (median)', 'vs bare', 'target', 'met?', 'per round'],
      cpuRows,
      new Set(['CPU µs per import (median)', 'vs bare']),
    );

    return {
      name: NAME,
      title: 'Issue 29: a role-less import',
      settings,
      loadDescription:
        `${requests} imports per run, one after the other from one connection, after ${WARMUP_REQUESTS} discarded; ` +
        `${settings.rounds} round(s), the services interleaved, medians reported`,
      machine,
      rows,
      tables: [cpuTableText],
      notes: [
        `Each import: POST /api/import, Normal priority, UserSeeding of ${ROWS.toLocaleString('en-US')} users (user and given names padded so the body is ${bodies.map((body) => body.bytes.toLocaleString('en-US')).join(' or ')} bytes: the first valid rows, the second the largest body IMPORT_BODY_LIMIT (16mb) lets in, its names longer than the schema allows, which a role-less import never checks), a fresh requestId each, sent by Basic as a Member (its verification cached: AUTH_CACHE_TTL_SECONDS=3600). The spec has it accepted and failed while processing: the answer is the queued one (Pending), and the record says the role is missing.`,
        'Ingress CPU per import: user + system time of the ingress process (/proc/<pid>/stat, every thread) over the run, divided by its imports. The ingress runs compiled (`node dist/ingress/main.js`, NODE_ENV=production, LOG_LEVEL=warn) on a private redis-server on loopback; no worker (a role-less import is never queued).',
        'The bare reference (bench/baselines/bare-json-body.cjs) is an Express 5 app reading the same body with express.json() (limit 16mb) and answering a small JSON: one JSON parse, the least any JSON endpoint pays for the body.',
        'IMPORT_BYTES_PER_ACCOUNT_PER_MINUTE is set out of reach (1000000mb) so its counting is paid but no import is refused; with the default (50mb) one account sends five of these a minute.',
        ...(beforeDir
          ? [
              '"before" is main before issue 29 (the rows validated at the ingress, then again before the role refused the import), built in a worktree of its own and measured in the same rounds.',
            ]
          : []),
      ],
      problems: problemsOf(rows),
    };
  } finally {
    await stopAll();
  }
}

if (require.main === module) void runBenches([{ name: NAME, load: () => Promise.resolve({ run }) }]);
