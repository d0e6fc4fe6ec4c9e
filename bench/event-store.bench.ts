import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';

import { startLocalRedis } from '../scripts/lib/redis-server';
import type { EventEnvelope } from '../shared/event-store/envelope';
import { EventStore } from '../shared/event-store/event-store';
import { CommandHandler } from '../shared/event-store/handle-command';
import { compactEnvelopeJson } from '../shared/event-store/stored-envelope';
import type { FantasyTeamCommand } from '../shared/fantasy-team/fantasy-team.commands';
import { fantasyTeamDecider } from '../shared/fantasy-team/fantasy-team.decider';
import { createLogger } from '../shared/logger';
import { closeConnections, createRedisConnection, waitForRedis } from '../shared/redis/connections';
import { createKeys } from '../shared/redis/keys';
import { partitionOf } from '../shared/redis/partitions';
import { type LoadResult, percentile, reportRun, settingsFromEnv, summarise } from './lib/load';
import { stopAll, track } from './lib/processes';
import { type BenchReport, compareWith, machineInfo, problemsOf } from './lib/report';
import { runBenches } from './lib/runner';

/**
 * The event store's command path in-process, without HTTP: CommandHandler.handle (lock and load in
 * one script, decide, fenced append that releases the lock) running LinkFantasyTeam and
 * UnlinkFantasyTeam on 1,000 teams, against a raw EVALSHA loop of the same append script with
 * ready-made arguments of the same size: the floor of what one append costs on this Redis.
 *
 * Settings: BENCH_CONNECTIONS (concurrent lanes, each owning its own teams), BENCH_WARMUP,
 * BENCH_DURATION (seconds), BENCH_ROUNDS.
 */

const NAME = 'event-store';
const TEAM_COUNT = 1_000;
const TEAM_TYPE = fantasyTeamDecider.aggregateType;
const ACTOR = '11111111-1111-4111-8111-111111111111';

export interface Team {
  readonly id: string;
  linked: boolean;
  version: number;
}

/** One operation on one team; resolves when Redis has answered it. */
export type Operation = (team: Team) => Promise<void>;

/** One command on a bench team through `commands`, as the bench's actor; the team's version follows. */
export async function handleTeamCommand(
  commands: CommandHandler,
  team: Team,
  command: FantasyTeamCommand,
): Promise<void> {
  const outcome = await commands.handle(fantasyTeamDecider, {
    aggregateId: team.id,
    command,
    context: { now: new Date(), actorUserId: ACTOR, actorRoles: ['Member'] },
    metadata: { actorUserId: ACTOR, requestId: null, correlationId: randomUUID() },
  });
  if (!outcome.accepted) throw new Error(`${command.type} refused: ${outcome.message}`);
  team.version = outcome.version;
}

/**
 * Runs `operation` from `lanes` concurrent loops for `seconds`, each lane cycling through its own
 * teams (so no two operations ever wait on one aggregate), and measures each operation's latency.
 */
export async function drive(
  teams: readonly Team[],
  lanes: number,
  seconds: number,
  operation: Operation,
): Promise<LoadResult> {
  const latencies: number[] = [];
  let errors = 0;
  const deadline = performance.now() + seconds * 1000;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: lanes }, async (_, lane) => {
      const own = teams.filter((_team, index) => index % lanes === lane);
      for (let next = 0; performance.now() < deadline; next += 1) {
        const team = own[next % own.length];
        if (!team) return;
        const before = performance.now();
        try {
          await operation(team);
          latencies.push(performance.now() - before);
        } catch {
          errors += 1;
        }
      }
    }),
  );
  const elapsedSeconds = (performance.now() - started) / 1000;
  return {
    requestsPerSecond: latencies.length / elapsedSeconds,
    p50Ms: percentile(latencies, 50),
    p99Ms: percentile(latencies, 99),
    responses: latencies.length,
    non2xx: 0,
    errors,
    warmupFailures: 0,
  };
}

export function linkOrUnlink(team: Team, step: number): FantasyTeamCommand {
  return team.linked
    ? { type: 'UnlinkFantasyTeam', data: { unlinkReason: null } }
    : { type: 'LinkFantasyTeam', data: { fantasyTeamExternalId: step + 1, fantasyUserId: 1_000_000 + step } };
}

