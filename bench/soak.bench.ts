import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';

import { Redis } from 'ioredis';

import { parseEnvelope } from '../shared/event-store/envelope';
import { logEntryContent } from '../shared/event-stream/log-reader';
import { fantasyTeamDecider } from '../shared/fantasy-team/fantasy-team.decider';
import type { Keys } from '../shared/redis/keys';
import { LOG_PARTITIONS } from '../shared/redis/partitions';
import { type LoadResult, median, positiveNumberFromEnv } from './lib/load';
import { type OpenLoopRequest, runOpenLoop } from './lib/open-loop';
import { ensureBuilt, type ServerProcess, stopAll } from './lib/processes';
import { type BenchReport, type ComparisonRow, machineInfo } from './lib/report';
import { runBenches } from './lib/runner';
import {
  commandOrThrow,
  forEachConcurrently,
  issueToken,
  JSON_HEADERS,
  postJson,
  sleep,
  startService,
} from './lib/service';

/**
 * A soak: mixed traffic (reads, commands, imports) at the highest rate the service sustains, for
 * BENCH_SOAK_SECONDS (60). Proves what a long run must: no 5xx, resident memory that stops growing
 * once warm, and exactly one event in the log for every command answered 200.
 *
 * The rate is found first: open-loop steps of BENCH_STEP_SECONDS (5), each 1.4x the last, until a
 * step's p99 passes P99_SUSTAINABLE_MS or anything fails; the soak runs one step below the last
 * step that held, since a few seconds under the limit do not prove a minute.
 * Settings: BENCH_SOAK_SECONDS, BENCH_STEP_SECONDS, BENCH_START_RATE (req/s, default 400).
 */

const NAME = 'soak';
const TEAM_COUNT = 1_000;
/** A rate is sustainable while its p99 stays under this and nothing fails. */
const P99_SUSTAINABLE_MS = 50;
const STEP_FACTOR = 1.4;
/** The search gives up going down here: the soak then runs at this rate whatever its p99. */
const MIN_RATE = 25;
/** Of every 10 requests: 7 reads (CurrentUser, GetFantasyTeam), 3 commands (Link / Unlink). */
const READ_SHARE = 0.7;
/** One 5-user UserSeeding import (Normal priority) every this many ms, hashed by the worker. */
const IMPORT_EVERY_MS = 2_000;
const IMPORT_USERS = 5;
/** Resident memory is compared from this far into the soak (JIT, pools and caches warm) to its end. */
const WARM_AFTER_SHARE = 0.25;
const RSS_GROWTH_LIMIT = 0.1;

interface Team {
  readonly id: string;
  linked: boolean;
  busy: boolean;
}

/** Counts of everything the soak sent, by outcome. */
class Tally {
  commandsAccepted = 0;
  readonly statuses = new Map<string, number>();

  record(kind: string, status: number | null): void {
    const key = `${kind} ${status ?? 'no answer'}`;
    this.statuses.set(key, (this.statuses.get(key) ?? 0) + 1);
  }

  get serverErrors(): number {
    return [...this.statuses].reduce(
      (sum, [key, count]) => (/ (5\d\d|no answer)$/.test(key) ? sum + count : sum),
      0,
    );
  }
}

