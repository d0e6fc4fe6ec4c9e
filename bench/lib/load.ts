import autocannon from 'autocannon';

/** One kind of request sent over and over: the thing a row of the results table describes. */
export interface Workload {
  readonly name: string;
  readonly url: string;
  readonly method: 'GET' | 'POST';
  readonly headers?: Readonly<Record<string, string>>;
  readonly body?: string;
  /**
   * Requests built per send (autocannon's `requests`, e.g. with `setupRequest` and `onResponse`), made
   * afresh for each run; each connection cycles through them. `body` is their default body.
   */
  readonly requests?: () => autocannon.Request[];
  /** Before each run, warm-up and measured alike: e.g. brings the data the requests act on to a known state. */
  readonly beforeRun?: () => Promise<void>;
  /**
   * Started with each measured run (not the warm-up) and awaited with it: e.g. a probe sampling what the
   * service does under that load. It gets the run's duration in seconds.
   */
  readonly alongside?: (durationSeconds: number) => Promise<void>;
}

/** Identical for every workload of a comparison; only then are their rates comparable. */
export interface LoadSettings {
  readonly connections: number;
  /** Seconds of load discarded before each measured run (JIT, caches, connection set-up). */
  readonly warmupSeconds: number;
  readonly durationSeconds: number;
  /**
   * Requests a second over all connections (autocannon's overallRate), when set: every workload then
   * runs at the same rate, so CPU per request compares servers doing the same work per wake-up (a
   * closed loop lets a faster server batch more requests per event-loop turn). Unset: closed loop.
   */
  readonly ratePerSecond?: number;
}

/** What one measured run saw. */
export interface LoadResult {
  /** Completed responses divided by the run's duration. */
  readonly requestsPerSecond: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly responses: number;
  readonly non2xx: number;
  /** Connection errors and timeouts. */
  readonly errors: number;
  /** Non-2xx answers, errors and timeouts during the discarded warm-up: they invalidate the run too. */
  readonly warmupFailures: number;
}

/** A positive number from the environment, or `fallback` when the variable is unset. */
export function positiveNumberFromEnv(name: string, fallback: number): number {
  const text = process.env[name];
  if (text === undefined || text === '') return fallback;
  const value = Number(text);
  if (!Number.isFinite(value) || value <= 0) throw new Error(`${name} must be a positive number`);
  return value;
}

/**
 * The settings the bench uses unless BENCH_CONNECTIONS, BENCH_WARMUP, BENCH_DURATION or BENCH_ROUNDS
 * say otherwise; BENCH_RATE paces every run at that many requests a second.
 */
export function settingsFromEnv(defaults: LoadSettings & { rounds: number }): LoadSettings & {
  rounds: number;
} {
  const read = positiveNumberFromEnv;
  return {
    connections: Math.round(read('BENCH_CONNECTIONS', defaults.connections)),
    warmupSeconds: read('BENCH_WARMUP', defaults.warmupSeconds),
    durationSeconds: read('BENCH_DURATION', defaults.durationSeconds),
    rounds: Math.round(read('BENCH_ROUNDS', defaults.rounds)),
    ...(process.env.BENCH_RATE ? { ratePerSecond: read('BENCH_RATE', 1) } : {}),
  };
}

async function fire(
  workload: Workload,
  connections: number,
  durationSeconds: number,
  ratePerSecond?: number,
) {
  return autocannon({
    url: workload.url,
    method: workload.method,
    headers: { ...workload.headers },
    ...(workload.body === undefined ? {} : { body: workload.body }),
    ...(workload.requests ? { requests: workload.requests() } : {}),
    connections,
    duration: durationSeconds,
    ...(ratePerSecond === undefined ? {} : { overallRate: ratePerSecond }),
    pipelining: 1,
    // The default (10 s) would hide a stall as a slow sample; count it as an error instead.
    timeout: 5,
  });
}

