import type { AnyProjection } from '../../shared/projections/projection';
import type { RedisClient } from '../../shared/redis/connections';
import type { Keys } from '../../shared/redis/keys';
import { LOG_PARTITIONS } from '../../shared/redis/partitions';
import { readCheckpoint } from './apply-batch';
import { NO_CHECKPOINT } from './batch-plan';

/**
 * A consumer of the log whose partitions replicas share: a projection, or the webhook dispatcher
 * (which keeps its positions per subscription, so it has no checkpoint of its own to read).
 */
export type LeasedConsumer = Pick<AnyProjection, 'name'> & Partial<Pick<AnyProjection, 'checkpointKey'>>;

/** A (consumer, partition) pair one replica works on, and where it stands. */
export interface OwnedPartition<Consumer extends LeasedConsumer = AnyProjection> {
  readonly projection: Consumer;
  readonly partition: number;
  checkpoint: string;
}

/** The id of a (consumer, partition) pair, as leases and announcements name it. */
export function ownedId(projection: LeasedConsumer, partition: number): string {
  return `${projection.name}:${partition}`;
}

/**
 * The (projection, partition) pairs one projector replica holds. Replicas split them with leases
 * (renewed while working, balanced by the number of live replicas); a lease only spares the others
 * the same work: the checkpoint fence, not the lease, keeps a batch from landing twice.
 */
export class PartitionLeases<Consumer extends LeasedConsumer = AnyProjection> {
  readonly owned = new Map<string, OwnedPartition<Consumer>>();
  /**
   * When balance() is next due (ms, Date.now()): every leaseMs/3, so a late renewal or two still
   * keeps the leases. Consumers wake for it even when idle, or an idle longer than the lease lets
   * them all lapse.
   */
  get nextBalanceAt(): number {
    return this.balanceDueAt;
  }
  private balanceDueAt = 0;

  constructor(
    private readonly redis: RedisClient,
    private readonly keys: Keys,
    private readonly projections: readonly Consumer[],
    private readonly replicaId: string,
    private readonly leaseMs: number,
    /** Where the replicas sharing these consumers beat: each kind of consumer counts its own. */
    private readonly membersKey: string = keys.projectorMembers(),
    /**
     * Resolves when no work on a pair given back is in flight any more. Its lease is kept (and
     * renewed) until then, so the replica taking it over starts where that work left off. The
     * projector balances between passes, so nothing of its own is in flight then.
     */
    private readonly settled: (pair: OwnedPartition<Consumer>) => Promise<void> = () => Promise.resolve(),
  ) {}

  /** Pairs given back whose work in flight has not ended yet: their leases, and their release. */
  private readonly leaving = new Map<string, { readonly lease: string; readonly released: Promise<void> }>();

  /**
   * Renews what it holds, gives back what is over its fair share, and takes free partitions.
   * Returns the ids of the pairs just taken: entries may have waited there since their last owner.
   */
  async balance(): Promise<string[]> {
    const { leaseMs } = this;
    const members = this.membersKey;
    const now = Date.now();
    await this.redis.zadd(members, now, this.replicaId);
    // Live replicas beat every leaseMs/3: one missed lease period means gone, like its leases.
    await this.redis.zremrangebyscore(members, '-inf', now - leaseMs);
    const replicas = Math.max(1, await this.redis.zcard(members));
    const fairShare = Math.ceil((LOG_PARTITIONS * this.projections.length) / replicas);

    // Every lease renewed (or given back) at once, and the free ones tried as many at a time as the
    // fair share lacks. One by one, a start took 128 round trips and a renewal 64, each waiting its
    // turn on a busy event loop, while the projector's loop (which balances between passes) read
    // nothing (issue 43).
    const held = [...this.owned];
    const excess = Math.max(0, held.length - fairShare);
    for (const [id, owned] of held.slice(0, excess)) this.giveBack(id, owned);
    await Promise.all([
      ...held.slice(excess).map(async ([id, owned]) => {
        const lease = this.keys.projectionLease(owned.projection.name, owned.partition);
        if ((await this.redis.renewLock(lease, this.replicaId, leaseMs)) !== 1) this.owned.delete(id);
      }),
      ...[...this.leaving.values()].map(({ lease }) => this.redis.renewLock(lease, this.replicaId, leaseMs)),
    ]);
    const free = this.projections.flatMap((projection) =>
      Array.from({ length: LOG_PARTITIONS }, (_, partition) => ({ projection, partition })).filter(
        ({ partition }) => {
          const id = ownedId(projection, partition);
          return !this.owned.has(id) && !this.leaving.has(id);
        },
      ),
    );
    const taken: string[] = [];
    for (let next = 0; next < free.length && this.owned.size < fairShare;) {
      const tried = free.slice(next, next + fairShare - this.owned.size);
      next += tried.length;
      const leased = await Promise.all(
        tried.map(async ({ projection, partition }) => {
          const lease = this.keys.projectionLease(projection.name, partition);
          if ((await this.redis.set(lease, this.replicaId, 'PX', leaseMs, 'NX')) !== 'OK') return null;
          const checkpoint = projection.checkpointKey
            ? await readCheckpoint(
                this.redis,
                this.keys,
                projection as Pick<AnyProjection, 'checkpointKey'>,
                partition,
              )
            : NO_CHECKPOINT;
          return { projection, partition, checkpoint };
        }),
      );
      for (const pair of leased) {
        if (pair === null) continue;
        const id = ownedId(pair.projection, pair.partition);
        this.owned.set(id, pair);
        taken.push(id);
      }
    }
    // Only once it went through: a balance cut short by Redis is due again at once.
    this.balanceDueAt = now + leaseMs / 3;
    return taken;
  }

  /**
   * Stops working on a pair over the fair share at once (no new work starts on it), and releases
   * its lease once the work in flight on it has ended. Were it released first, another replica
   * could read the pair's position before that work moved it, and do it again: a webhook delivered
   * twice (seen with two worker containers on a busy machine).
   */
  private giveBack(id: string, pair: OwnedPartition<Consumer>): void {
    this.owned.delete(id);
    const lease = this.keys.projectionLease(pair.projection.name, pair.partition);
    const released = this.settled(pair)
      .catch(() => undefined)
      .then(() => this.redis.releaseLock(lease, this.replicaId))
      // Not released (Redis away): the lease lapses by itself.
      .then(
        () => undefined,
        () => undefined,
      )
      .finally(() => this.leaving.delete(id));
    this.leaving.set(id, { lease, released });
  }

  /** Leaves the member list and gives every lease back, so the others take them now, not at expiry. */
  async releaseAll(): Promise<void> {
    await this.redis.zrem(this.membersKey, this.replicaId).catch(() => 0);
    await Promise.all([...this.leaving.values()].map(({ released }) => released));
    await Promise.all(
      [...this.owned.values()].map(({ projection, partition }) =>
        this.redis
          .releaseLock(this.keys.projectionLease(projection.name, partition), this.replicaId)
          .catch(() => 0),
      ),
    );
    this.owned.clear();
  }
}
