import { randomUUID } from 'node:crypto';
import { request } from 'node:http';
import { performance } from 'node:perf_hooks';

import { SYSTEM_ACTOR } from '../shared/accounts/account';
import { loadConfig } from '../shared/config';
import { createCoreServices } from '../shared/core-services';
import { createLogger } from '../shared/logger';
import { closeConnections, createRedisConnection, waitForRedis } from '../shared/redis/connections';
import { type LoadResult, median } from './lib/load';
import { cpuSeconds } from './lib/process-cost';
import { ensureBuilt, stopAll } from './lib/processes';
import { type BenchReport, type ComparisonRow, machineInfo } from './lib/report';
import { basicAuthorization, sleep, startService } from './lib/service';

/**
 * GET /api/events with 1 and 100 connected clients while events are appended at a steady rate:
 * the append-to-receipt latency (from just before the append is sent to the moment a client has
 * parsed the event) and the ingress's CPU per event, from /proc.
 *
 * Settings: BENCH_EVENT_RATE (events/s, default 200), BENCH_DURATION (seconds, default 10),
 * BENCH_ROUNDS (default 3).
 */

const NAME = 'event-stream';
const RATE = Number(process.env.BENCH_EVENT_RATE ?? 200);
const DURATION_S = Number(process.env.BENCH_DURATION ?? 10);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
/** 0: the same appends with no stream open, the ingress's own cost of them (its account cache hears each). */
const CLIENT_COUNTS = [0, 1, 100];

interface StreamClient {
  readonly received: Map<string, number>;
  close(): void;
}

/** A client that records when each event's aggregate id arrived (performance.now()). */
function connect(url: string, authorization: string): Promise<StreamClient> {
  return new Promise((resolve, reject) => {
    const received = new Map<string, number>();
    let buffer = '';
    let opened = false;
    const req = request(
      url,
      { headers: { authorization, accept: 'text/event-stream' }, agent: false },
      (res) => {
        if (res.statusCode !== 200) {
          reject(new Error(`stream answered ${res.statusCode}`));
          return;
        }
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          const now = performance.now();
          buffer += chunk;
          let end = buffer.indexOf('\n\n');
          while (end !== -1) {
            const block = buffer.slice(0, end);
            buffer = buffer.slice(end + 2);
            const data = block.split('\n').find((line) => line.startsWith('data: '));
            if (data) {
              const { data: fields } = JSON.parse(data.slice(6)) as { data: { aggregateId: string } };
              received.set(fields.aggregateId, now);
            } else if (!opened) {
              opened = true;
              resolve({ received, close: () => req.destroy() });
            }
            end = buffer.indexOf('\n\n');
          }
        });
      },
    );
    req.on('error', (error) => {
      if (!opened) reject(error);
    });
    req.end();
  });
}

function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] as number;
}