/** A warm-up run (discarded, but its failures counted), then one measured run. */
export async function measure(workload: Workload, settings: LoadSettings): Promise<LoadResult> {
  await workload.beforeRun?.();
  const warmup =
    settings.warmupSeconds > 0
      ? await fire(workload, settings.connections, settings.warmupSeconds, settings.ratePerSecond)
      : null;
  if (warmup) await workload.beforeRun?.();
  const [result] = await Promise.all([
    fire(workload, settings.connections, settings.durationSeconds, settings.ratePerSecond),
    workload.alongside?.(settings.durationSeconds),
  ]);
  const responses = result['1xx'] + result['2xx'] + result['3xx'] + result['4xx'] + result['5xx'];
  return {
    requestsPerSecond: responses / result.duration,
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    responses,
    non2xx: result.non2xx,
    errors: result.errors,
    warmupFailures: warmup ? warmup.non2xx + warmup.errors : 0,
  };
}

export function median(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1
    ? (sorted[middle] ?? Number.NaN)
    : ((sorted[middle - 1] ?? Number.NaN) + (sorted[middle] ?? Number.NaN)) / 2;
}

/**
 * The `p`-th percentile (0-100) of samples, nearest rank, as autocannon reports its latencies: p99 of
 * 200 samples is the 198th smallest. NaN without samples.
 */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil((p / 100) * sorted.length)));
  return sorted[rank - 1] ?? Number.NaN;
}

/** A workload's runs over every round, and their medians. */
export interface Measured {
  readonly workload: string;
  readonly runs: readonly LoadResult[];
  readonly requestsPerSecond: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly non2xx: number;
  readonly errors: number;
  readonly warmupFailures: number;
}

/** A workload's runs as one row: medians of rate and latencies, sums of failures. */
export function summarise(workload: string, runs: readonly LoadResult[]): Measured {
  return {
    workload,
    runs,
    requestsPerSecond: median(runs.map((run) => run.requestsPerSecond)),
    p50Ms: median(runs.map((run) => run.p50Ms)),
    p99Ms: median(runs.map((run) => run.p99Ms)),
    non2xx: runs.reduce((sum, run) => sum + run.non2xx, 0),
    errors: runs.reduce((sum, run) => sum + run.errors, 0),
    warmupFailures: runs.reduce((sum, run) => sum + run.warmupFailures, 0),
  };
}

/** One stderr line per run: `[bench] round N: <what>: <rate> req/s, p50 .. ms, p99 .. ms`. */
export function reportRun(what: string, round: number, result: LoadResult): void {
  const rate = Number.isFinite(result.requestsPerSecond)
    ? `${result.requestsPerSecond.toFixed(0)} req/s, `
    : '';
  process.stderr.write(
    `[bench] round ${round}: ${what}: ${rate}p50 ${result.p50Ms.toFixed(1)} ms, p99 ${result.p99Ms.toFixed(1)} ms` +
      (result.non2xx + result.errors > 0 ? `, ${result.non2xx} non-2xx, ${result.errors} errors` : '') +
      '\n',
  );
}

/** reportRun for measureInterleaved's onRun. */
export function reportWorkloadRun(workload: Workload, round: number, result: LoadResult): void {
  reportRun(workload.name, round, result);
}

/**
 * Measures every workload `rounds` times, interleaved (round 1: A B C, round 2: B C A, ...), so a
 * noisy neighbour or thermal drift lands on all of them alike; reports medians.
 */
export async function measureInterleaved(
  workloads: readonly Workload[],
  settings: LoadSettings & { rounds: number },
  /** Awaited before the next run starts, so what it reads of the servers is this run's alone. */
  onRun: (workload: Workload, round: number, result: LoadResult) => void | Promise<void> = () => undefined,
): Promise<Measured[]> {
  const runs = new Map<string, LoadResult[]>(workloads.map((workload) => [workload.name, []]));
  for (let round = 0; round < settings.rounds; round += 1) {
    for (let index = 0; index < workloads.length; index += 1) {
      const workload = workloads[(index + round) % workloads.length];
      if (!workload) continue;
      const result = await measure(workload, settings);
      runs.get(workload.name)?.push(result);
      await onRun(workload, round + 1, result);
    }
  }
  return workloads.map((workload) => summarise(workload.name, runs.get(workload.name) ?? []));
}
