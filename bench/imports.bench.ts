import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';

import { Queue, QueueEvents } from 'bullmq';

import { IMPORT_QUEUE_NAME } from '../shared/importers/import-queue';
import { ImportClient, type ImportItem } from './lib/import-client';
import { type LoadResult, percentile, positiveNumberFromEnv, settingsFromEnv, summarise } from './lib/load';
import { ensureBuilt, REPO_ROOT, type ServerProcess, stopAll, track } from './lib/processes';
import { type BenchReport, compareWith, type ComparisonRow, machineInfo, problemsOf } from './lib/report';
import { runBenches } from './lib/runner';
import { basicAuthorization, sleep, startService, startWorker } from './lib/service';

/**
 * UserSeeding imports: users imported per second by a 2,000-user Normal import with 1 and with 2
 * worker processes, beside the bare argon2id hash rate at the same parallelism measured in the same
 * run; and the round trip of a one-user High import on an idle queue (run inline by the ingress).
 *
 * Settings: BENCH_ROUNDS (default 5: on this 2-core machine one hash costs 10% more or less from one
 * minute to the next, so the median needs more rounds to outvote the disturbed ones);
 * BENCH_WARMUP and BENCH_DURATION (seconds) of each argon2 baseline run; BENCH_IMPORT_USERS (default
 * 2000); BENCH_HIGH_SAMPLES (High imports per kind and round, default 50); BENCH_CPU_PROF=1 writes a
 * .cpuprofile of the ingress and of each worker (when they stop).
 */

const NAME = 'imports';
/** The targets: users/s as a share of the hash rate; the High import's median round trip. */
const RATE_TARGET = 0.8;
const HIGH_P50_TARGET_MS = 30;
/** Hashes (commands) one import keeps running at once: IMPORT_COMMAND_CONCURRENCY, its default. */
const COMMAND_CONCURRENCY = 4;
const WARMUP_USERS_PER_WORKER = 40;
const HIGH_WARMUP_SAMPLES = 5;
const POLL_MS = 50;
const IMPORT_TIMEOUT_MS = 120_000;

/** Makes every run's e-mails unique, so no import meets an existing user. */
const RUN_TAG = randomBytes(4).toString('hex');

interface SeedUser {
  readonly email: string;
  readonly userType: 'Human';
  readonly roles: readonly ['Member'];
  readonly password?: string;
}

let userSerial = 0;
function users(count: number, label: string, withPassword = true): SeedUser[] {
  return Array.from({ length: count }, () => {
    userSerial += 1;
    return {
      email: `bench-${RUN_TAG}-${label}-${userSerial}@example.com`,
      userType: 'Human',
      roles: ['Member'],
      ...(withPassword ? { password: randomBytes(15).toString('base64url') } : {}),
    };
  });
}

/** UserSeeding imports, and a poll for one import's end (for warm-ups). */
class UserImports extends ImportClient {
  seed(priority: 'High' | 'Normal', seedUsers: readonly SeedUser[]): Promise<ImportItem> {
    return this.submit('UserSeeding', priority, { enabled: true, skipIfUsersExist: false, users: seedUsers });
  }

  /**
   * Polls every POLL_MS until the import is no longer Pending; returns its record and when that was
   * seen. For warm-ups: a measured import waits on the queue's completion event instead.
   */
  async finished(importJobId: string): Promise<{ item: ImportItem; seenAt: number }> {
    const deadline = performance.now() + IMPORT_TIMEOUT_MS;
    for (;;) {
      const item = await this.result(importJobId);
      if (item.status !== 'Pending') return { item, seenAt: performance.now() };
      if (performance.now() > deadline)
        throw new Error(`import ${importJobId} still Pending after ${IMPORT_TIMEOUT_MS} ms`);
      await sleep(POLL_MS);
    }
  }
}

