import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import type { Redis } from 'ioredis';

import { startLocalRedis } from '../scripts/lib/redis-server';
import { EventStore } from '../shared/event-store/event-store';
import { CommandHandler } from '../shared/event-store/handle-command';
import { LOCAL_DURABILITY, ReplicaConfirmation } from '../shared/event-store/write-durability';
import { createLogger } from '../shared/logger';
import { closeConnections, createRedisConnection, waitForRedis } from '../shared/redis/connections';
import { createKeys } from '../shared/redis/keys';
import { drive, handleTeamCommand, linkOrUnlink, type Operation, type Team } from './event-store.bench';
import { type LoadResult, reportRun, settingsFromEnv, summarise } from './lib/load';
import { stopAll, track } from './lib/processes';
import { type BenchReport, compareWith, type ComparisonRow, machineInfo, problemsOf } from './lib/report';
import { runBenches } from './lib/runner';

/**
 * What WRITE_DURABILITY=replicated costs a command (ADR 0021): CommandHandler.handle in-process
 * (LinkFantasyTeam / UnlinkFantasyTeam on 1,000 teams), with `local` (answer once the master has
 * the append) and with `replicated` (then `WAIT 1 500` until the replica has it), against a private
 * redis-server with one replica on loopback; under concurrent lanes and one command at a time; and
 * the master's CPU per command, read from INFO cpu around each measured run.
 *
 * Settings: BENCH_CONNECTIONS (concurrent lanes), BENCH_WARMUP, BENCH_DURATION (seconds), BENCH_ROUNDS.
 */

const NAME = 'write-durability';
const TEAM_COUNT = 1_000;
const WAIT_TIMEOUT_MS = 500;

/** The server's CPU seconds so far (user + system), from INFO cpu. */
async function cpuSeconds(redis: Redis): Promise<number> {
  const info = await redis.info('cpu');
  const field = (name: string) => Number(new RegExp(`^${name}:([\\d.]+)`, 'm').exec(info)?.[1] ?? 0);
  return field('used_cpu_user') + field('used_cpu_sys');
}