export async function run(): Promise<BenchReport> {
  ensureBuilt();
  const machine = machineInfo();
  try {
    const service = await startService(NAME, {
      workers: 0,
      ingressEnv: { SSE_MAX_CONNECTIONS: '1000', SSE_MAX_CONNECTIONS_PER_ACCOUNT: '1000' },
    });
    const config = loadConfig({ ...service.env, NODE_ENV: 'test', LOG_LEVEL: 'warn' });
    const logger = createLogger({ level: 'warn', processRole: 'bench' });
    const redis = createRedisConnection(config.redis, 'request', logger);
    await waitForRedis(redis, logger);
    const core = createCoreServices(config, redis);
    const url = `${service.ingress.baseUrl}/api/events?types=UserCreatedEvent`;
    const authorization = basicAuthorization(service.credentials);

    const runs = new Map<number, (LoadResult & { cpuPerEvent: number; cpuPerDelivery: number })[]>();
    for (let round = 1; round <= ROUNDS; round++) {
      for (const clientCount of CLIENT_COUNTS) {
        const clients: StreamClient[] = [];
        for (let i = 0; i < clientCount; i++) clients.push(await connect(url, authorization));
        const appendedAt = new Map<string, number>();
        const cpuBefore = cpuSeconds(service.ingress.pid);
        const started = performance.now();
        const total = Math.round(RATE * DURATION_S);
        const appends: Promise<unknown>[] = [];
        for (let i = 0; i < total; i++) {
          const due = started + (i * 1000) / RATE;
          const wait = due - performance.now();
          if (wait > 1) await sleep(wait);
          const email = `bench-${randomUUID()}@example.com`;
          const sent = performance.now();
          appends.push(
            core.accounts
              .createUser(
                SYSTEM_ACTOR,
                { email, userType: 'Human', roles: ['Member'] },
                {
                  requestId: null,
                  correlationId: 'bench-event-stream',
                },
              )
              .then((result) => {
                if (result.status !== 'created') throw new Error(`not created: ${result.status}`);
                appendedAt.set(result.userId, sent);
              }),
          );
        }
        await Promise.all(appends);
        const deadline = performance.now() + 15_000;
        while (performance.now() < deadline && clients.some((client) => client.received.size < total))
          await sleep(20);
        const elapsedS = (performance.now() - started) / 1000;
        const cpu = cpuSeconds(service.ingress.pid) - cpuBefore;
        const latencies: number[] = [];
        let missing = 0;
        for (const client of clients) {
          for (const [userId, sent] of appendedAt) {
            const at = client.received.get(userId);
            if (at === undefined) missing++;
            else latencies.push(at - sent);
          }
          client.close();
        }
        latencies.sort((a, b) => a - b);
        const deliveries = latencies.length;
        const result = {
          requestsPerSecond: deliveries / elapsedS,
          p50Ms: percentile(latencies, 50),
          p99Ms: percentile(latencies, 99),
          responses: deliveries,
          non2xx: 0,
          errors: missing,
          warmupFailures: 0,
          cpuPerEvent: (cpu * 1e6) / total,
          cpuPerDelivery: (cpu * 1e6) / Math.max(1, deliveries),
        };
        process.stderr.write(
          `[bench] round ${round}: ${clientCount} client(s): ${deliveries} deliveries, p50 ${result.p50Ms.toFixed(1)} ms, p99 ${result.p99Ms.toFixed(1)} ms, ingress ${result.cpuPerEvent.toFixed(0)} µs CPU per event, ${missing} missing\n`,
        );
        runs.set(clientCount, [...(runs.get(clientCount) ?? []), result]);
        await sleep(500);
      }
    }
    await closeConnections(redis);
    logger.close();

    const rows: ComparisonRow[] = CLIENT_COUNTS.map((clientCount) => {
      const own = runs.get(clientCount) ?? [];
      return {
        workload:
          clientCount === 0
            ? `no stream open, ${RATE} events/s appended (baseline)`
            : `${clientCount} client(s), ${RATE} events/s appended`,
        runs: own,
        requestsPerSecond: median(own.map((r) => r.requestsPerSecond)),
        p50Ms: median(own.map((r) => r.p50Ms)),
        p99Ms: median(own.map((r) => r.p99Ms)),
        non2xx: 0,
        errors: own.reduce((sum, r) => sum + r.errors, 0),
        warmupFailures: 0,
        ratio: null,
        standalone: true,
        target: null,
        ...(clientCount === 0 ? {} : { p99BelowMs: 100 }),
      };
    });
    const cpuLine = CLIENT_COUNTS.map((clientCount) => {
      const own = runs.get(clientCount) ?? [];
      const perEvent = `${median(own.map((r) => r.cpuPerEvent)).toFixed(0)} µs per appended event`;
      if (clientCount === 0) return `no stream: ${perEvent}`;
      return `${clientCount} client(s): ${perEvent}, ${median(own.map((r) => r.cpuPerDelivery)).toFixed(1)} µs per delivery`;
    }).join('; ');
    const missing = rows.reduce((sum, row) => sum + row.errors, 0);
    return {
      name: NAME,
      title: 'The event stream (GET /api/events): append-to-receipt latency and ingress CPU per event',
      settings: {
        connections: Math.max(...CLIENT_COUNTS),
        warmupSeconds: 0,
        durationSeconds: DURATION_S,
        rounds: ROUNDS,
      },
      rateUnit: 'deliveries/s',
      loadDescription: `${RATE} UserCreatedEvents/s appended for ${DURATION_S} s per run (open loop, through the command handler in the bench process, no password), to 1 and then 100 clients connected with from=now and types=UserCreatedEvent; ${ROUNDS} round(s), medians reported`,
      machine,
      rows,
      notes: [
        `Ingress CPU (user + system, /proc) over the run, divided by events appended and by deliveries: ${cpuLine}. The ingress serves nothing else meanwhile (its heartbeat is 15 s).`,
        "Latency: from just before the append is sent to Redis (bench process) to the moment a client in the bench process has parsed the event; the clients, the appender and their 100 sockets share one event loop, so the figure includes the bench process's own delays. Target p99 < 100 ms is the issue's goal for webhooks, shown for comparison.",
        'The service runs compiled (`node dist/ingress/main.js`, NODE_ENV=production, LOG_LEVEL=warn) on a private redis-server on loopback; no worker (the stream reads the log itself).',
      ],
      problems: missing > 0 ? [`${missing} deliveries missing after a 15 s grace`] : [],
    };
  } finally {
    await stopAll();
  }
}
