import { randomUUID } from 'node:crypto';
import type { RedisClient } from '../redis/connections';

import { parseEnvelope, type EventEnvelope } from '../event-store/envelope';
import { LOG_PARTITIONS, partitionOf } from '../event-store/partitions';
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
   * With a subscriber: how often every owned partition is read (a full pass). Appends announce
   * themselves (append-events-6.lua publishes the aggregate id), so between full passes the
   * projector reads only the partitions announced; this bounds how late a missed message is seen.
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
  /** Owned partitions (by id) announced changed since the pass that read them began. */
  private announced = new Set<string>();
  /** Owned partitions whose last batch was full, or fenced: more is waiting there. */
  private backlog = new Set<string>();
  /** When every owned partition is read again, announced or not (a message may have been missed). */
  private fullPassAt = 0;
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
      // A channel per aggregate type, each message an aggregate id: together they name the
      // (projection, partition) pairs that have something new.
      const projectionsByChannel = new Map<string, AnyProjection[]>();
      for (const projection of this.projections) {
        const channel = this.keys.aggregateChanges(projection.aggregateType);
        projectionsByChannel.set(channel, [...(projectionsByChannel.get(channel) ?? []), projection]);
      }
      const channels = [...projectionsByChannel.keys()];
      this.subscriber.on('message', (channel: string, aggregateId: string) => {
        const partition = partitionOf(aggregateId);
        for (const projection of projectionsByChannel.get(channel) ?? []) {
          this.announced.add(ownedId(projection, partition));
        }
        this.wakeUp?.();
      });
      // Until subscribed (and whenever the subscription drops), the fallback pause still polls.
      this.subscriber.subscribe(...channels).catch((error: unknown) => {
        this.logger.warn('projector not subscribed to changes; polling', { error: String(error) });
      });
    }
    this.loopDone = this.loop();
  }

  /** Sleeps until a change is announced or the next full pass is due. */
  private async idle(): Promise<void> {
    // Checked synchronously with installing wakeUp below, so stop() can never miss a sleeper.
    if (this.announced.size > 0 || !this.running) return;
    const pauseMs = this.subscriber ? Math.max(0, this.fullPassAt - Date.now()) : this.options.idleMs;
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
        // Only a full batch means more is waiting. A pass that drained what it read sleeps until a
        // change concerning its projections is announced, and then reads that change's partition
        // alone: with 16 partitions and 3 projections a pass of everything was 48 reads, nearly all
        // empty. Entries of other aggregates (a user import's thousands) are caught up by the next
        // full pass, in one batch, rather than each costing a pass.
        await this.pollOnce(this.duePartitions());
        if (this.backlog.size === 0) await this.idle();
      } catch (error) {
        // Redis away or a bad entry: keep the process, retry after a pause, then read everything.
        this.logger.warn('projector pass failed', {
          error: error instanceof Error ? error.message : String(error),
        });
        this.fullPassAt = 0;
        await sleep(500);
      }
    }
  }

  /**
   * The owned partitions this pass reads: all of them when a full pass is due (always, without a
   * subscriber), else those announced since the last pass began and those with a backlog.
   * Announcements arriving from here on belong to the next pass.
   */
  private duePartitions(): OwnedPartition[] {
    const announced = this.announced;
    this.announced = new Set();
    if (!this.subscriber || Date.now() >= this.fullPassAt) {
      this.fullPassAt = Date.now() + this.options.idleFallbackMs;
      return [...this.owned.values()];
    }
    const due: OwnedPartition[] = [];
    for (const [id, owned] of this.owned) if (announced.has(id) || this.backlog.has(id)) due.push(owned);
    return due;
  }

  /**
   * Applies the next batch of each partition given, all at once: (projection, partition) pairs are
   * fenced independently, so their batches may run side by side, and their reads share one round
   * trip (the connection auto-pipelines). Notes which partitions have more waiting.
   */
  private async pollOnce(partitions: readonly OwnedPartition[]): Promise<void> {
    const backlog = new Set<string>();
    await Promise.all(
      partitions.map(async (owned) => {
        if (!this.running) return;
        const result = await applyNextBatch(
          this.redis,
          this.keys,
          owned.projection,
          owned.partition,
          owned.checkpoint,
          this.options.batchSize,
        );
        if (result === 'fenced') {
          // Another replica applied it: start again from its checkpoint.
          owned.checkpoint =
            (await this.redis.get(owned.projection.checkpointKey(this.keys, owned.partition))) ??
            NO_CHECKPOINT;
          backlog.add(ownedId(owned.projection, owned.partition));
          return;
        }
        owned.checkpoint = result.checkpoint;
        if (result.entries === this.options.batchSize)
          backlog.add(ownedId(owned.projection, owned.partition));
      }),
    );
    this.backlog = backlog;
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
        const id = ownedId(projection, partition);
        if (this.owned.has(id)) continue;
        const lease = this.keys.projectionLease(projection.name, partition);
        if ((await this.redis.set(lease, this.replicaId, 'PX', leaseMs, 'NX')) !== 'OK') continue;
        const checkpoint =
          (await this.redis.get(projection.checkpointKey(this.keys, partition))) ?? NO_CHECKPOINT;
        this.owned.set(id, { projection, partition, checkpoint });
        // Read at the next pass: entries may have waited there since its last owner stopped.
        this.announced.add(id);
      }
    }
  }

  /** For tests and metrics: how many partitions this replica works on now. */
  get ownedPartitions(): number {
    return this.owned.size;
  }
}

function ownedId(projection: AnyProjection, partition: number): string {
  return `${projection.name}:${partition}`;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