/**
 * When each import's queue job finished, from BullMQ's own event stream (a blocking read: waiting
 * costs the machine nothing). Polling the HTTP API every POLL_MS instead cost the ingress and this
 * process about 5% of the machine, which the hash-rate baseline does not pay.
 */
class CompletionWatch {
  private readonly waiting = new Map<string, (at: number) => void>();
  private readonly finishedAt = new Map<string, number>();

  constructor(events: QueueEvents) {
    const seen = ({ jobId }: { jobId: string }) => {
      const at = performance.now();
      this.finishedAt.set(jobId, at);
      this.waiting.get(jobId)?.(at);
    };
    events.on('completed', seen);
    events.on('failed', seen);
  }

  /** Resolves with the time the job finished (now, if it already had). */
  finished(importJobId: string): Promise<number> {
    const at = this.finishedAt.get(importJobId);
    if (at !== undefined) return Promise.resolve(at);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`import ${importJobId} did not finish within ${IMPORT_TIMEOUT_MS} ms`)),
        IMPORT_TIMEOUT_MS,
      );
      this.waiting.set(importJobId, (finishedAt) => {
        clearTimeout(timer);
        this.waiting.delete(importJobId);
        resolve(finishedAt);
      });
    });
  }
}

/** Runs the argon2 baseline in `processes` processes at once; their summed hash rate. */
async function argon2Rate(
  processes: number,
  warmupSeconds: number,
  durationSeconds: number,
): Promise<number> {
  const runs = Array.from({ length: processes }, () => {
    const child = spawn(process.execPath, ['bench/baselines/argon2-rate.cjs'], {
      cwd: REPO_ROOT,
      env: {
        PATH: process.env.PATH ?? '',
        IN_FLIGHT: String(COMMAND_CONCURRENCY),
        WARMUP_SECONDS: String(warmupSeconds),
        DURATION_SECONDS: String(durationSeconds),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    const tracked = track({
      stop: async () => {
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
        await exited;
      },
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    return exited.then(async (code) => {
      await tracked.stop();
      if (code !== 0) throw new Error(`argon2-rate.cjs exited with ${String(code)}: ${output}`);
      return (JSON.parse(output.trim()) as { hashesPerSecond: number }).hashesPerSecond;
    });
  });
  const rates = await Promise.all(runs);
  return rates.reduce((sum, rate) => sum + rate, 0);
}

/** A rate-only result (an import, a hash rate): one number per run, no latency distribution. */
function rateResult(perSecond: number, failures = 0): LoadResult {
  return {
    requestsPerSecond: perSecond,
    p50Ms: Number.NaN,
    p99Ms: Number.NaN,
    responses: 1,
    non2xx: failures,
    errors: 0,
    warmupFailures: 0,
  };
}

function note(message: string): void {
  process.stderr.write(`[bench] ${message}\n`);
}

/** Starts Redis, one ingress and 0-2 workers as each step needs them; measures; stops everything. */
export async function run(): Promise<BenchReport> {
  const machine = machineInfo();
  const settings = settingsFromEnv({ connections: 1, warmupSeconds: 1, durationSeconds: 8, rounds: 5 });
  const importUsers = Math.round(positiveNumberFromEnv('BENCH_IMPORT_USERS', 2_000));
  const highSamples = Math.round(positiveNumberFromEnv('BENCH_HIGH_SAMPLES', 50));
  if (importUsers % 2 !== 0) throw new Error('BENCH_IMPORT_USERS must be even (split over 2 workers)');
  ensureBuilt();
  const problems: string[] = [];
  try {
    const { redisServer, keys, credentials, env, ingress } = await startService(NAME, {
      env: { IMPORT_COMMAND_CONCURRENCY: String(COMMAND_CONCURRENCY) },
      // The Admin's Basic verification stays cached for the whole bench: one hash, before any measurement.
      ingressEnv: { AUTH_CACHE_TTL_SECONDS: '3600' },
      // Started (and stopped) below as each step needs them.
      workers: 0,
    });
    const client = new UserImports(ingress, basicAuthorization(credentials));
    const queue = new Queue(IMPORT_QUEUE_NAME, {
      connection: { host: '127.0.0.1', port: redisServer.port },
      prefix: keys.importQueuePrefix(),
    });
    track({ stop: () => queue.close() });
    const queueEvents = new QueueEvents(IMPORT_QUEUE_NAME, {
      connection: { host: '127.0.0.1', port: redisServer.port },
      prefix: keys.importQueuePrefix(),
    });
    track({ stop: () => queueEvents.close() });
    await queueEvents.waitUntilReady();
    const completions = new CompletionWatch(queueEvents);

    // Workers: WORKER_CONCURRENCY=1, so one process runs one import at a time and two imports
    // submitted together land on two processes.
    const workers: ServerProcess[] = [];
    let workerStarts = 0;
    const ensureWorkers = async (count: number) => {
      while (workers.length > count) await workers.pop()?.stop();
      if (workers.length === count) return;
      while (workers.length < count) {
        workerStarts += 1;
        workers.push(
          await startWorker(`worker${workers.length + 1}-${workerStarts}`, {
            ...env,
            WORKER_CONCURRENCY: '1',
          }),
        );
      }
      const deadline = performance.now() + 10_000;
      while ((await queue.getWorkersCount()) < count) {
        if (performance.now() > deadline) throw new Error(`${count} worker(s) did not connect to the queue`);
        await sleep(50);
      }
      // Warm-up (discarded): one small import per worker, at once.
      const warmups = await Promise.all(
        workers.map(() => client.seed('Normal', users(WARMUP_USERS_PER_WORKER, 'warmup'))),
      );
      for (const { importJobId } of warmups) {
        const { item } = await client.finished(importJobId);
        if (item.status !== 'Completed') throw new Error(`warm-up import ${item.status}: ${item.message}`);
      }
    };

    /** One measured import of `importUsers` users split into `parts` imports submitted at once. */
    const measureImport = async (parts: number, round: number): Promise<LoadResult> => {
      const batches = Array.from({ length: parts }, (_, part) =>
        users(importUsers / parts, `r${round}-w${workers.length}-p${part}`),
      );
      const submittedAt = performance.now();
      const submitted = await Promise.all(batches.map((batch) => client.seed('Normal', batch)));
      const finishedAt = await Promise.all(
        submitted.map(({ importJobId }) => completions.finished(importJobId)),
      );
      const seconds = (Math.max(...finishedAt) - submittedAt) / 1000;
      const finished = await Promise.all(
        submitted.map(async ({ importJobId }) => ({ item: await client.result(importJobId) })),
      );
      let failures = 0;
      for (const { item } of finished) {
        if (item.status !== 'Completed' || item.commandsExecuted !== importUsers / parts) {
          failures += 1;
          problems.push(
            `import ${item.importJobId}: ${item.status}, ${item.commandsExecuted} users: ${item.message}`,
          );
        }
      }
      if (parts > 1) {
        // Each job must have run in its own worker, or this did not measure two workers.
        const ran = workers.map((worker) => readFileSync(worker.logFile, 'utf8'));
        const hosts = submitted.map(({ importJobId }) => ran.findIndex((log) => log.includes(importJobId)));
        if (new Set(hosts).size !== parts)
          problems.push(`round ${round}: the ${parts} imports ran in workers ${hosts.join(', ')}`);
      }
      const rate = importUsers / seconds;
      note(
        `round ${round}: ${importUsers} users, ${workers.length} worker(s): ${seconds.toFixed(2)} s, ${rate.toFixed(1)} users/s ` +
          `(executionDuration ${finished.map(({ item }) => item.executionDuration).join(', ')})`,
      );
      return rateResult(rate, failures);
    };

    /** Sequential one-user High imports: each one's HTTP round trip; it must have run inline. */
    const measureHigh = async (withPassword: boolean, round: number): Promise<LoadResult> => {
      const latencies: number[] = [];
      let failures = 0;
      for (let i = 0; i < HIGH_WARMUP_SAMPLES + highSamples; i += 1) {
        const [user] = users(1, `r${round}-high`, withPassword);
        const sentAt = performance.now();
        const item = await client.seed('High', user ? [user] : []);
        const elapsed = performance.now() - sentAt;
        if (i < HIGH_WARMUP_SAMPLES) continue;
        if (
          item.status !== 'Completed' ||
          item.processedSynchronously !== true ||
          item.commandsExecuted !== 1
        ) {
          failures += 1;
          if (failures === 1)
            problems.push(`High import not run inline to completion: ${JSON.stringify(item)}`);
          continue;
        }
        latencies.push(elapsed);
      }
      const result: LoadResult = {
        requestsPerSecond: Number.NaN,
        p50Ms: percentile(latencies, 50),
        p99Ms: percentile(latencies, 99),
        responses: latencies.length,
        non2xx: failures,
        errors: 0,
        warmupFailures: 0,
      };
      note(
        `round ${round}: High import, ${withPassword ? 'with' : 'without'} password: p50 ${result.p50Ms.toFixed(1)} ms, p99 ${result.p99Ms.toFixed(1)} ms`,
      );
      return result;
    };

    const argon2Step = async (processes: number, round: number) => {
      const rate = await argon2Rate(processes, settings.warmupSeconds, settings.durationSeconds);
      note(
        `round ${round}: argon2id, ${processes} process(es) x ${COMMAND_CONCURRENCY} in flight: ${rate.toFixed(1)} hashes/s`,
      );
      return rateResult(rate);
    };

    const runs = {
      argon2One: [] as LoadResult[],
      importOne: [] as LoadResult[],
      argon2Two: [] as LoadResult[],
      importTwo: [] as LoadResult[],
      highBare: [] as LoadResult[],
      highHashed: [] as LoadResult[],
    };
    // Each step names the worker processes it needs: none beside the bare hash rate.
    const steps: { workers: number; run: (round: number) => Promise<void> }[] = [
      { workers: 0, run: async (round) => void runs.argon2One.push(await argon2Step(1, round)) },
      { workers: 1, run: async (round) => void runs.importOne.push(await measureImport(1, round)) },
      { workers: 0, run: async (round) => void runs.argon2Two.push(await argon2Step(2, round)) },
      { workers: 2, run: async (round) => void runs.importTwo.push(await measureImport(2, round)) },
      {
        workers: 1,
        run: async (round) => {
          runs.highBare.push(await measureHigh(false, round));
          runs.highHashed.push(await measureHigh(true, round));
        },
      },
    ];
    for (let round = 0; round < settings.rounds; round += 1) {
      for (let index = 0; index < steps.length; index += 1) {
        const step = steps[(index + round) % steps.length];
        if (!step) continue;
        await ensureWorkers(step.workers);
        await step.run(round + 1);
      }
    }

    const argon2One = summarise(
      `argon2id, 1 process x ${COMMAND_CONCURRENCY} in flight (hashes/s; baseline)`,
      runs.argon2One,
    );
    const importOne = summarise(
      `UserSeeding ${importUsers.toLocaleString('en-US')} users, Normal, 1 worker`,
      runs.importOne,
    );
    const argon2Two = summarise(
      `argon2id, 2 processes x ${COMMAND_CONCURRENCY} in flight (hashes/s; baseline)`,
      runs.argon2Two,
    );
    const importTwo = summarise(
      `UserSeeding ${importUsers.toLocaleString('en-US')} users as 2 x ${(importUsers / 2).toLocaleString('en-US')}, Normal, 2 workers`,
      runs.importTwo,
    );
    const highRow = (name: string, measured: readonly LoadResult[]): ComparisonRow => ({
      ...summarise(name, measured),
      ratio: null,
      target: null,
      standalone: true,
      p50BelowMs: HIGH_P50_TARGET_MS,
    });
    const rows: ComparisonRow[] = [
      ...compareWith(argon2One, [importOne], RATE_TARGET),
      ...compareWith(argon2Two, [importTwo], RATE_TARGET),
      highRow('High import, 1 user without password, idle queue (round trip)', runs.highBare),
      highRow('High import, 1 user with password, idle queue (round trip)', runs.highHashed),
    ];

    return {
      name: NAME,
      title: 'UserSeeding imports (POST /api/import) vs the bare argon2id hash rate',
      settings,
      rateUnit: 'users/s',
      loadDescription:
        `${settings.rounds} round(s), each running every step once in rotated order: the argon2 baseline in 1 and in 2 processes ` +
        `(${settings.warmupSeconds} s warm-up, ${settings.durationSeconds} s counted), one measured ${importUsers}-user Normal import ` +
        `with 1 and with 2 workers, ${highSamples} sequential High imports of each kind (after ${HIGH_WARMUP_SAMPLES} discarded); medians reported`,
      machine,
      rows,
      notes: [
        `The service runs compiled (\`npm run build\`): one \`node dist/ingress/main.js\` (NODE_ENV=production, LOG_LEVEL=warn) and as many \`node dist/workers/main.js\` as the step needs (WORKER_CONCURRENCY=1, LOG_LEVEL=info: two lines per import), IMPORT_COMMAND_CONCURRENCY=${COMMAND_CONCURRENCY}, on a private redis-server on loopback. Workers are started (and given a ${WARMUP_USERS_PER_WORKER}-user warm-up import each) before the step that needs them and stopped before a baseline step.`,
        `Imports are sent by the bootstrap Admin by Basic (AUTH_CACHE_TTL_SECONDS=3600: its one verification hash happens before any measurement). Each user: a unique e-mail, userType Human, roles [Member], a 20-character password, so each costs one argon2id hash. users/s = users / (time from sending POST /api/import to BullMQ's \`completed\` event for its job, read from the queue's event stream by a QueueEvents in the bench process); GetImportJobResult is then asked once for the result (it must be Completed with every user). Polling GetImportJobResult every ${POLL_MS} ms instead costs the ingress and the bench process about 5% of this 2-core machine, taken from the hashing the baseline is not sharing.`,
        `2 workers: the users are sent as 2 imports of ${importUsers / 2} submitted at once; with WORKER_CONCURRENCY=1 each worker takes one (checked in the workers' logs). One import runs in one worker: this is how a large import uses several workers today.`,
        `The baseline (bench/baselines/argon2-rate.cjs) hashes with @node-rs/argon2 and the service's ARGON2_PARAMETERS (read from dist/), ${COMMAND_CONCURRENCY} hashes in flight per process as an import keeps ${COMMAND_CONCURRENCY} commands in flight, with no service process but the idle ingress running; the 2-process row runs two at once and sums them. Both hash on libuv's thread pool (4 threads by default), so one process can already use ${COMMAND_CONCURRENCY} cores: on a machine with fewer, 2 processes cannot hash faster than 1.`,
        `"vs baseline" is users/s over the hash rate at the same parallelism (one hash per user); target ${RATE_TARGET}.`,
        `High: one-user imports with priority High on an idle queue run inline in the ingress and answer the full result; the round trip is measured in the bench process (fetch), with 1 idle worker running. Target: p50 under ${HIGH_P50_TARGET_MS} ms. The "per round" column of these rows shows the p99 per round.`,
      ],
      problems: [...problems, ...problemsOf(rows)],
    };
  } finally {
    await stopAll();
  }
}

if (require.main === module) void runBenches([{ name: NAME, load: () => Promise.resolve({ run }) }]);
