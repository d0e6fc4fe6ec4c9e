import { type ChildProcess, fork } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { cpus, loadavg } from 'node:os';
import path from 'node:path';

import { Redis } from 'ioredis';

import { ALL_PROJECTIONS } from '../workers/projector/all-projections';
import { readProjectorLag } from '../workers/projector/projector-lag';
import { type LoadResult, percentile, summarise } from './lib/load';
import { cpuSeconds } from './lib/process-cost';
import { ensureBuilt, stopAll, track } from './lib/processes';
import { type BenchReport, type ComparisonRow, machineInfo } from './lib/report';
import {
  commandOrThrow,
  forEachConcurrently,
  issueToken,
  postJson,
  sleep,
  startService,
  startWorker,
} from './lib/service';

const NAME = 'webhooks';
/** Events appended per scenario, at EVENTS_PER_SECOND (an open loop: the schedule does not wait). */
const EVENTS = Number(process.env.BENCH_WEBHOOK_EVENTS ?? 10_000);
const EVENTS_PER_SECOND = Number(process.env.BENCH_WEBHOOK_RATE ?? 1_000);
/** Teams the events are spread over: each gets Link, Unlink, Link... in its own order. */
const TEAMS = 500;
/** How long the last deliveries may take before the run counts them as missing. */
const DRAIN_TIMEOUT_MS = 120_000;

interface ReceiverReport {
  readonly latencies: number[];
  readonly total: number;
  readonly firstAt: number;
  readonly lastAt: number;
}

/**
 * The receiver (bench/baselines/webhook-receiver.cjs) in a process of its own, so the bench's
 * own load generator never slows its answers.
 */
class Receiver {
  private child: ChildProcess | undefined;
  port = 0;
  last: ReceiverReport = { latencies: [], total: 0, firstAt: 0, lastAt: 0 };

  async start(): Promise<void> {
    const child = fork(path.join(__dirname, 'baselines', 'webhook-receiver.cjs'), [], { stdio: 'inherit' });
    this.child = child;
    this.port = await new Promise<number>((resolve) =>
      child.once('message', (message: { port: number }) => resolve(message.port)),
    );
  }

  private ask<T>(type: string): Promise<T> {
    const child = this.child;
    if (!child) throw new Error('receiver not started');
    return new Promise<T>((resolve) => {
      child.once('message', (message: T) => resolve(message));
      child.send({ type });
    });
  }

  async reset(): Promise<void> {
    await this.ask('reset');
    this.last = { latencies: [], total: 0, firstAt: 0, lastAt: 0 };
  }

  async report(): Promise<ReceiverReport> {
    this.last = await this.ask<ReceiverReport>('report');
    return this.last;
  }

  /** Polls the receiver until it has `count` deliveries or the time runs out. */
  async waitFor(count: number, timeoutMs: number): Promise<ReceiverReport> {
    const deadline = Date.now() + timeoutMs;
    let report = await this.report();
    while (report.total < count && Date.now() < deadline) {
      await sleep(100);
      report = await this.report();
    }
    return report;
  }

  get pid(): number {
    return this.child?.pid ?? 0;
  }

  stop(): void {
    this.child?.disconnect();
  }
}

/**
 * Where delivery runs: in the one worker beside the projector (`shared`), or in a worker of its own
 * (`split`: WORKER_CONSUMERS=webhooks beside a worker of projections,imports), as an operator
 * scales it.
 */
type Layout = 'shared' | 'split';

/** CPU microseconds per event appended, by process, over the paced window and its drain. */
interface CpuPerEvent {
  readonly ingress: number;
  readonly redis: number;
  readonly projector: number;
  /** The worker that delivers (the same as `projector` when shared), per delivery. */
  readonly delivery: number;
  readonly receiver: number;
}

interface Scenario {
  readonly subscriptions: number;
  /** Append-to-receipt, over every (subscription, event), at the paced rate. */
  readonly latency: LoadResult | null;
  /** A replay of the whole window: deliveries per second while the backlog drains. */
  readonly drain: LoadResult | null;
  /** The fantasy-team projection's lag (log entries behind, summed over partitions) while appending. */
  readonly projectorLag: LoadResult;
  readonly layout: Layout;
  readonly cpu: CpuPerEvent;
}

const run1 = (rate: number, p50: number, p99: number, responses: number): LoadResult => ({
  requestsPerSecond: rate,
  p50Ms: p50,
  p99Ms: p99,
  non2xx: 0,
  errors: 0,
  warmupFailures: 0,
  responses,
});

