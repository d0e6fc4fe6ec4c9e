import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { cpus } from 'node:os';

import { Redis } from 'ioredis';

import { ALL_PROJECTIONS } from '../workers/projector/all-projections';
import { readProjectorLag } from '../workers/projector/projector-lag';
import { cpuSeconds } from './lib/process-cost';
import { ensureBuilt, stopAll, track } from './lib/processes';
import { machineInfo } from './lib/report';
import {
  basicAuthorization,
  type BenchService,
  commandOrThrow,
  forEachConcurrently,
  issueToken,
  JSON_HEADERS,
  sleep,
  startService,
} from './lib/service';

/**
 * `npm run bench:tracing-cost` (issue 41): what tracing costs the ingress per request, and the worker
 * per command, with tracing off, at 1% (`parentbased_traceidratio` 0.01, the production setting) and
 * at 100% (`parentbased_always_on`), each mode a service of its own (Redis, ingress, one worker with a
 * webhook subscription to a receiver here), spans sent as OTLP/HTTP protobuf to a receiver in this
 * process that drops them. Four requests, as the issue names them: CurrentUser by Bearer, CurrentUser
 * by Basic, LinkFantasyTeam (alternating with UnlinkFantasyTeam on the same teams) and
 * CreateFantasyTeam (a new team each). CPU from /proc (user + system) over BENCH_REQUESTS (default
 * 12,000) requests of each, BENCH_LANES (default 8) at once, after a warm-up of as many; BENCH_ROUNDS
 * (default 7) rounds in which the modes take turns request kind by request kind, each round in another
 * order, so that neither a drifting load nor going first weighs on one mode. On a machine of two or
 * more cores the ingresses run on the last core and everything else (this process, Redis, the
 * workers) on the others, so that what is measured shares its core with nothing but itself. The
 * worker's CPU is taken over each round's commands, once it has projected and delivered every event.
 * Reports medians, each mode's cost over off per round (the median of those is the figure held to
 * 5%), and every round. Prints its section of bench/RESULTS.md.
 */

const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 12_000);
const LANES = Number(process.env.BENCH_LANES ?? 8);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 7);
const TEAMS_PER_LANE = 25;
const SECTION = 'tracing-cost';

interface Mode {
  readonly name: string;
  /** The OTEL_* variables besides the endpoint; null: tracing off (none set). */
  readonly env: Readonly<Record<string, string>> | null;
}

