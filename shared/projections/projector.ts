import { randomUUID } from 'node:crypto';
import type { RedisClient } from '../redis/connections';

import { parseEnvelope, type EventEnvelope } from '../event-store/envelope';
import { LOG_PARTITIONS } from '../event-store/partitions';
import type { Logger } from '../logger';
import type { Keys } from '../redis/keys';
import { registerScripts } from '../redis/scripts';
import { BatchWrites } from './batch-writes';
import type { AnyProjection } from './projection';

const NO_CHECKPOINT = '0-0';

export interface ProjectorOptions {
  /** Log entries applied per script call. */
  readonly batchSize: number;
  /** Pause between polls when every owned partition is caught up and no change is announced. */
  readonly idleMs: number;
  /**
   * With a subscriber: the longest idle pause. Appends announce themselves (append-events-6.lua
   * publishes), so an idle projector sleeps until one concerns it; this only bounds a missed message.
   */
  readonly idleFallbackMs: number;
  /** How long a partition stays with a replica that stops renewing it. */
  readonly leaseMs: number;
}

export const DEFAULT_PROJECTOR_OPTIONS: ProjectorOptions = {
  batchSize: 200,
  idleMs: 5,
  idleFallbackMs: 250,
  leaseMs: 5_000,
};

/** The outcome of applying one batch: how many entries, or the fence saying someone else did. */
export type BatchResult = { readonly entries: number; readonly checkpoint: string } | 'fenced';

/**
 * Applies the next batch of `projection` from one log partition after `checkpoint`: reads the
 * entries and the documents they touch, evolves the documents, and writes them, their index
 * entries and the new checkpoint in one fenced script.
 */
export async function applyNextBatch(
  redis: RedisClient,
  keys: Keys,
  projection: AnyProjection,
  partition: number,
  checkpoint: string,
  batchSize: number,
): Promise<BatchResult> {
  const start = checkpoint === NO_CHECKPOINT ? '-' : `(${checkpoint}`;
  const entries = await redis.xrange(keys.logPartition(partition), start, '+', 'COUNT', batchSize);
  const last = entries.at(-1);
  if (!last) return { entries: 0, checkpoint };
  // Envelopes are JSON.stringify'd, so an event of the projected type contains this text; the
  // others (most of a partition, for most projections) are skipped without being parsed.
  const marker = `"aggregateType":${JSON.stringify(projection.aggregateType)}`;
  const events: EventEnvelope[] = entries
    .filter(([, fields]) => fields[1]?.includes(marker))
    .map(([, fields]) => parseEnvelope(fields[1] ?? 'null'))
    .filter((event) => event.aggregateType === projection.aggregateType);
  const docKeys = [...new Set(events.map((event) => projection.documentKey(keys, event.aggregateId)))];
  const stored = docKeys.length ? await redis.mget(...docKeys) : [];
  const before = new Map(docKeys.map((key, i) => [key, stored[i] ?? null]));
  const docs = new Map<string, unknown>(
    docKeys.map((key, i) => [key, stored[i] ? (JSON.parse(stored[i]) as unknown) : null]),
  );
  for (const event of events) {
    const key = projection.documentKey(keys, event.aggregateId);
    docs.set(key, projection.evolve(docs.get(key) ?? null, event));
  }

  const checkpointKey = projection.checkpointKey(keys, partition);
  const writes = new BatchWrites(checkpointKey, keys.projectionAppliedCount(checkpointKey));
  for (const key of docKeys) {
    const previous = before.get(key) ?? null;
    const doc = docs.get(key) ?? null;
    const next = doc === null ? null : JSON.stringify(doc);
    if (previous === next) continue;
    writes.document(key, next);
    if (projection.indexEntries) {
      const entriesOf = (json: string | null) =>
        json === null ? [] : (projection.indexEntries?.(JSON.parse(json) as unknown, keys) ?? []);
      writes.indexes(entriesOf(previous), entriesOf(next));
    }
  }
  const written = await redis.applyProjectionBatch(
    ...writes.scriptArguments(checkpoint, last[0], entries.length),
  );
  return written < 0 ? 'fenced' : { entries: entries.length, checkpoint: last[0] };
}

interface OwnedPartition {
  readonly projection: AnyProjection;
  readonly partition: number;
  checkpoint: string;
}

/**
 * Keeps projections up to date from the global log. Replicas split the partitions between them
 * with leases (renewed while working, balanced by the number of live replicas); the checkpoint
 * fence makes a batch that two replicas race on land once.
 */
export class Projector {
  private readonly replicaId = randomUUID();
  private readonly owned = new Map<string, OwnedPartition>();
  private running = false;
  private loopDone: Promise<void> | undefined;
  /** Set by an announced change since the last pass began; a pass that saw nothing then runs again. */
  private changed = false;
  private wakeUp: (() => void) | undefined;
  private readonly options: ProjectorOptions;

  constructor(
    private readonly redis: RedisClient,
    private readonly keys: Keys,
    private readonly projections: readonly AnyProjection[],
    private readonly logger: Logger,
    options: Partial<ProjectorOptions> = {},
    /** A connection of its own for change announcements; without one the projector polls. */
    private readonly subscriber?: RedisClient,
  ) {
    this.options = { ...DEFAULT_PROJECTOR_OPTIONS, ...options };
    registerScripts(redis);
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    if (this.subscriber) {
      const channels = [...new Set(this.projections.map((p) => this.keys.aggregateChanges(p.aggregateType)))];
      this.subscriber.on('message', () => this.wake());
      // Until subscribed (and whenever the subscription drops), the fallback pause still polls.
      this.subscriber.subscribe(...channels).catch((error: unknown) => {
        this.logger.warn('projector not subscribed to changes; polling', { error: String(error) });
      });
    }
    this.loopDone = this.loop();
  }