/** Reads and commands, interleaved on one schedule; commands only on teams with none in flight. */
function mixedTraffic(teams: Team[], token: string, tally: Tally) {
  let sent = 0;
  let nextLinkId = 1;
  const reads = [
    JSON.stringify({ query: { queryType: 'CurrentUser' } }),
    ...teams
      .slice(0, 50)
      .map((team) => JSON.stringify({ query: { queryType: 'GetFantasyTeam', id: team.id } })),
  ];
  let idle = 0;
  const headers = { ...JSON_HEADERS, authorization: `Bearer ${token}` };
  const nextRead = (): OpenLoopRequest => ({
    body: reads[sent++ % reads.length] ?? '{}',
    onAnswer: (status) => tally.record('read', status),
  });
  const nextCommand = (): OpenLoopRequest | undefined => {
    for (let tries = 0; tries < teams.length; tries += 1) {
      const team = teams[idle++ % teams.length];
      if (!team || team.busy) continue;
      team.busy = true;
      const linkId = nextLinkId++;
      const body = team.linked
        ? { commandType: 'UnlinkFantasyTeam', command: { aggregateRootId: team.id } }
        : {
            commandType: 'LinkFantasyTeam',
            command: {
              aggregateRootId: team.id,
              fantasyTeamExternalId: linkId,
              fantasyUserId: 1_000_000 + linkId,
            },
          };
      return {
        body: JSON.stringify(body),
        onAnswer: (status) => {
          tally.record('command', status);
          if (status === 200) {
            team.linked = !team.linked;
            tally.commandsAccepted += 1;
          }
          // A team whose command got no clear answer stays busy: its state is unknown.
          if (status !== null && status < 500) team.busy = false;
        },
      };
    }
    return undefined;
  };
  return { headers, nextRead, nextCommand };
}

/** Runs reads and commands at `rate` req/s for `seconds` (two open loops sharing the rate). */
async function runMixed(
  ingress: ServerProcess,
  traffic: ReturnType<typeof mixedTraffic>,
  rate: number,
  seconds: number,
): Promise<LoadResult> {
  const [reads, commands] = await Promise.all([
    runOpenLoop({
      url: `${ingress.baseUrl}/api/readmodel`,
      headers: traffic.headers,
      ratePerSecond: rate * READ_SHARE,
      durationSeconds: seconds,
      next: traffic.nextRead,
    }),
    runOpenLoop({
      url: `${ingress.baseUrl}/api/command`,
      headers: traffic.headers,
      ratePerSecond: rate * (1 - READ_SHARE),
      durationSeconds: seconds,
      next: traffic.nextCommand,
    }),
  ]);
  return {
    requestsPerSecond: reads.requestsPerSecond + commands.requestsPerSecond,
    // The slower of the two mixes bounds what a client sees.
    p50Ms: Math.max(reads.p50Ms, commands.p50Ms),
    p99Ms: Math.max(reads.p99Ms, commands.p99Ms),
    responses: reads.responses + commands.responses,
    non2xx: reads.non2xx + commands.non2xx,
    errors: reads.errors + commands.errors,
    warmupFailures: 0,
  };
}

/** Submits small UserSeeding imports on a fixed period until `until`; counts their answers. */
async function importsUntil(
  ingress: ServerProcess,
  token: string,
  tally: Tally,
  until: number,
): Promise<number> {
  let submitted = 0;
  while (Date.now() < until) {
    const users = Array.from({ length: IMPORT_USERS }, () => {
      const id = randomUUID();
      return {
        email: `soak-${id}@example.com`,
        userType: 'Human',
        roles: ['Member'],
        password: `soak-password-${id}`,
      };
    });
    const answer = await postJson(
      `${ingress.baseUrl}/api/import`,
      {
        requestId: randomUUID(),
        importerType: 'UserSeeding',
        priority: 'Normal',
        importData: { enabled: true, skipIfUsersExist: false, users },
      },
      { authorization: `Bearer ${token}` },
    ).catch(() => ({ status: null }));
    tally.record('import', answer.status);
    submitted += 1;
    await sleep(IMPORT_EVERY_MS);
  }
  return submitted;
}

/** Resident set size of a process, in MiB, from /proc (Linux). */
function rssMiB(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? Number.NaN);
  return kib / 1024;
}

/** Samples every process's RSS once a second until `until`. */
async function sampleMemory(processes: readonly ServerProcess[], until: number) {
  const samples = new Map<string, number[]>(processes.map((p) => [p.name, []]));
  while (Date.now() < until) {
    for (const p of processes) samples.get(p.name)?.push(rssMiB(p.pid));
    await sleep(1_000);
  }
  return samples;
}

