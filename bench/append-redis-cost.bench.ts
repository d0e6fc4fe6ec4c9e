import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';

import { startLocalRedis } from '../scripts/lib/redis-server';
import type { EventEnvelope } from '../shared/event-store/envelope';
import { currentStateVersion } from '../shared/event-store/event-store';
import { compactEnvelopeJson } from '../shared/event-store/stored-envelope';
import { fantasyTeamDecider } from '../shared/fantasy-team/fantasy-team.decider';
import { createLogger } from '../shared/logger';
import {
  closeConnections,
  createRedisConnection,
  duplicateConnection,
  type RedisClient,
  waitForRedis,
} from '../shared/redis/connections';
import { createKeys } from '../shared/redis/keys';
import { partitionOf } from '../shared/redis/partitions';
import { drive, type Operation, type Team } from './event-store.bench';
import { type LoadResult, median, reportRun, settingsFromEnv, summarise } from './lib/load';
import { markdownTable } from './lib/markdown-table';
import { cpuSeconds } from './lib/process-cost';
import { stopAll, track } from './lib/processes';
import { type BenchReport, compareWith, machineInfo, problemsOf } from './lib/report';
import { runBenches } from './lib/runner';

/**
 * Where a command's Redis CPU goes beyond ref-command's (issue 22's "commands <= 1.1x ref-command
 * for Redis"): the two scripts of each, run bare from the bench process on one auto-pipelined
 * connection (the ingress's request connection settings) with ready-made arguments, so both sides
 * are batched alike and nothing but the scripts differs. redis-server's CPU per lock-and-append
 * cycle is read from /proc around each run. The service's scripts run as the command path sends
 * them (no request id), then with one part taken away at a time:
 *
 * - its PUBLISH heard by one subscriber (as by a projector): the command path in production;
 * - its PUBLISH heard by nobody;
 * - no PUBLISH at all (append-events-6.lua with that one line removed);
 * - and no PUBLISH with ref-command's log entry (the envelope copied) instead of the reference.
 *
 * Many short rounds (12 of 3 s), each running every variant once in rotated order, so a neighbour's
 * burst on this shared machine lands on a round's variants alike and the per-round ratio shrugs it
 * off. Settings: BENCH_CONNECTIONS (lanes), BENCH_WARMUP, BENCH_DURATION (seconds), BENCH_ROUNDS.
 */

const NAME = 'append-redis-cost';
const TEAM_COUNT = 1_000;
const TEAM_TYPE = fantasyTeamDecider.aggregateType;
const ACTOR = '11111111-1111-4111-8111-111111111111';
const LOCK_TTL_MS = 5_000;
/** The aggregate type in ref-command's key names (bench/baselines/ref-command.cjs). */
const REF_AGGREGATE_TYPE = 'FantasyTeam';
/** ref-command's scripts, as its server defines them. */
// eslint-disable-next-line @typescript-eslint/no-require-imports
const REF_SCRIPTS = require('./baselines/ref-command-scripts.cjs') as {
  LOCK_AND_LOAD: string;
  APPEND_AND_UNLOCK: string;
};
const SERVICE_LUA = path.join(__dirname, '..', 'shared', 'event-store', 'lua');
const APPEND_SOURCE = readFileSync(path.join(SERVICE_LUA, 'append-events-6.lua'), 'utf8');
const LOCK_AND_LOAD_SOURCE = readFileSync(path.join(SERVICE_LUA, 'lock-and-load-3.lua'), 'utf8');
const PUBLISH_LINE = "redis.call('PUBLISH', ARGV[5], ARGV[3])";
const LOG_REFERENCE_LINE =
  "redis.call('XADD', KEYS[2], '*', 'type', ARGV[4], 'id', ARGV[3], 'version', version)";

/** append-events-6.lua with `line` replaced; throws when the file no longer has it. */
function appendScriptWith(line: string, replacement: string): string {
  if (!APPEND_SOURCE.includes(line)) throw new Error(`append-events-6.lua no longer has: ${line}`);
  return APPEND_SOURCE.replace(line, replacement);
}

interface Variant {
  readonly name: string;
  /** Whether a subscriber listens on the changes channel during its runs. */
  readonly heard: boolean;
  readonly cycle: Operation;
}

