/**
 * Builders and probes for projector tests: team ids that cover every log partition, commands run
 * straight through the command handler, snapshots of a projection's documents, and whether every
 * partition's checkpoint has reached the end of its log partition.
 */
import { randomUUID } from 'node:crypto';

import type { DecisionContext } from '../../shared/event-store/decider';
import type { EventStore } from '../../shared/event-store/event-store';
import type { CommandHandler } from '../../shared/event-store/handle-command';
import {
  type FantasyTeamCommand,
  type RosterSlot,
  SELECTION_STATUS,
} from '../../shared/fantasy-team/fantasy-team.commands';
import { fantasyTeamDecider } from '../../shared/fantasy-team/fantasy-team.decider';
import {
  fantasyTeamProjection,
  type FantasyTeamView,
} from '../../shared/fantasy-team/fantasy-team.projection';
import type { Projection } from '../../shared/projections/projection';
import { type RedisClient, scanKeys } from '../../shared/redis/connections';
import type { Keys } from '../../shared/redis/keys';
import { LOG_PARTITIONS, partitionOf } from '../../shared/redis/partitions';

const TEAM = fantasyTeamDecider.aggregateType;

/** `count` fresh team ids (at least LOG_PARTITIONS) such that every log partition holds one. */
export function teamIdsOverEveryPartition(count: number): string[] {
  const ids: string[] = [];
  const covered = new Set<number>();
  while (covered.size < LOG_PARTITIONS) {
    const id = randomUUID();
    if (covered.has(partitionOf(id))) continue;
    covered.add(partitionOf(id));
    ids.push(id);
  }
  while (ids.length < count) ids.push(randomUUID());
  return ids;
}

/** `perPartition` fresh team ids in every log partition: a backlog equally deep everywhere. */
export function teamIdsInEachPartition(perPartition: number): string[] {
  const buckets = Array.from({ length: LOG_PARTITIONS }, (): string[] => []);
  while (buckets.some((bucket) => bucket.length < perPartition)) {
    const id = randomUUID();
    const bucket = buckets[partitionOf(id)];
    if (bucket && bucket.length < perPartition) bucket.push(id);
  }
  return buckets.flat();
}

/** A roster of `size` players whose ids depend on `seed`, with a Captain and a ViceCaptain. */
export function rosterOf(size: number, seed: number): RosterSlot[] {
  return Array.from({ length: size }, (_, i) => ({
    participantId: `00000000-0000-4000-8000-${String(seed * 100 + i).padStart(12, '0')}`,
    selectionStatus:
      i === 0 ? SELECTION_STATUS.Captain : i === 1 ? SELECTION_STATUS.ViceCaptain : SELECTION_STATUS.Selected,
  }));
}

/**
 * The n-th command of a team's scripted life after its creation: link, roster, unlink, link...
 * Most are accepted; a few (an unlink of an unlinked team) are rejected on purpose.
 */
export function scriptedCommand(step: number, seed: number): FantasyTeamCommand {
  switch (step % 5) {
    case 0:
      return {
        type: 'LinkFantasyTeam',
        data: { fantasyTeamExternalId: seed * 1000 + step + 1, fantasyUserId: seed + 1 },
      };
    case 1:
      return { type: 'SetFantasyTeamRoster', data: { players: rosterOf((step % 30) + 1, seed + step) } };
    case 2:
      return { type: 'UnlinkFantasyTeam', data: { unlinkReason: step % 2 ? `reason ${step}` : null } };
    case 3:
      return { type: 'UnlinkFantasyTeam', data: { unlinkReason: null } };
    default:
      return { type: 'SetFantasyTeamRoster', data: { players: rosterOf(step % 7, seed) } };
  }
}

export function actorContext(actorUserId: string, roles: string[] = ['Member']): DecisionContext {
  return { now: new Date(), actorUserId, actorRoles: roles };
}

/** Runs one team command through the real command handler (lock, decide, fenced append). */
export async function runTeamCommand(
  commands: CommandHandler,
  aggregateId: string,
  command: FantasyTeamCommand,
  actorUserId: string,
): Promise<boolean> {
  const outcome = await commands.handle(fantasyTeamDecider, {
    aggregateId,
    command,
    context: actorContext(actorUserId),
    metadata: { actorUserId, requestId: null, correlationId: 'projector-test' },
  });
  return outcome.accepted;
}

