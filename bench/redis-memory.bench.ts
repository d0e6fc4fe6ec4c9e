import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';

import { startLocalRedis } from '../scripts/lib/redis-server';
import { SYSTEM_ACTOR } from '../shared/accounts/account';
import { loadConfig } from '../shared/config';
import { createCoreServices, createEventStore } from '../shared/core-services';
import { CommandHandler } from '../shared/event-store/handle-command';
import type { FantasyTeamCommand } from '../shared/fantasy-team/fantasy-team.commands';
import { fantasyTeamDecider } from '../shared/fantasy-team/fantasy-team.decider';
import { fantasyTeamProjection } from '../shared/fantasy-team/fantasy-team.projection';
import { UNCHECKED_SUBMITTER } from '../shared/importers/importer';
import {
  type PlayerSeedingData,
  playerSeedingImporter,
} from '../shared/importers/player-seeding/player-seeding.importer';
import { createLogger } from '../shared/logger';
import {
  closeConnections,
  createRedisConnection,
  type RedisClient,
  waitForRedis,
} from '../shared/redis/connections';
import { createKeys } from '../shared/redis/keys';
import { LOG_PARTITIONS } from '../shared/redis/partitions';
import { seedPlayer } from '../test/helpers/seed-players';
import { ALL_PROJECTIONS } from '../workers/projector/all-projections';
import { applyNextBatch } from '../workers/projector/apply-batch';
import { NO_CHECKPOINT } from '../workers/projector/batch-plan';
import { rebuildProjection } from '../workers/projector/rebuild';
import {
  RECOMMENDED_REDIS_MEMORY_SETTINGS,
  RECOMMENDED_REDIS_SERVER_ARGS,
} from '../workers/redis-memory-settings';
import { stopAll, track } from './lib/processes';
import { type BenchReport, machineInfo } from './lib/report';
import { runBenches } from './lib/runner';

/**
 * Redis memory per event and per team: N teams each created, linked, unlinked, linked and unlinked
 * (5 events) through the command path in-process (CommandHandler, the event store every process
 * builds), the projections caught up, then `INFO memory` and `MEMORY USAGE` of every key, summed by
 * key kind, against the empty server. Targets (issue 22): <= 700 bytes per event and <= 3 KB per
 * team.
 *
 * Then per account and per player: N accounts created (CreateUser, no password) and N players
 * seeded (PlayerSeeding), each on a fresh server, with their projections.
 *
 * Settings: BENCH_TEAMS (default 10,000), BENCH_CONNECTIONS (concurrent lanes, default 32),
 * BENCH_USERS_AND_PLAYERS (default 2,000).
 */

const NAME = 'redis-memory';
const EVENTS_PER_TEAM = 5;
const BYTES_PER_EVENT_TARGET = 700;
const BYTES_PER_TEAM_TARGET = 3 * 1024;
const ACTOR = '11111111-1111-4111-8111-111111111111';
/** The default REDIS_KEY_PREFIX: key names are part of what a key costs. */
const PREFIX = 'fts:';

const COMMANDS: readonly FantasyTeamCommand[] = [
  { type: 'CreateFantasyTeam', data: { name: 'Bench team', season: '2026' } },
  { type: 'LinkFantasyTeam', data: { fantasyTeamExternalId: 4_711, fantasyUserId: 1_004_711 } },
  { type: 'UnlinkFantasyTeam', data: { unlinkReason: null } },
  { type: 'LinkFantasyTeam', data: { fantasyTeamExternalId: 4_712, fantasyUserId: 1_004_712 } },
  { type: 'UnlinkFantasyTeam', data: { unlinkReason: 'season over' } },
];

function positiveIntFromEnv(name: string, fallback: number): number {
  const value = Number(process.env[name] ?? fallback);
  if (!Number.isSafeInteger(value) || value <= 0) throw new Error(`${name} must be a positive integer`);
  return value;
}

/** The memory settings this bench varies, as the server reports them. */
async function settingsOf(redis: RedisClient): Promise<string> {
  const values = await Promise.all(
    RECOMMENDED_REDIS_MEMORY_SETTINGS.map(
      async ({ name }) => `${name} ${((await redis.config('GET', name)) as string[])[1] ?? '?'}`,
    ),
  );
  return values.join(', ');
}

async function usedMemory(redis: RedisClient): Promise<number> {
  const info = await redis.info('memory');
  return Number(/^used_memory:(\d+)/m.exec(info)?.[1] ?? NaN);
}

