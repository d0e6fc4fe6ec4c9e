import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';

import type { EventEnvelope } from '../../shared/event-store/envelope';
import type { Logger } from '../../shared/logger';
import type { AnyProjection } from '../../shared/projections/projection';
import {
  encodeProjectedVersions,
  type ProjectedVersions,
} from '../../shared/projections/projection-progress';
import type { RedisClient } from '../../shared/redis/connections';
import type { Keys } from '../../shared/redis/keys';
import { partitionOf } from '../../shared/redis/partitions';
import { registerScripts } from '../../shared/redis/scripts';
import { recordEventSpan, tracingOn } from '../../shared/tracing/spans';
import { WakeablePause } from '../../shared/wakeable-pause';
import { applyNextBatch, readCheckpoint } from './apply-batch';
import { ownedId, type OwnedPartition, PartitionLeases } from './partition-leases';
import { choosePass } from './pass-choice';
import { PROJECTION_SCRIPTS } from './projection.scripts';

export interface ProjectorOptions {
  /** Log entries of the projection's type applied per script call. */
  readonly batchSize: number;
  /**
   * Log entries read per script call at most, other types' (stepped over) included. Issue 43: at
   * batchSize, a projection needed a call per 200 entries of other aggregates (an import's
   * accounts) to reach a change behind them, each call in a pass that waited for the users
   * projection's own batches of those accounts (~0.3-0.5 s a pass on 2 cores while it caught up):
   * a team change behind 1,500 account entries a partition took 2.6 s to show, and its minVersion
   * read answered PROJECTION_BEHIND. Stepping over an entry costs the script a field comparison.
   */
  readonly entriesPerRead: number;
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
  /**
   * The least time between the starts of two passes while changes keep being announced: a change
   * announced sooner waits for the rest of it, with those announced meanwhile. A change announced
   * after a quiet moment is read at once. See ADR 0006 (lag against CPU).
   */
  readonly passIntervalMs: number;
  /** Announced (projection, partition) pairs that start the next pass before passIntervalMs is up. */
  readonly passEarlyAt: number;
  /**
   * Aggregates a pass must have projected (entries of other types stepped over do not count) for
   * the next to be paced: fewer say the changes come one or two at a time (a client that waits for
   * each to be projected), which waiting would only delay.
   */
  readonly pacedFromChanges: number;
  /**
   * Pairs with a backlog (or newly owned and not read yet) a pass carries at most, beside every
   * pair announced with nothing waiting before its change (pass-choice.ts, ADR 0050). Carrying them
   * all, a pass while the users projection caught up 24,000 accounts took up to 1.2 s on 2 cores,
   * and a team change announced meanwhile waited for it to end (issue 43).
   */
  readonly backlogPairsPerPass: number;
}

export const DEFAULT_PROJECTOR_OPTIONS: ProjectorOptions = {
  batchSize: 200,
  entriesPerRead: 2_000,
  idleMs: 5,
  idleFallbackMs: 250,
  leaseMs: 5_000,
  passIntervalMs: 12,
  passEarlyAt: 32,
  pacedFromChanges: 4,
  backlogPairsPerPass: 8,
};