/** Runs `jobs` with at most `parallel` in flight; returns how many resolved true. */
export async function runWithConcurrency(
  jobs: (() => Promise<boolean>)[],
  parallel: number,
): Promise<number> {
  let next = 0;
  let accepted = 0;
  const lanes = Array.from({ length: parallel }, async () => {
    while (next < jobs.length) {
      const job = jobs[next++];
      if (job && (await job())) accepted++;
    }
  });
  await Promise.all(lanes);
  return accepted;
}

/**
 * Every key a projection wrote (documents and indexes; checkpoints left out), by key, as exact
 * text: a string's value, a hash's fields, a sorted set's members with scores, a set's members.
 * Two snapshots are equal exactly when every query answered from them is.
 */
export async function snapshotDocuments(
  redis: RedisClient,
  keys: Keys,
  projection: Projection<unknown> = fantasyTeamProjection,
): Promise<Record<string, string>> {
  const found = new Set<string>();
  for (const pattern of projection.keyPatterns(keys)) {
    for await (const batch of scanKeys(redis, pattern)) {
      batch.filter((key) => !key.includes(':checkpoint:')).forEach((key) => found.add(key));
    }
  }
  const snapshot: Record<string, string> = {};
  for (const key of [...found].sort()) {
    const type = await redis.type(key);
    if (type === 'string') snapshot[key] = (await redis.get(key)) ?? '<missing>';
    else if (type === 'hash') snapshot[key] = JSON.stringify(Object.entries(await redis.hgetall(key)).sort());
    else if (type === 'zset') snapshot[key] = JSON.stringify(await redis.zrange(key, 0, -1, 'WITHSCORES'));
    else if (type === 'set') snapshot[key] = JSON.stringify((await redis.smembers(key)).sort());
    else snapshot[key] = `<${type}>`;
  }
  return snapshot;
}

export interface PartitionProgress {
  readonly partition: number;
  /** The id of the partition's last log entry, or null when it is empty. */
  readonly tail: string | null;
  readonly checkpoint: string | null;
}

export async function partitionProgress(
  redis: RedisClient,
  keys: Keys,
  projection: Projection<unknown> = fantasyTeamProjection,
): Promise<PartitionProgress[]> {
  return Promise.all(
    Array.from({ length: LOG_PARTITIONS }, async (_, partition) => {
      const [last] = await redis.xrevrange(keys.logPartition(partition), '+', '-', 'COUNT', 1);
      const checkpoint = await redis.get(projection.checkpointKey(keys, partition));
      return { partition, tail: last?.[0] ?? null, checkpoint };
    }),
  );
}

/**
 * True when, for each of `projections`, every partition's checkpoint is its log's last entry id
 * (empty partitions count).
 */
export async function caughtUp(
  redis: RedisClient,
  keys: Keys,
  projections: readonly Projection<unknown>[] = [fantasyTeamProjection],
): Promise<boolean> {
  for (const projection of projections) {
    const progress = await partitionProgress(redis, keys, projection);
    if (!progress.every(({ tail, checkpoint }) => tail === null || checkpoint === tail)) return false;
  }
  return true;
}

/**
 * The document the write side implies for a team: its record's folded state with its id and
 * version. Independent of the projector, so a projector that skipped or doubled an event differs.
 */
export async function viewFromRecord(store: EventStore, teamId: string): Promise<FantasyTeamView | null> {
  const { version, state } = await store.loadRecord(TEAM, teamId, fantasyTeamDecider.initialState);
  if (state === null) return null;
  return { id: teamId.toLowerCase(), ...state, version };
}

/**
 * The documents of `teamIds` as stored (parsed), or null where there is none. One GET each: the
 * teams lie in different partitions, hence slots, and a cluster refuses an MGET across slots.
 */
export async function storedViews(redis: RedisClient, keys: Keys, teamIds: readonly string[]) {
  const values = await Promise.all(
    teamIds.map((id) => redis.get(keys.projectionDocument(fantasyTeamProjection.name, id))),
  );
  return values.map((value) => (value === null ? null : (JSON.parse(value) as FantasyTeamView)));
}

/** A team's stream length (its version as the event store counts it). */
export function streamLength(redis: RedisClient, keys: Keys, teamId: string): Promise<number> {
  return redis.xlen(keys.aggregateStream(TEAM, teamId));
}