/** Events of one aggregate type in the global log (every partition, read in pages). */
async function logEventsOfType(redis: Redis, keys: Keys, aggregateType: string) {
  let count = 0;
  for (let partition = 0; partition < LOG_PARTITIONS; partition += 1) {
    let from = '-';
    for (;;) {
      const page = await redis.xrange(keys.logPartition(partition), from, '+', 'COUNT', 5_000);
      for (const entry of page) {
        const content = logEntryContent(entry);
        const type = 'copy' in content ? parseEnvelope(content.copy).aggregateType : content.aggregateType;
        if (type === aggregateType) count += 1;
      }
      if (page.length < 5_000) break;
      from = `(${page[page.length - 1]?.[0] ?? '0-0'}`;
    }
  }
  return count;
}

export async function run(): Promise<BenchReport> {
  const machine = machineInfo();
  const soakSeconds = positiveNumberFromEnv('BENCH_SOAK_SECONDS', 60);
  const stepSeconds = positiveNumberFromEnv('BENCH_STEP_SECONDS', 5);
  const startRate = positiveNumberFromEnv('BENCH_START_RATE', 400);
  ensureBuilt();
  try {
    const { redisServer, keys, credentials, ingress, workers } = await startService(NAME, {
      workerEnv: { WORKER_CONCURRENCY: '1' },
    });
    const token = await issueToken(ingress, credentials);
    const redis = new Redis(redisServer.url);
    try {
      const teams: Team[] = Array.from({ length: TEAM_COUNT }, () => ({
        id: randomUUID(),
        linked: false,
        busy: false,
      }));
      await forEachConcurrently(teams, 32, (team) =>
        commandOrThrow(ingress, token, 'CreateFantasyTeam', { aggregateRootId: team.id, name: 'Soak team' }),
      );

      // 1. The highest sustainable rate, in steps (their traffic counts towards the log check too).
      const tally = new Tally();
      const traffic = mixedTraffic(teams, token, tally);
      const steps: { rate: number; result: LoadResult }[] = [];
      const sustains = (result: LoadResult) =>
        result.p99Ms <= P99_SUSTAINABLE_MS && result.errors === 0 && result.non2xx === 0;
      const step = async (rate: number) => {
        const result = await runMixed(ingress, traffic, rate, stepSeconds);
        steps.push({ rate, result });
        process.stderr.write(
          `[bench] step ${rate} req/s: served ${result.requestsPerSecond.toFixed(0)}, p99 ${result.p99Ms.toFixed(1)} ms, ${result.errors} errors\n`,
        );
        await sleep(1_000); // a step that went too far drains before the next
        return sustains(result);
      };
      // Up by STEP_FACTOR while each step holds; if the first does not, down until one does.
      const held: number[] = [];
      if (await step(startRate)) {
        held.push(startRate);
        for (
          let rate = Math.round(startRate * STEP_FACTOR);
          await step(rate);
          rate = Math.round(rate * STEP_FACTOR)
        )
          held.push(rate);
      } else {
        let rate = Math.round(startRate / STEP_FACTOR);
        while (rate > MIN_RATE && !(await step(rate))) rate = Math.round(rate / STEP_FACTOR);
        held.push(rate);
      }
      // A step holding for a few seconds does not prove a minute: at the highest step that held,
      // queues can still build slowly (one run's p99 went from 49 ms in its step to seconds in the
      // soak). The soak runs one step below it, the highest rate that held with a step to spare.
      const sustainable = held.length >= 2 ? (held.at(-2) as number) : (held[0] as number);

      // 2. The soak at that rate, with imports and memory sampling alongside.
      process.stderr.write(`[bench] soak: ${sustainable} req/s for ${soakSeconds} s\n`);
      const until = Date.now() + soakSeconds * 1000;
      const [soak, imports, memory] = await Promise.all([
        runMixed(ingress, traffic, sustainable, soakSeconds),
        importsUntil(ingress, token, tally, until),
        sampleMemory([ingress, ...workers], until),
      ]);

      // 3. Every accepted command is one event: in its team's stream and in the log, once each.
      await sleep(1_000);
      const pipeline = redis.pipeline();
      for (const team of teams)
        pipeline.xlen(keys.aggregateStream(fantasyTeamDecider.aggregateType, team.id));
      const lengths = ((await pipeline.exec()) ?? []).map(([, length]) => Number(length));
      const streamEvents = lengths.reduce((sum, length) => sum + length, 0) - TEAM_COUNT;
      const logEvents = (await logEventsOfType(redis, keys, fantasyTeamDecider.aggregateType)) - TEAM_COUNT;

      const warmIndex = Math.floor(soakSeconds * WARM_AFTER_SHARE);
      const growth = [...memory].map(([name, samples]) => {
        const warm = median(samples.slice(warmIndex, warmIndex + 5));
        const end = median(samples.slice(-5));
        return { name, warm, end, growth: (end - warm) / warm };
      });

      const problems: string[] = [];
      if (tally.serverErrors > 0) problems.push(`${tally.serverErrors} answers were 5xx or none at all`);
      for (const measured of growth)
        if (measured.growth > RSS_GROWTH_LIMIT)
          problems.push(`${measured.name} RSS grew ${(measured.growth * 100).toFixed(1)}% after warm-up`);
      if (streamEvents !== tally.commandsAccepted || logEvents !== tally.commandsAccepted)
        problems.push(
          `${tally.commandsAccepted} commands answered 200, but ${streamEvents} events in the streams and ${logEvents} in the log`,
        );

      const row: ComparisonRow = {
        workload: `mixed soak at ${sustainable} req/s (${Math.round(READ_SHARE * 100)}% reads, ${Math.round((1 - READ_SHARE) * 100)}% commands, ${imports} imports)`,
        runs: [soak],
        requestsPerSecond: soak.requestsPerSecond,
        p50Ms: soak.p50Ms,
        p99Ms: soak.p99Ms,
        non2xx: tally.serverErrors,
        errors: soak.errors,
        warmupFailures: 0,
        ratio: null,
        standalone: true,
        target: null,
      };
      return {
        name: NAME,
        title: `Soak: ${soakSeconds} s of mixed traffic at the highest sustainable rate`,
        settings: { connections: 0, warmupSeconds: 0, durationSeconds: soakSeconds, rounds: 1 },
        loadDescription: `Open loop (fixed schedule) over two keep-alive pools: reads on /api/readmodel and commands on /api/command; one ${IMPORT_USERS}-user UserSeeding import every ${IMPORT_EVERY_MS / 1000} s.`,
        machine,
        rows: [row],
        notes: [
          `Rate search: ${steps.map((step) => `${step.rate} (p99 ${step.result.p99Ms.toFixed(1)} ms)`).join(', ')}; a step holds with p99 < ${P99_SUSTAINABLE_MS} ms and no failure; the soak runs one step below the highest that held (${held.at(-1) ?? '-'} req/s).`,
          `Answers by kind and status: ${[...tally.statuses].map(([key, count]) => `${key}: ${count}`).join(', ')}.`,
          `Resident memory (MiB, median of 5 samples) from ${warmIndex} s to the end: ${growth.map((p) => `${p.name} ${p.warm.toFixed(1)} -> ${p.end.toFixed(1)} (${(p.growth * 100).toFixed(1)}%)`).join(', ')}; limit +${RSS_GROWTH_LIMIT * 100}%.`,
          `Commands answered 200 (steps and soak): ${tally.commandsAccepted}; fantasy-team events beyond the ${TEAM_COUNT} creations: ${streamEvents} in the aggregate streams, ${logEvents} in the global log.`,
          'The service runs compiled: one ingress (LOG_LEVEL=warn) and one worker (projectors and imports, WORKER_CONCURRENCY=1, LOG_LEVEL=info: two lines per import) on a private redis-server on loopback.',
        ],
        problems,
      };
    } finally {
      redis.disconnect();
    }
  } finally {
    await stopAll();
  }
}

if (require.main === module) void runBenches([{ name: NAME, load: () => Promise.resolve({ run }) }]);
