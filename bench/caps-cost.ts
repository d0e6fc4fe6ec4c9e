import { randomBytes, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { type ClientRequest, request } from 'node:http';
import path from 'node:path';

import Redis from 'ioredis';

import { cpuSeconds } from './lib/process-cost';
import { ensureBuilt, REPO_ROOT, startServer, stopAll } from './lib/processes';
import { machineInfo } from './lib/report';
import { basicAuthorization, sleep, startService } from './lib/service';

/**
 * `npm run bench:caps-cost`: what one idle event stream and one waiting `minVersion` read cost
 * the ingress and Redis (issue 29), to set SSE_MAX_CONNECTIONS and READ_MAX_WAITERS from. Opens
 * BENCH_HOLDERS (default 1000) idle streams, then as many reads waiting for a version that never
 * comes, and compares each with as many idle responses held open by a bare node http server (the
 * baseline: what any held-open request costs). Reports per 100 held: ingress heap and RSS, Redis
 * connections and memory, and ingress CPU over BENCH_IDLE_S (default 16) seconds of idleness (one
 * 15 s heartbeat of every stream in it). Writes its section of bench/RESULTS.md.
 */

const HOLDERS = Number(process.env.BENCH_HOLDERS ?? 1_000);
const IDLE_S = Number(process.env.BENCH_IDLE_S ?? 16);
const METRICS_TOKEN = randomBytes(24).toString('hex');
const SECTION = 'caps-cost';

interface Sample {
  readonly heapBytes: number;
  readonly rssBytes: number;
  readonly redisClients: number;
  readonly redisMemoryBytes: number;
  readonly cpuSeconds: number;
}

interface Held {
  readonly sockets: ClientRequest[];
  close(): void;
}

/** Opens `count` requests that stay open, resolving once each answered its headers (or, for a wait, was sent). */
async function hold(
  count: number,
  open: (index: number) => ClientRequest,
  headersExpected: boolean,
): Promise<Held> {
  const sockets: ClientRequest[] = [];
  const batch = 50;
  for (let start = 0; start < count; start += batch) {
    await Promise.all(
      Array.from({ length: Math.min(batch, count - start) }, (_, offset) => {
        const req = open(start + offset);
        sockets.push(req);
        req.on('error', () => undefined);
        if (!headersExpected) return Promise.resolve();
        return new Promise<void>((resolve, reject) => {
          req.on('response', (res) => {
            res.on('data', () => undefined);
            if (res.statusCode === 200) resolve();
            else reject(new Error(`held request answered ${res.statusCode}`));
          });
        });
      }),
    );
  }
  return { sockets, close: () => sockets.forEach((req) => req.destroy()) };
}

function rssBytes(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8')
    .split('\n')
    .find((l) => l.startsWith('VmRSS:'));
  return Number(/(\d+)/.exec(line ?? '')?.[1] ?? 0) * 1024;
}

/** The process's heap in use, from its own /metrics (after it has settled). */
async function ingressHeap(baseUrl: string): Promise<number> {
  const res = await fetch(`${baseUrl}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
  const text = await res.text();
  const line = text.split('\n').find((l) => l.startsWith('fts_nodejs_heap_size_used_bytes '));
  return Number(line?.split(' ')[1] ?? Number.NaN);
}

/** The baseline's heap in use: it answers GET /heap with its own process.memoryUsage(). */
async function baselineHeap(baseUrl: string): Promise<number> {
  const res = await fetch(`${baseUrl}/heap`);
  return Number(await res.text());
}

async function sample(
  pid: number,
  heap: () => Promise<number>,
  redis: Redis | undefined,
  idleS: number,
): Promise<Sample> {
  const cpuBefore = cpuSeconds(pid);
  await sleep(idleS * 1000);
  const cpu = cpuSeconds(pid) - cpuBefore;
  const info = redis ? await redis.info() : '';
  const field = (name: string) => Number(new RegExp(`^${name}:(\\d+)`, 'm').exec(info)?.[1] ?? 0);
  return {
    heapBytes: await heap(),
    rssBytes: rssBytes(pid),
    redisClients: field('connected_clients'),
    redisMemoryBytes: field('used_memory'),
    cpuSeconds: cpu,
  };
}

function per100(before: Sample, after: Sample, count: number) {
  const f = 100 / count;
  return {
    heapKiB: ((after.heapBytes - before.heapBytes) * f) / 1024,
    rssKiB: ((after.rssBytes - before.rssBytes) * f) / 1024,
    redisClients: (after.redisClients - before.redisClients) * f,
    redisKiB: ((after.redisMemoryBytes - before.redisMemoryBytes) * f) / 1024,
    cpuMsPerS: ((after.cpuSeconds - before.cpuSeconds) * f * 1000) / IDLE_S,
  };
}

async function main(): Promise<void> {
  ensureBuilt();
  const machine = machineInfo();
  const baselineFile = path.join(REPO_ROOT, 'bench', 'baselines', 'held-open.cjs');
  try {
    const baseline = await startServer({
      name: 'held-open-baseline',
      args: ['--expose-gc', baselineFile],
      env: {},
      ready: ({ logFile }) => Promise.resolve(readFileSync(logFile, 'utf8').includes('baseline ready')),
    });
    const bareIdle = await sample(baseline.pid, () => baselineHeap(baseline.baseUrl), undefined, IDLE_S);
    const bareHeld = await hold(HOLDERS, () => request(`${baseline.baseUrl}/`, { agent: false }).end(), true);
    const bareHolding = await sample(baseline.pid, () => baselineHeap(baseline.baseUrl), undefined, IDLE_S);
    bareHeld.close();
    const bare = per100(bareIdle, bareHolding, HOLDERS);

    const unbounded = String(HOLDERS * 2);
    const service = await startService(SECTION, {
      workers: 0,
      ingressEnv: {
        METRICS_TOKEN,
        SSE_MAX_CONNECTIONS: unbounded,
        SSE_MAX_CONNECTIONS_PER_ROLE_CLASS: unbounded,
        SSE_MAX_CONNECTIONS_PER_ACCOUNT: unbounded,
        READ_MAX_WAITERS: unbounded,
        READ_MAX_WAITERS_PER_ROLE_CLASS: unbounded,
        READ_MAX_WAITERS_PER_ACCOUNT: unbounded,
        READ_WAIT_MS: String((IDLE_S + 30) * 1000),
      },
    });
    const redis = new Redis(service.redisServer.url);
    const { ingress } = service;
    const authorization = basicAuthorization(service.credentials);
    const heap = () => ingressHeap(ingress.baseUrl);
    // Warm: the account cache, the credential cache, one stream and one wait (the subscribers open).
    (
      await hold(
        1,
        () => request(`${ingress.baseUrl}/api/events`, { agent: false, headers: { authorization } }).end(),
        true,
      )
    ).close();
    const idle = await sample(ingress.pid, heap, redis, IDLE_S);

    const streams = await hold(
      HOLDERS,
      () => request(`${ingress.baseUrl}/api/events`, { agent: false, headers: { authorization } }).end(),
      true,
    );
    const streaming = await sample(ingress.pid, heap, redis, IDLE_S);
    streams.close();
    await sleep(2_000);
    const afterStreams = await sample(ingress.pid, heap, redis, IDLE_S);

    const body = () =>
      JSON.stringify({ query: { queryType: 'GetFantasyTeam', id: randomUUID(), minVersion: 1_000_000 } });
    const waits = await hold(
      HOLDERS,
      () => {
        const req = request(`${ingress.baseUrl}/api/readmodel`, {
          method: 'POST',
          agent: false,
          headers: { authorization, 'content-type': 'application/json' },
        });
        req.end(body());
        return req;
      },
      false,
    );
    await sleep(2_000);
    const waiting = await sample(ingress.pid, heap, redis, IDLE_S);
    waits.close();
    await redis.quit();

    const stream = per100(idle, streaming, HOLDERS);
    const wait = per100(afterStreams, waiting, HOLDERS);
    const row = (name: string, m: ReturnType<typeof per100>) =>
      `| ${name} | ${m.heapKiB.toFixed(0)} | ${m.rssKiB.toFixed(0)} | ${m.redisClients.toFixed(1)} | ${m.redisKiB.toFixed(1)} | ${m.cpuMsPerS.toFixed(2)} |`;
    const lines = [
      `<!-- bench:${SECTION}:begin -->`,
      '',
      '## Issue 29: caps',
      '',
      `Measured by \`npm run bench:caps-cost\` on:`,
      '',
      `- date: ${new Date().toISOString()}`,
      `- os: ${machine.os}`,
      `- cpus: ${machine.cpus}`,
      `- memory: ${machine.memory}`,
      `- node: ${process.version}`,
      `- load average before the run (1/5/15 min): ${machine['load average before the run (1/5/15 min)']}`,
      `- commit: ${machine.commit}`,
      `- load: ${HOLDERS} held at once, measured after ${IDLE_S} s idle (one SSE_HEARTBEAT_MS of 15 s in it); heap as the process's own heap-in-use gauge reports it (no forced GC in the ingress)`,
      '',
      `Per 100 held requests (the difference from the same process before, divided by ${HOLDERS / 100}):`,
      '',
      '| Held open | ingress heap KiB | ingress RSS KiB | Redis connections | Redis memory KiB | ingress CPU ms/s |',
      '| --- | ---: | ---: | ---: | ---: | ---: |',
      row('bare node http response held open (baseline)', bare),
      row('idle event stream (GET /api/events)', stream),
      row('read waiting for `minVersion` (GetFantasyTeam)', wait),
      '',
      `<!-- bench:${SECTION}:end -->`,
    ];
    process.stdout.write(`${lines.join('\n')}\n`);
  } finally {
    await stopAll();
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exitCode = 1;
});