/**
 * The kind of a key, from its name: what follows the partition tag without the aggregate's id
 * (`stream:FantasyTeam`, `log`, `projection:fantasy-team`), or the name less its last part.
 */
function kindOf(key: string): string {
  const rest = key.slice(PREFIX.length).replace(/^\{[^}]*\}:/, '');
  const parts = rest.split(':');
  if (['stream', 'record', 'requests', 'request-times', 'projection'].includes(parts[0] ?? ''))
    return parts.slice(0, 2).join(':');
  if (parts[0] === 'checkpoint' || parts[0] === 'lease') return parts[0];
  return parts.length > 1 ? parts.slice(0, -1).join(':') : rest;
}

/** What the keys of one kind cost. */
interface KindUsage {
  keys: number;
  /** MEMORY USAGE summed (an estimate: a stream's radix tree is counted at a flat 240 bytes a node). */
  bytes: number;
  /** How much used_memory fell when they were deleted: what they really cost. */
  freed: number;
}

/**
 * Every key's MEMORY USAGE (all of its elements counted), summed by kind, then each kind deleted in
 * turn to read what it really held from used_memory: kind -> {keys, bytes, freed}. Deletes every key.
 */
async function usageByKind(redis: RedisClient): Promise<Map<string, KindUsage>> {
  const kinds = new Map<string, KindUsage>();
  const keysOf = new Map<string, string[]>();
  let cursor = '0';
  do {
    const [next, found] = await redis.scan(cursor, 'MATCH', `${PREFIX}*`, 'COUNT', 1_000);
    cursor = next;
    const sizes = await Promise.all(
      found.map((key) => redis.call('MEMORY', 'USAGE', key, 'SAMPLES', '0') as Promise<number | null>),
    );
    found.forEach((key, i) => {
      const kind = kindOf(key);
      const sum = kinds.get(kind) ?? { keys: 0, bytes: 0, freed: 0 };
      sum.keys += 1;
      sum.bytes += sizes[i] ?? 0;
      kinds.set(kind, sum);
      keysOf.set(kind, [...(keysOf.get(kind) ?? []), key]);
    });
  } while (cursor !== '0');
  for (const [kind, names] of keysOf) {
    const before = await usedMemory(redis);
    for (let i = 0; i < names.length; i += 500) await redis.del(...names.slice(i, i + 500));
    const sum = kinds.get(kind);
    if (sum) sum.freed = before - (await usedMemory(redis));
  }
  return kinds;
}

function bytes(value: number): string {
  return Math.round(value).toLocaleString('en-US');
}

/** What one server measured: the totals, and MEMORY USAGE by key kind. */
interface Measurement {
  /** The server's memory settings, as CONFIG GET answered them. */
  readonly settings: string;
  readonly total: number;
  readonly kinds: Map<string, KindUsage>;
  /** The team projection rebuilt after the figures were read: events applied, and its seconds. */
  readonly rebuild: { readonly events: number; readonly seconds: number };
}

/** N teams' history on a fresh redis-server started with `serverArgs`, then the projections caught up. */
async function measure(teamCount: number, lanes: number, serverArgs: string[]): Promise<Measurement> {
  const logger = createLogger({ level: 'warn', processRole: 'bench' });
  const redisServer = track(await startLocalRedis({ extraArgs: serverArgs }));
  const redis = createRedisConnection({ kind: 'standalone', url: redisServer.url }, 'request', logger);
  try {
    await waitForRedis(redis, logger);
    const keys = createKeys(PREFIX);
    const store = createEventStore(redis, keys);
    const commands = new CommandHandler(store, { ttlMs: 5_000, waitMs: 2_000 });
    const settings = await settingsOf(redis);
    const before = await usedMemory(redis);

    const teamIds = Array.from({ length: teamCount }, () => randomUUID());
    await Promise.all(
      Array.from({ length: lanes }, async (_, lane) => {
        for (let index = lane; index < teamIds.length; index += lanes) {
          const aggregateId = teamIds[index] as string;
          for (const command of COMMANDS) {
            const outcome = await commands.handle(fantasyTeamDecider, {
              aggregateId,
              command,
              context: { now: new Date(), actorUserId: ACTOR, actorRoles: ['Admin'] },
              metadata: { actorUserId: ACTOR, requestId: null, correlationId: randomUUID() },
            });
            if (!outcome.accepted) throw new Error(`${command.type} refused: ${outcome.message}`);
          }
        }
      }),
    );
    // The projections caught up, as the projector would have them.
    for (const projection of ALL_PROJECTIONS) {
      for (let partition = 0; partition < LOG_PARTITIONS; partition++) {
        let checkpoint = NO_CHECKPOINT;
        for (;;) {
          const result = await applyNextBatch(redis, keys, projection, partition, checkpoint, 500);
          if (result === 'fenced') throw new Error('fenced: nothing else runs here');
          if (result.entries === 0) break;
          checkpoint = result.checkpoint;
        }
      }
    }
    const after = await usedMemory(redis);
    // Timed after the figures are read: what `npm run projections:rebuild` costs per event.
    const rebuildStartedAt = performance.now();
    const rebuilt = await rebuildProjection(redis, keys, fantasyTeamProjection);
    const rebuild = { events: rebuilt, seconds: (performance.now() - rebuildStartedAt) / 1000 };
    return { settings, total: after - before, kinds: await usageByKind(redis), rebuild };
  } finally {
    // The server stops with the others at the end (stopAll keeps node alive while it waits).
    await closeConnections(redis);
    logger.close();
  }
}