export async function run(): Promise<BenchReport> {
  const machine = machineInfo();
  const settings = settingsFromEnv({ connections: 32, warmupSeconds: 2, durationSeconds: 6, rounds: 3 });
  const logger = createLogger({ level: 'warn', processRole: 'bench' });
  const replicaDir = mkdtempSync(path.join(os.tmpdir(), 'fts-bench-replica-'));
  const master = track(await startLocalRedis());
  const replica = track(
    await startLocalRedis({
      extraArgs: ['--replicaof', '127.0.0.1', String(master.port), '--dir', replicaDir],
    }),
  );
  // The connection the ingress and workers use for commands: fail-fast, auto-pipelined.
  const redis = createRedisConnection({ kind: 'standalone', url: master.url }, 'request', logger) as Redis;
  const replicaRedis = createRedisConnection(
    { kind: 'standalone', url: replica.url },
    'request',
    logger,
  ) as Redis;
  let replicaConfirmation: ReplicaConfirmation | undefined;
  try {
    await waitForRedis(redis, logger);
    await waitForRedis(replicaRedis, logger);
    const keys = createKeys(`bench-${NAME}-${process.pid}:`);
    const store = new EventStore(redis, keys);
    const lock = { ttlMs: 5_000, waitMs: 2_000 };
    replicaConfirmation = new ReplicaConfirmation(redis, keys, WAIT_TIMEOUT_MS);
    const handlers = {
      local: new CommandHandler(store, lock, {}, LOCAL_DURABILITY),
      replicated: new CommandHandler(store, lock, {}, replicaConfirmation),
    };
    // The replica's first sync, before anything is measured: a WAIT before it would time out.
    // (WAIT 1 1000 at a time: the connection's command timeout is 2 s.)
    for (let attempt = 0; (await redis.wait(1, 1_000)) < 1; attempt += 1)
      if (attempt === 20) throw new Error('the replica did not link to the master');

    const teams: Team[] = Array.from({ length: TEAM_COUNT }, () => ({
      id: randomUUID(),
      linked: false,
      version: 0,
    }));
    let step = 0;
    const handle = handleTeamCommand;
    for (const team of teams)
      await handle(handlers.local, team, {
        type: 'CreateFantasyTeam',
        data: { name: 'Bench team', season: '2026' },
      });
    const operationOf =
      (commands: CommandHandler): Operation =>
      async (team) => {
        await handle(commands, team, linkOrUnlink(team, step++));
        team.linked = !team.linked;
      };

    const workloads = [
      {
        name: `local, ${settings.connections} lanes (baseline)`,
        operation: operationOf(handlers.local),
        lanes: settings.connections,
      },
      {
        name: `replicated, ${settings.connections} lanes`,
        operation: operationOf(handlers.replicated),
        lanes: settings.connections,
      },
      { name: 'local, 1 lane', operation: operationOf(handlers.local), lanes: 1 },
      { name: 'replicated, 1 lane', operation: operationOf(handlers.replicated), lanes: 1 },
    ];
    const runs = new Map<string, LoadResult[]>(workloads.map((workload) => [workload.name, []]));
    const cpuPerCommand = new Map<string, number[]>(workloads.map((workload) => [workload.name, []]));
    for (let round = 0; round < settings.rounds; round += 1) {
      for (let index = 0; index < workloads.length; index += 1) {
        const workload = workloads[(index + round) % workloads.length];
        if (!workload) continue;
        await drive(teams, workload.lanes, settings.warmupSeconds, workload.operation);
        const before = await cpuSeconds(redis);
        const result = await drive(teams, workload.lanes, settings.durationSeconds, workload.operation);
        const cpu = (await cpuSeconds(redis)) - before;
        runs.get(workload.name)?.push(result);
        cpuPerCommand.get(workload.name)?.push((cpu * 1e6) / Math.max(1, result.responses));
        reportRun(workload.name, round + 1, result);
      }
    }
    const measured = workloads.map((workload) => summarise(workload.name, runs.get(workload.name) ?? []));
    const [local, replicated, localOne, replicatedOne] = measured;
    if (!local || !replicated || !localOne || !replicatedOne) throw new Error('a workload is missing');
    const medianOf = (values: readonly number[]) =>
      [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0;
    const cpuNote = workloads
      .map((workload) => `${workload.name} ${medianOf(cpuPerCommand.get(workload.name) ?? []).toFixed(0)} us`)
      .join('; ');
    const sequential: ComparisonRow[] = [
      { ...localOne, ratio: null, target: null, standalone: true },
      { ...replicatedOne, ratio: replicatedOne.requestsPerSecond / localOne.requestsPerSecond, target: null },
    ];

    return {
      name: NAME,
      title: 'A command with WRITE_DURABILITY=replicated (WAIT 1 after the append) vs local',
      settings,
      rateUnit: 'commands/s',
      loadDescription: `CommandHandler.handle in the bench process on ${TEAM_COUNT.toLocaleString('en-US')} teams (no two commands on one team at once), ${settings.connections} concurrent lanes, then one lane; latency per command.`,
      machine,
      rows: [...compareWith(local, [replicated], null), ...sequential],
      notes: [
        'A private redis-server with one replica (`--replicaof`), both on loopback on the same machine as the bench; the command connection is configured as the ingress configures it (auto-pipelining on).',
        '`replicated` sends each append and its `WAIT 1 500` over a connection of its own, lent by a pool per master (REPLICATED_WRITE_CONNECTIONS_PER_MASTER, ADR 0021), and answers only when the replica acknowledged it; the replica acknowledges at once when asked, so the cost is one more round trip to the master plus the master-to-replica round trip.',
        'WAIT blocks only the connection it runs on: the locks, loads and reads of concurrent commands stay on the shared connection and do not queue behind it (before, the append and the WAIT shared it). The 32-lane row shows the cost under load, the 1-lane rows the latency one command pays.',
        `The master's CPU per command (INFO cpu around each measured run, median): ${cpuNote}.`,
        'No target: the ratio is the price of the guarantee on this machine.',
      ],
      problems: problemsOf(measured),
    };
  } finally {
    await replicaConfirmation?.close();
    await closeConnections(redis, replicaRedis);
    logger.close();
    await stopAll();
    rmSync(replicaDir, { recursive: true, force: true });
  }
}

if (require.main === module) void runBenches([{ name: NAME, load: () => Promise.resolve({ run }) }]);