export async function run(): Promise<BenchReport> {
  const machine = machineInfo();
  const settings = settingsFromEnv({ connections: 32, warmupSeconds: 1, durationSeconds: 3, rounds: 12 });
  const logger = createLogger({ level: 'warn', processRole: 'bench' });
  const redisServer = track(await startLocalRedis());
  const redis = createRedisConnection({ kind: 'standalone', url: redisServer.url }, 'request', logger);
  let subscriber: RedisClient | undefined;
  try {
    await waitForRedis(redis, logger);
    const keys = createKeys(`bench-${NAME}-${process.pid}:`);
    const changes = keys.aggregateChanges(TEAM_TYPE);
    const load = async (source: string) => (await redis.script('LOAD', source)) as string;
    const sha = {
      refLock: await load(REF_SCRIPTS.LOCK_AND_LOAD),
      refAppend: await load(REF_SCRIPTS.APPEND_AND_UNLOCK),
      lock: await load(LOCK_AND_LOAD_SOURCE),
      append: await load(APPEND_SOURCE),
      appendUnannounced: await load(appendScriptWith(PUBLISH_LINE, '')),
      appendUnannouncedCopied: await load(
        appendScriptWith(PUBLISH_LINE, '').replace(
          LOG_REFERENCE_LINE,
          "redis.call('XADD', KEYS[2], '*', 'event', ARGV[8 + i])",
        ),
      ),
    };

    const teams: Team[] = Array.from({ length: TEAM_COUNT }, () => ({
      id: randomUUID(),
      linked: false,
      version: 0,
    }));
    // A LinkFantasyTeam event of each side's shape: ref-command's full JSON envelope, the service's
    // stored one (stored-envelope.ts); the same state after it.
    const occurredAt = new Date().toISOString();
    const data = { fantasyTeamExternalId: 1, fantasyUserId: 1_000_001, linkedAt: occurredAt };
    const serviceEvent: EventEnvelope = {
      eventId: randomUUID(),
      eventType: 'FantasyTeamLinkedEvent',
      aggregateType: TEAM_TYPE,
      aggregateId: teams[0]?.id ?? '',
      version: 2,
      occurredAt,
      data,
      metadata: { actorUserId: ACTOR, requestId: null, correlationId: randomUUID() },
    };
    const serviceEnvelope = compactEnvelopeJson(serviceEvent);
    const refEnvelope = JSON.stringify({
      eventId: randomUUID(),
      eventType: 'FantasyTeamLinked',
      aggregateType: REF_AGGREGATE_TYPE,
      aggregateId: teams[0]?.id ?? '',
      version: 2,
      occurredAt,
      data: { aggregateRootId: teams[0]?.id ?? '', fantasyTeamExternalId: 1, fantasyUserId: 1_000_001 },
      metadata: { userId: ACTOR },
    });
    const state = JSON.stringify({ name: 'Bench team', season: '2026', ...data, archived: false });
    const stateVersion = String(currentStateVersion(fantasyTeamDecider));

    /** ref-command's cycle, on its own keys (its tags and names, as its server builds them). */
    const refCycle: Operation = async (team) => {
      const tag = `${keys.prefix}ref:{p${partitionOf(team.id)}}`;
      const lock = `${tag}:lock:${REF_AGGREGATE_TYPE}:${team.id}`;
      const record = `${tag}:record:${REF_AGGREGATE_TYPE}:${team.id}`;
      const token = randomUUID();
      const loaded = (await redis.evalsha(sha.refLock, 2, lock, record, token, LOCK_TTL_MS)) as unknown[];
      if (loaded[0] !== 1) throw new Error('ref lock taken');
      const expected = Number(loaded[1] ?? 0);
      const written = await redis.evalsha(
        sha.refAppend,
        4,
        `${tag}:stream:${REF_AGGREGATE_TYPE}:${team.id}`,
        `${tag}:log`,
        record,
        lock,
        expected,
        token,
        refEnvelope,
        state,
      );
      if (written !== expected + 1) throw new Error(`ref append refused at ${expected}`);
    };
    /** The service's cycle as the command path sends it (no request id), with `appendSha`. */
    const serviceCycle =
      (appendSha: string): Operation =>
      async (team) => {
        const lock = keys.aggregateLock(TEAM_TYPE, team.id);
        const record = keys.aggregateRecord(TEAM_TYPE, team.id);
        const token = randomUUID();
        const loaded = (await redis.evalsha(sha.lock, 2, lock, record, token, LOCK_TTL_MS)) as unknown[];
        if (loaded[0] !== 1) throw new Error('lock taken');
        const expected = Number(loaded[1] ?? 0);
        const written = await redis.evalsha(
          appendSha,
          4,
          keys.aggregateStream(TEAM_TYPE, team.id),
          keys.logPartition(partitionOf(team.id)),
          record,
          lock,
          expected,
          token,
          team.id,
          TEAM_TYPE,
          changes,
          state,
          stateVersion,
          1,
          serviceEnvelope,
        );
        if (written !== expected + 1) throw new Error(`append refused at ${expected}`);
      };

    const reference = 'ref-command: lock-and-load + append-and-unlock (reference)';
    const variants: Variant[] = [
      { name: reference, heard: true, cycle: refCycle },
      {
        name: 'service: lock-and-load-3 + append-events-6, PUBLISH heard by one subscriber',
        heard: true,
        cycle: serviceCycle(sha.append),
      },
      { name: 'service: the same, PUBLISH heard by nobody', heard: false, cycle: serviceCycle(sha.append) },
      {
        name: 'service: the same without the PUBLISH',
        heard: false,
        cycle: serviceCycle(sha.appendUnannounced),
      },
      {
        name: 'service: without the PUBLISH, log entry copying the envelope (as ref-command)',
        heard: false,
        cycle: serviceCycle(sha.appendUnannouncedCopied),
      },
    ];

    // One subscriber, as a projector listens; messages only counted.
    const listener = duplicateConnection(redis, logger, 'bench-subscriber');
    subscriber = listener;
    let heardMessages = 0;
    listener.on('message', () => {
      heardMessages += 1;
    });
    const listen = async (on: boolean) => {
      if (on) await listener.subscribe(changes);
      else await listener.unsubscribe(changes);
    };

    const runs = new Map<string, LoadResult[]>(variants.map((variant) => [variant.name, []]));
    const cpuPerCycle = new Map<string, number[]>(variants.map((variant) => [variant.name, []]));
    const ratios = new Map<string, number[]>(variants.map((variant) => [variant.name, []]));
    for (let round = 0; round < settings.rounds; round += 1) {
      const roundCpu = new Map<string, number>();
      for (let index = 0; index < variants.length; index += 1) {
        const variant = variants[(index + round) % variants.length];
        if (!variant) continue;
        await listen(variant.heard);
        // Every run starts from an empty database (the scripts stay loaded): a run appends ~100,000
        // events, and without this the later runs would pay for a Redis grown by the earlier ones'
        // (ref-command's twice as fast: it stores each event twice in full).
        await redis.flushdb();
        await drive(teams, settings.connections, settings.warmupSeconds, variant.cycle);
        const before = cpuSeconds(redisServer.pid);
        const result = await drive(teams, settings.connections, settings.durationSeconds, variant.cycle);
        const micros = ((cpuSeconds(redisServer.pid) - before) * 1e6) / result.responses;
        roundCpu.set(variant.name, micros);
        cpuPerCycle.get(variant.name)?.push(micros);
        runs.get(variant.name)?.push(result);
        reportRun(`${variant.name} (${micros.toFixed(1)} us redis CPU per cycle)`, round + 1, result);
      }
      const referenceCpu = roundCpu.get(reference) ?? Number.NaN;
      for (const [name, micros] of roundCpu) ratios.get(name)?.push(micros / referenceCpu);
    }
    await listen(false);

    const measured = variants.map((variant) => summarise(variant.name, runs.get(variant.name) ?? []));
    const [base, ...others] = measured;
    if (!base) throw new Error('no reference row');
    const cpuTable = markdownTable(
      [
        'Cycle (lock-and-load, then append)',
        'redis CPU us per cycle (median)',
        'vs ref-command (median of rounds)',
        'us by round',
      ],
      variants.map((variant) => {
        const perRound = cpuPerCycle.get(variant.name) ?? [];
        return [
          variant.name,
          median(perRound).toFixed(1),
          variant.name === reference
            ? '(reference)'
            : `${median(ratios.get(variant.name) ?? []).toFixed(2)}x`,
          perRound.map((micros) => micros.toFixed(1)).join(' / '),
        ];
      }),
      new Set(['redis CPU us per cycle (median)', 'vs ref-command (median of rounds)']),
    );
    return {
      name: NAME,
      title: "A command's Redis CPU against ref-command's, part by part (the two scripts, run bare)",
      settings,
      rateUnit: 'cycles/s',
      loadDescription: `${settings.connections} concurrent lanes in the bench process on one auto-pipelined connection, each cycling through its own share of ${TEAM_COUNT.toLocaleString('en-US')} teams; a cycle is lock-and-load then the append, each one EVALSHA.`,
      machine,
      rows: compareWith(base, others, null),
      tables: [cpuTable],
      notes: [
        'Each run starts from an empty database (FLUSHDB before its warm-up; the scripts stay loaded), so no run pays for the memory an earlier one grew.',
        'redis CPU per cycle: redis-server utime + stime from /proc/<pid>/stat (10 ms ticks) around each measured run, over its cycles; the ratio is the median over the rounds of each variant over ref-command in the same round. The rates above are for information.',
        'ref-command runs its own two scripts (bench/baselines/ref-command-scripts.cjs) with its full JSON envelope; the service runs lock-and-load-3.lua and append-events-6.lua with the stored envelope (stored-envelope.ts) and the arguments the command path sends without a request id (with the state’s shape version). Same state, same teams, same connection.',
        `The subscriber is one connection in the bench process subscribed to the changes channel, as a projector is (${heardMessages.toLocaleString('en-US')} messages heard over the run). The variants without a PUBLISH, or with ref-command's log entry, are modified copies of append-events-6.lua loaded for this bench only: they measure what each part costs, not a proposal.`,
      ],
      problems: problemsOf(measured),
    };
  } finally {
    if (subscriber) await closeConnections(subscriber);
    await closeConnections(redis);
    logger.close();
    await stopAll();
  }
}

if (require.main === module) void runBenches([{ name: NAME, load: () => Promise.resolve({ run }) }]);
