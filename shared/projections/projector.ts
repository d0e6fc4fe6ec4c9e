import { randomUUID } from 'node:crypto';

import type { Logger } from '../logger';
import type { RedisClient } from '../redis/connections';
import type { Keys } from '../redis/keys';
import { partitionOf } from '../redis/partitions';
import { registerScripts } from '../redis/scripts';
import { WakeablePause } from '../wakeable-pause';
import { applyNextBatch, readCheckpoint } from './apply-batch';
import { ownedId, type OwnedPartition, PartitionLeases } from './partition-leases';
import type { AnyProjection } from './projection';
import { PROJECTION_SCRIPTS } from './projection.scripts';
import { encodeProjectedVersions, type ProjectedVersions } from './projection-progress';

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

/**
 * Keeps projections up to date from the global log: the loop that decides when to read which
 * partition. What a batch writes is planned in batch-plan.ts and applied in apply-batch.ts; which
 * partitions this replica works on is partition-leases.ts's business.
 */
export class Projector {
  private readonly leases: PartitionLeases;
  private running = false;
  private loopDone: Promise<void> | undefined;
  /** Owned partitions (by id) announced changed since the pass that read them began. */
  private announced = new Set<string>();
  /** Owned partitions whose last batch was full, or fenced: more is waiting there. */
  private backlog = new Set<string>();
  /** When every owned partition is read again, announced or not (a message may have been missed). */
  private fullPassAt = 0;
  private readonly pause = new WakeablePause();
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
    registerScripts(redis, PROJECTION_SCRIPTS);
    this.leases = new PartitionLeases(redis, keys, projections, randomUUID(), this.options.leaseMs);
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
        this.pause.wake();
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
    // Checked synchronously with the pause below, so stop() can never miss a sleeper.
    if (this.announced.size > 0 || !this.running) return;
    const pauseMs = this.subscriber ? Math.max(0, this.fullPassAt - Date.now()) : this.options.idleMs;
    await this.pause.for(pauseMs);
  }

  /** Finishes the batch in hand, gives the partitions back, and resolves. */
  async stop(): Promise<void> {
    this.running = false;
    this.pause.wake();
    await this.loopDone;
    await this.subscriber?.quit().catch(() => this.subscriber?.disconnect());
    await this.leases.releaseAll();
  }

  private async loop(): Promise<void> {
    let leasesCheckedAt = 0;
    while (this.running) {
      try {
        if (Date.now() - leasesCheckedAt > this.options.leaseMs / 3) {
          // Read at the next pass: entries may have waited there since its last owner stopped.
          for (const id of await this.leases.balance()) this.announced.add(id);
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
      return [...this.leases.owned.values()];
    }
    const due: OwnedPartition[] = [];
    for (const [id, owned] of this.leases.owned)
      if (announced.has(id) || this.backlog.has(id)) due.push(owned);
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
          owned.checkpoint = await readCheckpoint(this.redis, this.keys, owned.projection, owned.partition);
          backlog.add(ownedId(owned.projection, owned.partition));
          return;
        }
        owned.checkpoint = result.checkpoint;
        this.announceProgress(owned.projection, result.projected);
        if (result.entries === this.options.batchSize)
          backlog.add(ownedId(owned.projection, owned.partition));
      }),
    );
    this.backlog = backlog;
  }

  /**
   * Tells reads waiting for a version (ADR 0019) what the batch just written made visible. Not
   * awaited, and a failure only logged: the batch is written either way, and a waiter that misses
   * the announcement answers PROJECTION_BEHIND, to be retried, rather than slowing the projector.
   */
  private announceProgress(projection: AnyProjection, projected: ProjectedVersions): void {
    if (projected.size === 0) return;
    this.redis
      .publish(this.keys.projectionProgress(projection.name), encodeProjectedVersions(projected))
      .catch((error: unknown) => {
        this.logger.warn('projector progress not announced', { error: String(error) });
      });
  }

  /** For tests and metrics: how many partitions this replica works on now. */
  get ownedPartitions(): number {
    return this.leases.owned.size;
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