export async function run(): Promise<BenchReport> {
  const machine = machineInfo();
  const settings = settingsFromEnv({ connections: 32, warmupSeconds: 2, durationSeconds: 8, rounds: 3 });
  const logger = createLogger({ level: 'warn', processRole: 'bench' });
  const redisServer = track(await startLocalRedis());
  // The connection the ingress and workers use for commands: fail-fast, auto-pipelined.
  const redis = createRedisConnection({ kind: 'standalone', url: redisServer.url }, 'request', logger);
  try {
    await waitForRedis(redis, logger);
    const keys = createKeys(`bench-${NAME}-${process.pid}:`);
    const store = new EventStore(redis, keys);
    const commands = new CommandHandler(store, { ttlMs: 5_000, waitMs: 2_000 });
    const teams: Team[] = Array.from({ length: TEAM_COUNT }, () => ({
      id: randomUUID(),
      linked: false,
      version: 0,
    }));
    let step = 0;
    const handle = (team: Team, command: FantasyTeamCommand) => handleTeamCommand(commands, team, command);
    for (const team of teams)
      await handle(team, { type: 'CreateFantasyTeam', data: { name: 'Bench team', season: '2026' } });

    const service: Operation = async (team) => {
      await handle(team, linkOrUnlink(team, step++));
      team.linked = !team.linked;
    };

    // The raw loop appends a real LinkFantasyTeam envelope and state of the same size, with no lock.
    const sampleEvent: EventEnvelope = {
      eventId: randomUUID(),
      eventType: 'FantasyTeamLinkedEvent',
      aggregateType: TEAM_TYPE,
      aggregateId: teams[0]?.id ?? '',
      version: 2,
      occurredAt: new Date().toISOString(),
      data: { fantasyTeamExternalId: 1, fantasyUserId: 1_000_001, linkedAt: new Date().toISOString() },
      metadata: { actorUserId: ACTOR, requestId: null, correlationId: randomUUID() },
    };
    const eventJson = compactEnvelopeJson(sampleEvent);
    const record = await store.loadRecord(TEAM_TYPE, teams[0]?.id ?? '', fantasyTeamDecider.initialState);
    const stateJson = JSON.stringify(record.state);
    const raw: Operation = async (team) => {
      const version = await redis.appendEvents(
        keys.aggregateStream(TEAM_TYPE, team.id),
        keys.logPartition(partitionOf(team.id)),
        keys.aggregateRecord(TEAM_TYPE, team.id),
        keys.aggregateLock(TEAM_TYPE, team.id),
        keys.aggregateRequests(TEAM_TYPE, team.id),
        keys.aggregateRequestTimes(TEAM_TYPE, team.id),
        team.version,
        '', // no lock held
        team.id.toLowerCase(),
        TEAM_TYPE,
        keys.aggregateChanges(TEAM_TYPE),
        stateJson,
        '', // no state shape version: this bench's store keeps none, as the service row's
        1,
        eventJson,
        // no tail: no request id, attachment or removal
      );
      if (version !== team.version + 1) throw new Error(`raw append refused at version ${team.version}`);
      team.version = version;
    };
    // The raw loop leaves the state as it was; the service loop continues from each team's record.
    const resync = async () => {
      for (const team of teams) {
        const current = await store.loadRecord(TEAM_TYPE, team.id, fantasyTeamDecider.initialState);
        team.version = current.version;
        team.linked = (current.state?.fantasyTeamExternalId ?? 0) !== 0;
      }
    };

    const workloads = [
      { name: 'raw EVALSHA of append-events-6.lua (baseline)', operation: raw },
      { name: 'CommandHandler: lock and load, decide, fenced append', operation: service },
    ];
    const runs = new Map<string, LoadResult[]>(workloads.map((workload) => [workload.name, []]));
    for (let round = 0; round < settings.rounds; round += 1) {
      for (let index = 0; index < workloads.length; index += 1) {
        const workload = workloads[(index + round) % workloads.length];
        if (!workload) continue;
        await resync();
        await drive(teams, settings.connections, settings.warmupSeconds, workload.operation);
        await resync();
        const result = await drive(teams, settings.connections, settings.durationSeconds, workload.operation);
        runs.get(workload.name)?.push(result);
        reportRun(workload.name, round + 1, result);
      }
    }
    const [base, handled] = workloads.map((workload) =>
      summarise(workload.name, runs.get(workload.name) ?? []),
    );
    if (!base || !handled) throw new Error('a workload is missing');

    return {
      name: NAME,
      title: 'The command path in-process vs a raw EVALSHA loop of the append script',
      settings,
      rateUnit: 'appends/s',
      loadDescription: `${settings.connections} concurrent lanes in the bench process, each cycling through its own share of ${TEAM_COUNT.toLocaleString('en-US')} teams (no two operations on one team at once); latency per operation.`,
      machine,
      rows: compareWith(base, [handled], null),
      notes: [
        'Both run in the bench process on one ioredis connection configured as the ingress configures its command connection (auto-pipelining on), against a private redis-server on loopback.',
        'The baseline calls the append script (EVALSHA) with a ready-made FantasyTeamLinkedEvent envelope and state, no lock, tracking each team’s version itself: one round trip and the script’s own work.',
        'The service row is CommandHandler.handle with LinkFantasyTeam / UnlinkFantasyTeam: lock-and-load script, pure decide, envelope and state serialisation, append script (which releases the lock): two round trips.',
        'No target is set for this pair; the ratio shows what the lock, the load and the domain cost over the bare append.',
      ],
      problems: problemsOf([base, handled]),
    };
  } finally {
    await closeConnections(redis);
    logger.close();
    await stopAll();
  }
}

if (require.main === module) void runBenches([{ name: NAME, load: () => Promise.resolve({ run }) }]);