async function scenario(subscriptions: number, layout: Layout, receiver: Receiver): Promise<Scenario> {
  const service = await startService(`${NAME}-${subscriptions}-${layout}`, {
    env: { WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' },
    ...(layout === 'split' ? { workerEnv: { WORKER_CONSUMERS: 'projections,imports' } } : {}),
  });
  const { ingress, credentials, redisServer, keys } = service;
  const projectorWorker = service.workers[0];
  const deliveryWorker =
    layout === 'split'
      ? await startWorker('delivery', { ...service.env, WORKER_CONSUMERS: 'webhooks' })
      : projectorWorker;
  if (!projectorWorker || !deliveryWorker) throw new Error('no worker');
  const pids = {
    ingress: ingress.pid,
    redis: redisServer.pid,
    projector: projectorWorker.pid,
    delivery: deliveryWorker.pid,
    receiver: receiver.pid,
  };
  const cpuNow = () =>
    Object.fromEntries(Object.entries(pids).map(([role, pid]) => [role, cpuSeconds(pid)])) as Record<
      keyof typeof pids,
      number
    >;
  const redis = new Redis(redisServer.url, { maxRetriesPerRequest: 1 });
  track({ stop: async () => void (await redis.quit().catch(() => undefined)) });
  const token = await issueToken(ingress, credentials);
  const teams = Array.from({ length: TEAMS }, () => randomUUID());
  await forEachConcurrently(teams, 32, (teamId) =>
    commandOrThrow(ingress, token, 'CreateFantasyTeam', { aggregateRootId: teamId, name: 'bench team' }),
  );
  const subscriptionIds: string[] = [];
  for (let i = 0; i < subscriptions; i++) {
    const id = randomUUID();
    await commandOrThrow(ingress, token, 'CreateWebhookSubscription', {
      aggregateRootId: id,
      url: `http://127.0.0.1:${receiver.port}/hook/${i}`,
      eventTypes: ['*'],
    });
    subscriptionIds.push(id);
  }
  await sleep(1_500); // The worker reads subscriptions again at once, and every second.
  await receiver.reset();

  // Paced appends: event i is due at start + i / rate; each team's commands stay in order.
  const windowStart = new Date().toISOString();
  const cpuBefore = cpuNow();
  const perTeam = Math.ceil(EVENTS / TEAMS);
  const start = Date.now();
  const lagSamples: number[] = [];
  let appending = true;
  const sampler = (async () => {
    while (appending) {
      const lag = await readProjectorLag(redis, keys, ALL_PROJECTIONS);
      lagSamples.push(
        lag.filter((l) => l.projection === 'fantasy-team').reduce((sum, l) => sum + l.entriesBehind, 0),
      );
      await sleep(20);
    }
  })();
  let failures = 0;
  await Promise.all(
    teams.map(async (teamId, teamIndex) => {
      for (let j = 0; j < perTeam; j++) {
        const index = j * TEAMS + teamIndex;
        if (index >= EVENTS) return;
        const due = start + (index * 1000) / EVENTS_PER_SECOND;
        if (due > Date.now()) await sleep(due - Date.now());
        const answer = await postJson(
          `${ingress.baseUrl}/api/command`,
          j % 2 === 0
            ? {
                commandType: 'LinkFantasyTeam',
                command: { aggregateRootId: teamId, fantasyTeamExternalId: j + 1, fantasyUserId: 1 },
              }
            : { commandType: 'UnlinkFantasyTeam', command: { aggregateRootId: teamId } },
          { authorization: `Bearer ${token}` },
        );
        if (answer.status !== 200) failures++;
      }
    }),
  );
  const appendSeconds = (Date.now() - start) / 1000;
  const expected = (EVENTS - failures) * subscriptions;
  const paced =
    subscriptions === 0 ? await receiver.report() : await receiver.waitFor(expected, DRAIN_TIMEOUT_MS);
  appending = false;
  await sampler;
  const cpuAfter = cpuNow();
  const micros = (role: keyof typeof pids, per: number) =>
    per > 0 ? Math.round(((cpuAfter[role] - cpuBefore[role]) * 1e6) / per) : NaN;
  const appended = EVENTS - failures;
  const cpu: CpuPerEvent = {
    ingress: micros('ingress', appended),
    redis: micros('redis', appended),
    projector: micros('projector', appended),
    delivery: micros('delivery', paced.total),
    receiver: micros('receiver', paced.total),
  };
  const all = paced.latencies;
  const latency =
    subscriptions === 0
      ? null
      : run1(
          paced.total / ((paced.lastAt - start) / 1000),
          percentile(all, 50),
          percentile(all, 99),
          all.length,
        );
  const projectorLag = run1(
    EVENTS / appendSeconds,
    percentile(lagSamples, 50),
    percentile(lagSamples, 99),
    lagSamples.length,
  );
  if (failures > 0 || (subscriptions > 0 && paced.total < expected)) {
    process.stderr.write(
      `[bench] ${subscriptions} subscription(s): ${failures} commands failed, ${paced.total}/${expected} received\n`,
    );
  }

  // Drain: the same window replayed to every subscription at once, as fast as delivery goes.
  let drain: LoadResult | null = null;
  if (subscriptions > 0) {
    await receiver.reset();
    const replayStart = Date.now();
    for (const id of subscriptionIds) {
      await commandOrThrow(ingress, token, 'ReplayWebhookEvents', { aggregateRootId: id, from: windowStart });
    }
    const replayed = await receiver.waitFor(expected, DRAIN_TIMEOUT_MS);
    const seconds = (replayed.lastAt - replayStart) / 1000;
    drain = run1(replayed.total / seconds, NaN, NaN, replayed.total);
    process.stderr.write(
      `[bench] ${subscriptions} subscription(s): replay of ${replayed.total} deliveries in ${seconds.toFixed(1)} s\n`,
    );
  }
  await redis.quit().catch(() => undefined);
  await Promise.all([...service.workers, deliveryWorker, ingress].map((p) => p.stop()));
  await service.redisServer.stop();
  return { subscriptions, latency, drain, projectorLag, layout, cpu };
}

export async function run(): Promise<BenchReport> {
  const machine = machineInfo();
  const [loadBefore = 0] = loadavg();
  const machineLoaded = loadBefore > cpus().length;
  ensureBuilt();
  const receiver = new Receiver();
  await receiver.start();
  try {
    const scenarios: Scenario[] = [];
    // BENCH_WEBHOOK_SCENARIOS, e.g. "1:split,10:split", runs only those (subscriptions:layout).
    const plan: [number, Layout][] = (
      process.env.BENCH_WEBHOOK_SCENARIOS ?? '0:shared,1:shared,1:split,10:split'
    )
      .split(',')
      .map((item) => {
        const [count, layout] = item.split(':');
        return [Number(count), layout === 'split' ? 'split' : 'shared'];
      });
    for (const [subscriptions, layout] of plan) {
      process.stderr.write(
        `[bench] ${EVENTS} events at ${EVENTS_PER_SECOND}/s, ${subscriptions} subscription(s), ${layout}\n`,
      );
      scenarios.push(await scenario(subscriptions, layout, receiver));
    }
    const row = (
      workload: string,
      result: LoadResult,
      extra: Partial<ComparisonRow> = {},
    ): ComparisonRow => ({
      ...summarise(workload, [result]),
      ratio: null,
      standalone: true,
      target: null,
      ...extra,
    });
    const rows: ComparisonRow[] = [];
    for (const s of scenarios) {
      const where = s.layout === 'split' ? 'delivery in a worker of its own' : 'one worker';
      const label =
        s.subscriptions === 0 ? 'no subscription' : `${s.subscriptions} subscription(s), ${where}`;
      rows.push(
        row(`projector lag while appending, ${label} (entries behind; rate: appends/s)`, s.projectorLag),
      );
      if (s.latency) {
        rows.push(
          row(
            `append-to-receipt at ${EVENTS_PER_SECOND} events/s, ${label} (rate: deliveries/s)`,
            s.latency,
            {
              p99BelowMs: 100,
            },
          ),
        );
      }
      if (s.drain) rows.push(row(`replay of the window, ${label}: delivered events/s`, s.drain));
    }
    return {
      name: NAME,
      title: 'Webhook delivery: 10,000 events to a receiver on loopback',
      settings: { connections: 0, warmupSeconds: 0, durationSeconds: EVENTS / EVENTS_PER_SECOND, rounds: 1 },
      rateUnit: 'events/s',
      loadDescription: `${EVENTS} Link/Unlink commands over ${TEAMS} teams sent by the bench at ${EVENTS_PER_SECOND}/s (open loop), one ingress, one worker, a receiver in a process of its own answering 204`,
      machine,
      rows,
      notes: [
        "append-to-receipt: receipt time minus the event's timestamp (its decision, just before the append), over every (subscription, event) pair; p99 target 100 ms at 1,000 events/s.",
        "projector lag: the fantasy-team projection's entries behind the log head, summed over the 16 partitions, sampled every 20 ms while appending; at 1,000 events/s one entry is about 1 ms. Compare the rows with and without subscriptions.",
        'replay: ReplayWebhookEvents of the whole window to every subscription at once; deliveries per second while the backlog drains (16 lanes per subscription, one event in flight per lane).',
        ...(machineLoaded
          ? [
              `The machine was shared while this ran (load average ${loadBefore.toFixed(1)} on ${cpus().length} cores before it): the appends did not reach their rate and the latencies measure the wait for a core; read the CPU lines, which the neighbours move far less.`,
            ]
          : []),
        'CPU from /proc over the paced window and its drain (user + system), in microseconds: ingress, Redis and the projecting worker per event appended; the delivering worker and the receiver per delivery (the delivering worker is the projecting one in the one-worker rows, so its figure holds both):',
        ...scenarios.map(
          ({ subscriptions, layout, cpu }) =>
            `  - ${subscriptions} subscription(s), ${layout === 'split' ? 'delivery in a worker of its own' : 'one worker'}: ingress ${cpu.ingress} µs, Redis ${cpu.redis} µs, projecting worker ${cpu.projector} µs per event; delivering worker ${Number.isNaN(cpu.delivery) ? '-' : cpu.delivery} µs, receiver ${Number.isNaN(cpu.receiver) ? '-' : cpu.receiver} µs per delivery`,
        ),
      ],
      problems: [],
    };
  } finally {
    receiver.stop();
    await stopAll();
  }
}