/** N accounts (no password: no hash to compute) and N players, each on a fresh server with the recommended node size. */
async function measureOthers(count: number): Promise<{ perUser: number; perPlayer: number }> {
  const logger = createLogger({ level: 'warn', processRole: 'bench' });
  const results: number[] = [];
  for (const kind of ['users', 'players'] as const) {
    const redisServer = track(
      await startLocalRedis({
        extraArgs: [...RECOMMENDED_REDIS_SERVER_ARGS],
      }),
    );
    const config = loadConfig({ NODE_ENV: 'test', REDIS_URL: redisServer.url, REDIS_KEY_PREFIX: PREFIX });
    const redis = createRedisConnection(config.redis, 'request', logger);
    try {
      await waitForRedis(redis, logger);
      const services = createCoreServices(config, redis);
      const before = await usedMemory(redis);
      if (kind === 'users') {
        for (let n = 0; n < count; n++) {
          const created = await services.accounts.createUser(
            SYSTEM_ACTOR,
            {
              email: `bench-user-${n}@example.com`,
              userName: `bench-user-${n}`,
              firstName: `First${n}`,
              lastName: `Last${n}`,
              userType: 'Human',
              roles: ['Member'],
            },
            { requestId: null, correlationId: randomUUID() },
          );
          if (created.status !== 'created') throw new Error(`user ${n} not created: ${created.status}`);
        }
      } else {
        const { value } = playerSeedingImporter.schema(count).validate({
          season: '2026',
          round: 1,
          finalRound: 38,
          players: Array.from({ length: count }, (_, i) => seedPlayer(i + 1)),
        });
        const outcome = await playerSeedingImporter.run(
          value as PlayerSeedingData,
          {
            actor: SYSTEM_ACTOR,
            importJobId: randomUUID(),
            requestId: randomUUID(),
            dryRun: false,
            concurrency: 16,
            submitter: UNCHECKED_SUBMITTER,
            onProgress: () => undefined,
          },
          services,
        );
        if (outcome.status !== 'Completed')
          throw new Error(`players not seeded: ${JSON.stringify(outcome).slice(0, 300)}`);
      }
      for (const projection of ALL_PROJECTIONS) await rebuildProjection(redis, services.keys, projection);
      results.push(((await usedMemory(redis)) - before) / count);
    } finally {
      await closeConnections(redis);
    }
  }
  logger.close();
  return { perUser: results[0] ?? NaN, perPlayer: results[1] ?? NaN };
}

