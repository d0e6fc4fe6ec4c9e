import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

import { cpuSeconds } from './lib/process-cost';
import { ensureBuilt, stopAll } from './lib/processes';
import { machineInfo } from './lib/report';
import { commandOrThrow, forEachConcurrently, issueToken, JSON_HEADERS, startService } from './lib/service';
import { measureTracingFloor } from './lib/tracing-floor';

/**
 * `npm run bench:tracing-cost`: the ingress's CPU per command (LinkFantasyTeam / UnlinkFantasyTeam)
 * and per read (CurrentUser by Bearer) with tracing off, on with the default parent-based sampler
 * (every trace kept), on at 1% (`parentbased_traceidratio`), and at 1% without the Express, then also
 * the http, instrumentation (where the unsampled cost is), each on a service of its own (the modes
 * run at once and take turns in every round, so a drifting load weighs on all alike), spans
 * sent as OTLP/HTTP protobuf to a receiver in this process that drops them. CPU from /proc (user +
 * system) over BENCH_REQUESTS (default 4000) requests of each kind, BENCH_LANES (default 8) at once,
 * after as many again to warm up; the median of BENCH_ROUNDS (default 3). Prints its section of
 * bench/RESULTS.md.
 */

const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 4_000);
const LANES = Number(process.env.BENCH_LANES ?? 8);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const TEAMS_PER_LANE = 25;
const SECTION = 'tracing-cost';

interface Mode {
  readonly name: string;
  /** The ingress's OTEL_* variables besides the endpoint; null: tracing off (none set). */
  readonly env: Readonly<Record<string, string>> | null;
}