  private wake(): void {
    this.changed = true;
    this.wakeUp?.();
  }

  /** Sleeps until a change is announced or the pause runs out. */
  private async idle(): Promise<void> {
    // Checked synchronously with installing wakeUp below, so stop() can never miss a sleeper.
    if (this.changed || !this.running) return;
    const pauseMs = this.subscriber ? this.options.idleFallbackMs : this.options.idleMs;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, pauseMs);
      this.wakeUp = () => {
        clearTimeout(timer);
        resolve();
      };
    });
    this.wakeUp = undefined;
  }

  /** Finishes the batch in hand, gives the partitions back, and resolves. */
  async stop(): Promise<void> {
    this.running = false;
    this.wakeUp?.();
    await this.loopDone;
    await this.subscriber?.quit().catch(() => this.subscriber?.disconnect());
    // Leave the member list at once, so the others take our share now rather than after expiry.
    await this.redis.zrem(this.keys.projectorMembers(), this.replicaId).catch(() => 0);
    await Promise.all(
      [...this.owned.values()].map(({ projection, partition }) =>
        this.redis
          .releaseLock(this.keys.projectionLease(projection.name, partition), this.replicaId)
          .catch(() => 0),
      ),
    );
    this.owned.clear();
  }

  private async loop(): Promise<void> {
    let leasesCheckedAt = 0;
    while (this.running) {
      try {
        if (Date.now() - leasesCheckedAt > this.options.leaseMs / 3) {
          await this.balanceLeases();
          leasesCheckedAt = Date.now();
        }
        this.changed = false;
        // Only a full batch means more is waiting. A pass that drained every partition sleeps until
        // a change concerning its projections is announced: entries of other aggregates (a user
        // import's thousands) are then caught up a fallback pause later, in one batch, rather than
        // each costing a pass of every partition.
        const backlog = await this.pollOnce();
        if (!backlog) await this.idle();
      } catch (error) {
        // Redis away or a bad entry: keep the process, retry after a pause.
        this.logger.warn('projector pass failed', {
          error: error instanceof Error ? error.message : String(error),
        });
        await sleep(500);
      }
    }
  }

  /**
   * One pass over every owned partition, all at once: (projection, partition) pairs are fenced
   * independently, so their batches may run side by side, and the reads of a caught-up pass then
   * share one round trip instead of costing one each. Returns whether some partition has more
   * entries than one batch took.
   */
  private async pollOnce(): Promise<boolean> {
    const backlog = await Promise.all(
      [...this.owned.values()].map(async (owned) => {
        if (!this.running) return false;
        const result = await applyNextBatch(
          this.redis,
          this.keys,
          owned.projection,
          owned.partition,
          owned.checkpoint,
          this.options.batchSize,
        );
        if (result === 'fenced') {
          owned.checkpoint =
            (await this.redis.get(owned.projection.checkpointKey(this.keys, owned.partition))) ??
            NO_CHECKPOINT;
          return false;
        }
        owned.checkpoint = result.checkpoint;
        return result.entries === this.options.batchSize;
      }),
    );
    return backlog.includes(true);
  }

  /** Renews what it holds, gives back what is over its fair share, and takes free partitions. */
  private async balanceLeases(): Promise<void> {
    const { leaseMs } = this.options;
    const members = this.keys.projectorMembers();
    const now = Date.now();
    await this.redis.zadd(members, now, this.replicaId);
    // Live replicas beat every leaseMs/3: one missed lease period means gone, like its leases.
    await this.redis.zremrangebyscore(members, '-inf', now - leaseMs);
    const replicas = Math.max(1, await this.redis.zcard(members));
    const fairShare = Math.ceil((LOG_PARTITIONS * this.projections.length) / replicas);

    for (const [id, owned] of this.owned) {
      const lease = this.keys.projectionLease(owned.projection.name, owned.partition);
      const kept =
        this.owned.size <= fairShare && (await this.redis.renewLock(lease, this.replicaId, leaseMs)) === 1;
      if (!kept) {
        if (this.owned.size > fairShare) await this.redis.releaseLock(lease, this.replicaId);
        this.owned.delete(id);
      }
    }
    for (const projection of this.projections) {
      for (let partition = 0; partition < LOG_PARTITIONS && this.owned.size < fairShare; partition++) {
        const id = `${projection.name}:${partition}`;
        if (this.owned.has(id)) continue;
        const lease = this.keys.projectionLease(projection.name, partition);
        if ((await this.redis.set(lease, this.replicaId, 'PX', leaseMs, 'NX')) !== 'OK') continue;
        const checkpoint =
          (await this.redis.get(projection.checkpointKey(this.keys, partition))) ?? NO_CHECKPOINT;
        this.owned.set(id, { projection, partition, checkpoint });
      }
    }
  }

  /** For tests and metrics: how many partitions this replica works on now. */
  get ownedPartitions(): number {
    return this.owned.size;
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