export async function run(): Promise<BenchReport> {
  const machine = machineInfo();
  const teamCount = positiveIntFromEnv('BENCH_TEAMS', 10_000);
  const lanes = positiveIntFromEnv('BENCH_CONNECTIONS', 32);
  try {
    // Redis's defaults, the recommended node size alone, and every setting docs/capacity.md
    // recommends (ADR 0020): what each is worth.
    const measured = [
      await measure(teamCount, lanes, []),
      await measure(teamCount, lanes, RECOMMENDED_REDIS_SERVER_ARGS.slice(0, 2)),
      await measure(teamCount, lanes, [...RECOMMENDED_REDIS_SERVER_ARGS]),
    ];
    const othersCount = positiveIntFromEnv('BENCH_USERS_AND_PLAYERS', 2_000);
    const others = await measureOthers(othersCount);
    const events = teamCount * EVENTS_PER_TEAM;
    const met = (ok: boolean) => (ok ? 'yes' : '**no**');
    const totals = [
      '| Redis settings | used_memory after - before | per event | target | met? | per team | target | met? |',
      '| --- | ---: | ---: | ---: | --- | ---: | ---: | --- |',
      ...measured.map(({ settings, total }) => {
        const perEvent = total / events;
        const perTeam = total / teamCount;
        return `| ${settings} | ${bytes(total)} | ${bytes(perEvent)} | ${BYTES_PER_EVENT_TARGET} | ${met(perEvent <= BYTES_PER_EVENT_TARGET)} | ${bytes(perTeam)} | ${bytes(BYTES_PER_TEAM_TARGET)} | ${met(perTeam <= BYTES_PER_TEAM_TARGET)} |`;
      }),
    ].join('\n');
    const kindTables = measured.map(({ settings, kinds }) => {
      const rows = [...kinds.entries()].sort((a, b) => b[1].freed - a[1].freed);
      const sum = (of: (usage: KindUsage) => number) =>
        rows.reduce((total, [, usage]) => total + of(usage), 0);
      return [
        `| Key kind (${settings}) | keys | freed when deleted, bytes | per team | per key | MEMORY USAGE per key |`,
        '| --- | ---: | ---: | ---: | ---: | ---: |',
        ...rows.map(
          ([kind, usage]) =>
            `| ${kind} | ${usage.keys.toLocaleString('en-US')} | ${bytes(usage.freed)} | ${bytes(usage.freed / teamCount)} | ${bytes(usage.freed / usage.keys)} | ${bytes(usage.bytes / usage.keys)} |`,
        ),
        `| every key | ${sum((usage) => usage.keys).toLocaleString('en-US')} | ${bytes(sum((usage) => usage.freed))} | ${bytes(sum((usage) => usage.freed) / teamCount)} | | |`,
      ].join('\n');
    });
    const problems = measured.every(({ total }) => Number.isFinite(total))
      ? []
      : ['INFO memory did not report used_memory'];
    return {
      name: NAME,
      title: 'Redis memory per event and per team (link/unlink, 5 events per team)',
      settings: { connections: lanes, warmupSeconds: 0, durationSeconds: 0, rounds: 1 },
      rateUnit: 'n/a',
      loadDescription: `${teamCount.toLocaleString('en-US')} teams through CommandHandler in the bench process (${lanes} lanes), each created, linked, unlinked, linked, unlinked (${events.toLocaleString('en-US')} events); every projection then caught up; each on a fresh redis-server, key prefix \`${PREFIX}\``,
      machine,
      rows: [],
      tables: [
        totals,
        [
          `| Other aggregates (${RECOMMENDED_REDIS_SERVER_ARGS.join(' ')}, ${othersCount.toLocaleString('en-US')} each) | used_memory per aggregate |`,
          '| --- | ---: |',
          `| account (CreateUser without a password, its users projection entries) | ${bytes(others.perUser)} |`,
          `| player (PlayerSeeding: identity and one season's stats, the sport projections) | ${bytes(others.perPlayer)} |`,
        ].join('\n'),
        ...kindTables,
      ],
      notes: [
        "`used_memory` counts everything Redis allocated for the data (keys, values, the main dictionary) and is the figure to size by. Each key kind is then deleted in turn and the fall of `used_memory` is what it held; `MEMORY USAGE` (`SAMPLES 0`) is shown beside it for comparison: it is an estimate (a stream's radix tree at a flat 240 bytes a node). What no kind frees is the main dictionary's table and the server's own (scripts, clients).",
        `Redis gives a stream's newest node min(4096, stream-node-max-bytes) bytes up front: with the default every aggregate stream costs ~4 KB however few its events; a hash with a value longer than hash-max-listpack-value (default 64) becomes a dictionary. docs/capacity.md recommends \`${RECOMMENDED_REDIS_SERVER_ARGS.join(' ')}\` (ADR 0020, workers/redis-memory-settings.ts).`,
        `Rebuild of the team projection (\`rebuildProjection\`, what \`npm run projections:rebuild\` runs; after the figures were read, nothing else running): ${measured
          .map(
            ({ settings, rebuild }) =>
              `${settings}: ${rebuild.events.toLocaleString('en-US')} events in ${rebuild.seconds.toFixed(1)} s, ${((1_000_000 * rebuild.seconds) / Math.max(1, rebuild.events)).toFixed(0)} s per million events`,
          )
          .join('; ')}.`,
        'No request ids: an HTTP command with a `requestId` also keeps, for 24 h, the request hash and times of its aggregate and its remembered answer (those expire; see docs/capacity.md).',
      ],
      problems,
    };
  } finally {
    await stopAll();
  }
}

if (require.main === module) void runBenches([{ name: NAME, load: () => Promise.resolve({ run }) }]);