const ONE_PERCENT = { OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.01' };

const MODES: readonly Mode[] = [
  { name: 'tracing off', env: null },
  {
    name: 'tracing on, every trace (parentbased_always_on)',
    env: { OTEL_TRACES_SAMPLER: 'parentbased_always_on' },
  },
  {
    name: 'tracing on, 1% (parentbased_traceidratio 0.01)',
    env: ONE_PERCENT,
  },
  {
    name: '1%, without the Express instrumentation',
    env: { ...ONE_PERCENT, OTEL_NODE_DISABLED_INSTRUMENTATIONS: 'express' },
  },
  {
    name: '1%, without the http and Express instrumentations (no server span, no caller context)',
    env: { ...ONE_PERCENT, OTEL_NODE_DISABLED_INSTRUMENTATIONS: 'http,express' },
  },
];

/** Answers every OTLP export 200 and keeps nothing: the collector's cost is not the service's. */
async function startDiscardingReceiver(): Promise<{ url: string; close(): void }> {
  const server = createServer((req, res) => {
    req.on('data', () => undefined);
    req.on('end', () => res.writeHead(200).end());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, close: () => server.close() };
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
}

/** Runs `count` calls of `send`, `LANES` at once, and returns the ingress's CPU µs per call. */
async function cpuMicrosPer(
  pid: number,
  count: number,
  send: (lane: number, index: number) => Promise<void>,
) {
  const before = cpuSeconds(pid);
  const lanes = Array.from({ length: LANES }, (_, lane) => lane);
  await forEachConcurrently(lanes, LANES, async (lane) => {
    for (let index = lane; index < count; index += LANES) await send(lane, index);
  });
  return ((cpuSeconds(pid) - before) * 1e6) / count;
}

interface Subject {
  readonly pid: number;
  command(lane: number, index: number): Promise<void>;
  read(): Promise<void>;
}

/** A service (its own Redis and ingress) for `mode`, with teams to send commands to, warmed up. */
async function startSubject(mode: Mode, otlpUrl: string): Promise<Subject> {
  const service = await startService(`${SECTION}-${MODES.indexOf(mode)}`, {
    workers: 0,
    ingressEnv: mode.env ? { OTEL_EXPORTER_OTLP_ENDPOINT: otlpUrl, ...mode.env } : {},
  });
  const { ingress } = service;
  const token = await issueToken(ingress, service.credentials);
  const authorization = `Bearer ${token}`;
  // Each lane has teams of its own, so no two commands wait on one aggregate's lock.
  const teams = Array.from({ length: LANES * TEAMS_PER_LANE }, () => ({ id: randomUUID(), linked: false }));
  await forEachConcurrently(teams, 16, (team, index) =>
    commandOrThrow(ingress, token, 'CreateFantasyTeam', { aggregateRootId: team.id, name: `Team ${index}` }),
  );
  const post = async (path: string, body: unknown) => {
    const res = await fetch(`${ingress.baseUrl}${path}`, {
      method: 'POST',
      headers: { ...JSON_HEADERS, authorization },
      body: JSON.stringify(body),
    });
    await res.arrayBuffer();
    if (res.status !== 200) throw new Error(`${path} answered ${res.status}`);
  };
  const subject: Subject = {
    pid: ingress.pid,
    async command(lane, index) {
      const team = teams[lane * TEAMS_PER_LANE + (Math.floor(index / LANES) % TEAMS_PER_LANE)]!;
      const body = team.linked
        ? { commandType: 'UnlinkFantasyTeam', command: { aggregateRootId: team.id } }
        : {
            commandType: 'LinkFantasyTeam',
            command: { aggregateRootId: team.id, fantasyTeamExternalId: index + 1, fantasyUserId: index + 1 },
          };
      await post('/api/command', body);
      team.linked = !team.linked;
    },
    read: () => post('/api/readmodel', { query: { queryType: 'CurrentUser' }, skip: 0, take: 10 }),
  };
  await cpuMicrosPer(subject.pid, REQUESTS, (lane, index) => subject.command(lane, index));
  await cpuMicrosPer(subject.pid, REQUESTS, () => subject.read());
  return subject;
}

async function main(): Promise<void> {
  ensureBuilt();
  const machine = machineInfo();
  const receiver = await startDiscardingReceiver();
  try {
    const subjects: Subject[] = [];
    for (const mode of MODES) subjects.push(await startSubject(mode, receiver.url));
    const commands: number[][] = MODES.map(() => []);
    const reads: number[][] = MODES.map(() => []);
    // The modes take turns within each round, so a machine whose load drifts weighs on all alike.
    for (let round = 0; round < ROUNDS; round += 1) {
      process.stderr.write(`[bench] round ${round + 1} of ${ROUNDS}\n`);
      for (const [index, subject] of subjects.entries()) {
        commands[index]!.push(
          await cpuMicrosPer(subject.pid, REQUESTS, (lane, i) => subject.command(lane, i)),
        );
        reads[index]!.push(await cpuMicrosPer(subject.pid, REQUESTS, () => subject.read()));
      }
    }
    const results = MODES.map((mode, index) => ({
      name: mode.name,
      command: median(commands[index]!),
      read: median(reads[index]!),
      commandRounds: commands[index]!,
      readRounds: reads[index]!,
    }));
    const off = results[0]!;
    const floor = await measureTracingFloor();
    const rounds = (values: readonly number[]) => values.map((value) => value.toFixed(0)).join(' / ');
    const ratio = (value: number, base: number) => `${((value / base - 1) * 100).toFixed(1)}%`;
    const lines = [
      `<!-- bench:${SECTION}:begin -->`,
      '',
      '## Issue 32: what tracing costs',
      '',
      'Measured by `npm run bench:tracing-cost` on:',
      '',
      `- date: ${new Date().toISOString()}`,
      `- os: ${machine.os}`,
      `- cpus: ${machine.cpus}`,
      `- node: ${process.version}`,
      `- load average before the run (1/5/15 min): ${machine['load average before the run (1/5/15 min)']}`,
      `- commit: ${machine.commit}`,
      `- load: ${REQUESTS} requests of each kind, ${LANES} at once, median of ${ROUNDS} rounds (the modes taking turns in each); spans as OTLP/HTTP protobuf to a receiver that drops them`,
      '',
      '| Ingress | CPU µs per command | vs off | CPU µs per read | vs off | commands per round | reads per round |',
      '| --- | ---: | ---: | ---: | ---: | --- | --- |',
      ...results.map(
        (r) =>
          `| ${r.name} | ${r.command.toFixed(0)} | ${ratio(r.command, off.command)} | ${r.read.toFixed(0)} | ${ratio(r.read, off.read)} | ${rounds(r.commandRounds)} | ${rounds(r.readRounds)} |`,
      ),
      '',
      'Measured in the bench process itself (nanoseconds per call, median of 5 runs of 300,000): what the',
      "service's span helpers add to a command with tracing off, and the least an SDK does for an unsampled",
      'request (one span under a 1% parent-based sampler, active while the work runs, nothing else):',
      '',
      '| In process | ns per call | share of the off row |',
      '| --- | ---: | ---: |',
      `| tracing off: a command's span helpers (command, two scripts, trace context) | ${floor.offAddedPerCommand.toFixed(1)} | ${((floor.offAddedPerCommand / 1000 / off.command) * 100).toFixed(4)}% of a command |`,
      `| 1%: one unsampled span per request, active while it runs | ${floor.unsampledSpanPerRequest.toFixed(0)} | ${((floor.unsampledSpanPerRequest / 1000 / off.read) * 100).toFixed(1)}% of a read |`,
      '',
      `<!-- bench:${SECTION}:end -->`,
    ];
    process.stdout.write(`${lines.join('\n')}\n`);
  } finally {
    receiver.close();
    await stopAll();
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exitCode = 1;
});