const MODES: readonly Mode[] = [
  { name: 'off', env: null },
  {
    name: '1% (parentbased_traceidratio 0.01)',
    env: { OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.01' },
  },
  { name: '100% (parentbased_always_on)', env: { OTEL_TRACES_SAMPLER: 'parentbased_always_on' } },
];

const ALL_REQUEST_KINDS = [
  'CurrentUser, Bearer',
  'CurrentUser, Basic',
  'LinkFantasyTeam',
  'CreateFantasyTeam',
] as const;
type RequestKind = (typeof ALL_REQUEST_KINDS)[number];
/** BENCH_KINDS (separated by `;`, e.g. `CurrentUser, Bearer;LinkFantasyTeam`) measures only those; all four by default. */
const REQUEST_KINDS = ALL_REQUEST_KINDS.filter(
  (kind) => !process.env.BENCH_KINDS || process.env.BENCH_KINDS.split(';').includes(kind),
);

interface Sink {
  readonly url: string;
  /** Requests received at `path`. */
  received(path: string): number;
  close(): void;
}

/** Answers every request 200 and keeps only a count per path: the collector's and receiver's cost is not the service's. */
async function startSink(): Promise<Sink> {
  const received = new Map<string, number>();
  const server = createServer((req, res) => {
    req.on('data', () => undefined);
    req.on('end', () => {
      received.set(req.url ?? '', (received.get(req.url ?? '') ?? 0) + 1);
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    received: (path) => received.get(path) ?? 0,
    close: () => server.close(),
  };
}

/** The core the ingresses run on, and the others', when there are two or more (`taskset`). */
const CORES = cpus().length;
const INGRESS_CORES = String(CORES - 1);
const OTHER_CORES = CORES > 2 ? `0-${CORES - 2}` : '0';

/** Pins `pid` to `cores` (taskset's list), on a machine of two cores or more. */
function pin(pid: number, cores: string): void {
  if (CORES < 2) return;
  execFileSync('taskset', ['-a', '-p', '-c', cores, String(pid)], { stdio: 'ignore' });
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
}

/** Runs `count` calls of `send`, `LANES` at once. */
async function inLanes(count: number, send: (lane: number, index: number) => Promise<void>): Promise<void> {
  const lanes = Array.from({ length: LANES }, (_, lane) => lane);
  await forEachConcurrently(lanes, LANES, async (lane) => {
    for (let index = lane; index < count; index += LANES) await send(lane, index);
  });
}

/** Runs `count` requests of one kind and returns the ingress's CPU µs per request. */
async function ingressMicrosPer(subject: Subject, kind: RequestKind, count: number): Promise<number> {
  const before = cpuSeconds(subject.service.ingress.pid);
  await inLanes(count, (lane, index) => subject.send[kind](lane, index));
  return ((cpuSeconds(subject.service.ingress.pid) - before) * 1e6) / count;
}

interface Subject {
  readonly service: BenchService;
  readonly send: Record<RequestKind, (lane: number, index: number) => Promise<void>>;
  /** Team events written so far (one per command), each delivered once to the webhook sink. */
  events: number;
  /** Resolves once the worker has projected every event and the sink has had each delivered. */
  caughtUp(): Promise<void>;
}

/** A service for `mode`, with teams to link, a webhook subscription to `webhooks`, warmed up. */
async function startSubject(mode: Mode, otlpUrl: string, webhooks: Sink): Promise<Subject> {
  const tracing = mode.env ? { OTEL_EXPORTER_OTLP_ENDPOINT: otlpUrl, ...mode.env } : {};
  const service = await startService(`${SECTION}-${MODES.indexOf(mode)}`, {
    env: { WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true', ...tracing },
  });
  const { ingress, credentials, redisServer, keys } = service;
  pin(ingress.pid, INGRESS_CORES);
  pin(redisServer.pid, OTHER_CORES);
  for (const worker of service.workers) pin(worker.pid, OTHER_CORES);
  const redis = new Redis(redisServer.url, { maxRetriesPerRequest: 1 });
  track({ stop: async () => void (await redis.quit().catch(() => undefined)) });
  const hookPath = `/hook/${MODES.indexOf(mode)}`;
  const token = await issueToken(ingress, credentials);
  const bearer = `Bearer ${token}`;
  const basic = basicAuthorization(credentials);
  await commandOrThrow(ingress, token, 'CreateWebhookSubscription', {
    aggregateRootId: randomUUID(),
    url: `${webhooks.url}${hookPath}`,
    eventTypes: ['*'],
  });
  // Each lane has teams of its own, so no two commands wait on one aggregate's lock.
  const teams = Array.from({ length: LANES * TEAMS_PER_LANE }, () => ({ id: randomUUID(), linked: false }));
  await forEachConcurrently(teams, 16, (team, index) =>
    commandOrThrow(ingress, token, 'CreateFantasyTeam', { aggregateRootId: team.id, name: `Team ${index}` }),
  );
  const post = async (path: string, authorization: string, body: unknown) => {
    const res = await fetch(`${ingress.baseUrl}${path}`, {
      method: 'POST',
      headers: { ...JSON_HEADERS, authorization },
      body: JSON.stringify(body),
    });
    await res.arrayBuffer();
    if (res.status !== 200) throw new Error(`${path} answered ${res.status}`);
  };
  const currentUser = { query: { queryType: 'CurrentUser' }, skip: 0, take: 10 };
  const subject: Subject = {
    service,
    events: teams.length,
    send: {
      'CurrentUser, Bearer': () => post('/api/readmodel', bearer, currentUser),
      'CurrentUser, Basic': () => post('/api/readmodel', basic, currentUser),
      LinkFantasyTeam: async (lane, index) => {
        const team = teams[lane * TEAMS_PER_LANE + (Math.floor(index / LANES) % TEAMS_PER_LANE)]!;
        const command = team.linked
          ? { commandType: 'UnlinkFantasyTeam', command: { aggregateRootId: team.id } }
          : {
              commandType: 'LinkFantasyTeam',
              command: {
                aggregateRootId: team.id,
                fantasyTeamExternalId: index + 1,
                fantasyUserId: index + 1,
              },
            };
        await post('/api/command', bearer, command);
        team.linked = !team.linked;
        subject.events += 1;
      },
      CreateFantasyTeam: async () => {
        const command = { aggregateRootId: randomUUID(), name: 'Bench XI' };
        await post('/api/command', bearer, { commandType: 'CreateFantasyTeam', command });
        subject.events += 1;
      },
    },
    async caughtUp() {
      for (;;) {
        const lag = await readProjectorLag(redis, keys, ALL_PROJECTIONS);
        if (
          lag.every((projection) => projection.entriesBehind === 0) &&
          webhooks.received(hookPath) >= subject.events
        )
          return;
        await sleep(50);
      }
    },
  };
  for (const kind of REQUEST_KINDS) await ingressMicrosPer(subject, kind, REQUESTS);
  return subject;
}

interface Samples {
  readonly ingress: Record<RequestKind, number[]>;
  /** The worker's CPU µs per command (LinkFantasyTeam and CreateFantasyTeam) of each round. */
  readonly worker: number[];
}

async function main(): Promise<void> {
  ensureBuilt();
  const machine = machineInfo();
  pin(process.pid, OTHER_CORES);
  const spans = await startSink();
  const webhooks = await startSink();
  try {
    const subjects: Subject[] = [];
    for (const mode of MODES) subjects.push(await startSubject(mode, spans.url, webhooks));
    await Promise.all(subjects.map((subject) => subject.caughtUp()));
    const samples: Samples[] = MODES.map(() => ({
      ingress: Object.fromEntries(REQUEST_KINDS.map((kind) => [kind, [] as number[]])) as Record<
        RequestKind,
        number[]
      >,
      worker: [],
    }));
    for (let round = 0; round < ROUNDS; round += 1) {
      process.stderr.write(`[bench] round ${round + 1} of ${ROUNDS}\n`);
      const workerBefore = subjects.map((subject) => cpuSeconds(subject.service.workers[0]!.pid));
      const eventsBefore = subjects.map((subject) => subject.events);
      // The modes take turns within each kind, so a machine whose load drifts weighs on all alike,
      // and each round another goes first.
      const order = subjects.map((_, index) => (index + round) % subjects.length);
      for (const kind of REQUEST_KINDS)
        for (const index of order)
          samples[index]!.ingress[kind].push(await ingressMicrosPer(subjects[index]!, kind, REQUESTS));
      await Promise.all(subjects.map((subject) => subject.caughtUp()));
      for (const [index, subject] of subjects.entries()) {
        const commands = subject.events - eventsBefore[index]!;
        const cpu = cpuSeconds(subject.service.workers[0]!.pid) - workerBefore[index]!;
        samples[index]!.worker.push((cpu * 1e6) / commands);
      }
    }
    process.stdout.write(`${report(machine, samples).join('\n')}\n`);
  } finally {
    spans.close();
    webhooks.close();
    await stopAll();
  }
}

/** The section of bench/RESULTS.md: a row per process and request, medians, costs over off, every round. */
function report(machine: ReturnType<typeof machineInfo>, samples: readonly Samples[]): string[] {
  const off = samples[0]!;
  const rounds = (values: readonly number[]) => values.map((value) => value.toFixed(0)).join(' / ');
  const percent = (value: number) => `${value >= 0 ? '+' : ''}${(value * 100).toFixed(1)}%`;
  /** Each round's cost over off in the same round: the median, and the range. */
  const costs = (values: readonly number[], base: readonly number[]) => {
    const perRound = values.map((value, round) => value / base[round]! - 1);
    return `${percent(median(perRound))} (${percent(Math.min(...perRound))} to ${percent(Math.max(...perRound))})`;
  };
  const rows: string[] = [];
  const row = (what: string, pick: (s: Samples) => readonly number[]) => {
    const base = pick(off);
    const cells = samples
      .slice(1)
      .map((mode) => `${median(pick(mode)).toFixed(0)} | ${costs(pick(mode), base)}`);
    rows.push(
      `| ${what} | ${median(base).toFixed(0)} | ${cells.join(' | ')} | ${samples.map((mode) => rounds(pick(mode))).join(' ; ')} |`,
    );
  };
  for (const kind of REQUEST_KINDS) row(`ingress, ${kind}`, (s) => s.ingress[kind]);
  row('worker, per command (projector and webhook dispatcher)', (s) => s.worker);
  return [
    `<!-- bench:${SECTION}:begin -->`,
    '',
    '## Issue 41: what tracing costs, the server span written by the service',
    '',
    'Measured by `npm run bench:tracing-cost` on:',
    '',
    `- date: ${new Date().toISOString()}`,
    `- os: ${machine.os}`,
    `- cpus: ${machine.cpus}`,
    `- node: ${process.version}`,
    `- load average before the run (1/5/15 min): ${machine['load average before the run (1/5/15 min)']}`,
    `- commit: ${machine.commit}`,
    `- load: ${REQUESTS} requests of each kind per mode and round, ${LANES} at once, ${ROUNDS} rounds (the modes taking turns in each, each round in another order); the ingresses on core ${INGRESS_CORES}, the rest on ${OTHER_CORES}; spans as OTLP/HTTP protobuf to a receiver that drops them; every event delivered to one webhook subscription`,
    '',
    `CPU µs per request (ingress) or per command (worker), from /proc; the cost is each round's over off in the same round, its median and range; the rounds are off ; 1% ; 100%.`,
    '',
    `| Process, request | off | ${MODES.slice(1)
      .map((mode) => `${mode.name} | cost`)
      .join(' | ')} | every round |`,
    `| --- | ---: | ${MODES.slice(1)
      .map(() => '---: | ---:')
      .join(' | ')} | --- |`,
    ...rows,
    '',
    `<!-- bench:${SECTION}:end -->`,
  ];
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exitCode = 1;
});