/** What the projector reports; Metrics implements it. */
export interface ProjectorMetrics {
  /** One pass that read at least one partition, from its start to its last batch's write. */
  recordProjectorPass(seconds: number): void;
}

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
  /**
   * Owned partitions that may have more waiting (their last batch was full or fenced, or they are
   * newly owned and not read yet), longest waiting first.
   */
  private backlog = new Set<string>();
  /** When every owned partition is read again, announced or not (a message may have been missed). */
  private fullPassAt = 0;
  private readonly pause = new WakeablePause();
  /** When the last pass began (ms, performance.now()). */
  private passStartedAt = Number.NEGATIVE_INFINITY;
  /** True while the loop waits out the pass interval: announcements then wake it only in numbers. */
  private gathering = false;
  /** Aggregates the last pass projected: pacedFromChanges or more say changes come side by side. */
  private lastPassChanges = 0;
  private readonly options: ProjectorOptions;

  constructor(
    private readonly redis: RedisClient,
    private readonly keys: Keys,
    private readonly projections: readonly AnyProjection[],
    private readonly logger: Logger,
    options: Partial<ProjectorOptions> = {},
    /** A connection of its own for change announcements; without one the projector polls. */
    private readonly subscriber?: RedisClient,
    private readonly metrics?: ProjectorMetrics,
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
        if (!this.gathering || this.announced.size >= this.options.passEarlyAt) this.pause.wake();
      });
      // Until subscribed (and whenever the subscription drops), the fallback pause still polls.
      this.subscriber.subscribe(...channels).catch((error: unknown) => {
        this.logger.warn('projector not subscribed to changes; polling', { error: String(error) });
      });
    }
    this.loopDone = this.loop();
  }

  /**
   * Sleeps until a change is announced or the next full pass is due, then lets the announcements
   * gather until the pass interval since the last pass's start is up.
   */
  private async idle(): Promise<void> {
    // Checked synchronously with the pause below, so stop() can never miss a sleeper.
    if (!this.running) return;
    if (this.announced.size === 0) {
      const untilWork = this.subscriber ? this.fullPassAt - Date.now() : this.options.idleMs;
      // A sleep longer than the lease (a long idleFallbackMs) would let every lease lapse: another
      // replica would take the partitions, or this one retake and read them all on waking.
      await this.pause.for(Math.max(0, Math.min(untilWork, this.leases.nextBalanceAt - Date.now())));
    }
    await this.gather();
  }

  /**
   * Under a steady stream of changes each pass would hold the one or two announced since the last
   * began, and pay its fixed cost (a socket write and a reply per stage, a script per partition)
   * for each. Waiting out the rest of the pass interval lets one pass carry them all. Only after a
   * pass that projected a few aggregates (pacedFromChanges): changes that come one or two at a time
   * (a client that waits for its change to be projected before the next, perhaps after one it does
   * not wait for) are read at once, as waiting would gather nothing and only delay that client.
   */
  private async gather(): Promise<void> {
    if (
      this.lastPassChanges < this.options.pacedFromChanges ||
      !this.running ||
      this.announced.size >= this.options.passEarlyAt
    )
      return;
    const waitMs = this.passStartedAt + this.options.passIntervalMs - performance.now();
    if (waitMs < 1) return;
    this.gathering = true;
    try {
      await this.pause.for(waitMs);
    } finally {
      this.gathering = false;
    }
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
    while (this.running) {
      try {
        if (Date.now() >= this.leases.nextBalanceAt) {
          // Read in turn: entries may have waited there since its last owner stopped.
          for (const id of await this.leases.balance()) this.backlog.add(id);
        }
        // Only a full batch means more is waiting. A pass that drained what it read sleeps until a
        // change concerning its projections is announced, and then reads that change's partition
        // alone: with 16 partitions and 3 projections a pass of everything was 48 reads, nearly all
        // empty. Entries of other aggregates (a user import's thousands) are caught up by the next
        // full pass, in one batch, rather than each costing a pass.
        this.passStartedAt = performance.now();
        const { due, deferred } = this.duePartitions();
        await this.pollOnce(due, deferred);
        if (due.length > 0)
          this.metrics?.recordProjectorPass((performance.now() - this.passStartedAt) / 1000);
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
   * The owned partitions this pass reads (pass-choice.ts), and the backlogged ones it leaves for a
   * later pass. A full pass is due every idleFallbackMs (always, without a subscriber).
   * Announcements arriving from here on belong to the next pass.
   */
  private duePartitions(): { due: OwnedPartition[]; deferred: readonly string[] } {
    const announced = this.announced;
    this.announced = new Set();
    const full = !this.subscriber || Date.now() >= this.fullPassAt;
    if (full) this.fullPassAt = Date.now() + this.options.idleFallbackMs;
    const owned = this.leases.owned;
    const { read, deferred } = choosePass({
      owned,
      backlog: this.backlog,
      announced,
      full,
      backlogPairsPerPass: this.options.backlogPairsPerPass,
    });
    return { due: read.flatMap((id) => owned.get(id) ?? []), deferred };
  }

  /**
   * Applies the next batch of each partition given, all at once: (projection, partition) pairs are
   * fenced independently, so their batches may run side by side, and their reads share one round
   * trip (the connection auto-pipelines). Notes which partitions have more waiting, and announces
   * what the pass made visible, once per projection.
   */
  private async pollOnce(partitions: readonly OwnedPartition[], deferred: readonly string[]): Promise<void> {
    // The pairs left waiting stay ahead of those this pass found more in.
    const backlog = new Set<string>(deferred);
    const progress = new Map<AnyProjection, Map<string, number>>();
    let changes = 0;
    // Settled, not all: a failed batch must not keep the others' progress from being announced.
    const outcomes = await Promise.allSettled(
      partitions.map(async (owned) => {
        if (!this.running) return;
        const startedAt = tracingOn() ? new Date() : undefined;
        const result = await applyNextBatch(
          this.redis,
          this.keys,
          owned.projection,
          owned.partition,
          owned.checkpoint,
          this.options.batchSize,
          undefined,
          this.options.entriesPerRead,
        );
        if (result === 'fenced') {
          // Another replica applied it: start again from its checkpoint.
          owned.checkpoint = await readCheckpoint(this.redis, this.keys, owned.projection, owned.partition);
          backlog.add(ownedId(owned.projection, owned.partition));
          return;
        }
        owned.checkpoint = result.checkpoint;
        if (startedAt) recordProjectionSpans(owned.projection, result.events, result.entries, startedAt);
        // Changes projected, not entries read: a full pass steps over many entries of other types
        // (skipped by each projection), which says nothing about changes arriving side by side.
        changes += result.projected.size;
        if (result.projected.size > 0) {
          // Partitions hold distinct aggregates: the pass's versions never overlap.
          const projected = progress.get(owned.projection) ?? new Map<string, number>();
          for (const [aggregateId, version] of result.projected) projected.set(aggregateId, version);
          progress.set(owned.projection, projected);
        }
        if (result.full) backlog.add(ownedId(owned.projection, owned.partition));
      }),
    );
    for (const [projection, projected] of progress) this.announceProgress(projection, projected);
    this.lastPassChanges = changes;
    for (const outcome of outcomes) if (outcome.status === 'rejected') throw outcome.reason;
    this.backlog = backlog;
  }

  /**
   * Tells reads waiting for a version (ADR 0019) what the pass just wrote made visible: one message
   * per projection and pass, the batches of all its partitions together (a waiter reads fewer
   * messages, the projector sends fewer). Not awaited, and a failure only logged: the batches are
   * written either way, and a waiter that misses the announcement answers PROJECTION_BEHIND, to be
   * retried, rather than slowing the projector.
   */
  private announceProgress(projection: AnyProjection, projected: ProjectedVersions): void {
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

/**
 * A span per traced event the batch applied, in the trace its command was written in (ADR 0031): from
 * the batch's start to its write, when the event became readable. Children of the command's span
 * rather than one batch span linked to each: a trace then shows, under the command, how long until
 * each projection showed it, which is what "my link took 3 seconds to show up" asks. Only sampled
 * commands' events carry a context, so an unsampled batch records nothing.
 */
function recordProjectionSpans(
  projection: AnyProjection,
  events: readonly EventEnvelope[],
  entries: number,
  startTime: Date,
): void {
  const appliedAt = Date.now();
  for (const event of events) {
    recordEventSpan(`project ${projection.name}`, event.metadata.traceparent, startTime, () => ({
      'fts.projection': projection.name,
      'fts.event.type': event.eventType,
      'fts.aggregate.type': event.aggregateType,
      'fts.aggregate.id': event.aggregateId,
      'fts.event.version': event.version,
      'fts.batch.entries': entries,
      // From the command's decision to readable in this projection.
      'fts.projection.lag_ms': appliedAt - Date.parse(event.occurredAt),
    }));
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
