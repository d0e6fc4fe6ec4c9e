import type { RedisClient } from '../redis/connections';
import type { Keys } from '../redis/keys';
import { LOG_PARTITIONS } from '../redis/partitions';
import { readCheckpoint } from './apply-batch';
import type { AnyProjection } from './projection';

/** A (projection, partition) pair one replica works on, and where it stands. */
export interface OwnedPartition {
  readonly projection: AnyProjection;
  readonly partition: number;
  checkpoint: string;
}

/** The id of a (projection, partition) pair, as leases and announcements name it. */
export function ownedId(projection: AnyProjection, partition: number): string {
  return `${projection.name}:${partition}`;
}

/**
 * The (projection, partition) pairs one projector replica holds. Replicas split them with leases
 * (renewed while working, balanced by the number of live replicas); a lease only spares the others
 * the same work: the checkpoint fence, not the lease, keeps a batch from landing twice.
 */
export class PartitionLeases {
  readonly owned = new Map<string, OwnedPartition>();

  constructor(
    private readonly redis: RedisClient,
    private readonly keys: Keys,
    private readonly projections: readonly AnyProjection[],
    private readonly replicaId: string,
    private readonly leaseMs: number,
  ) {}

  /**
   * Renews what it holds, gives back what is over its fair share, and takes free partitions.
   * Returns the ids of the pairs just taken: entries may have waited there since their last owner.
   */
  async balance(): Promise<string[]> {
    const { leaseMs } = this;
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
    const taken: string[] = [];
    for (const projection of this.projections) {
      for (let partition = 0; partition < LOG_PARTITIONS && this.owned.size < fairShare; partition++) {
        const id = ownedId(projection, partition);
        if (this.owned.has(id)) continue;
        const lease = this.keys.projectionLease(projection.name, partition);
        if ((await this.redis.set(lease, this.replicaId, 'PX', leaseMs, 'NX')) !== 'OK') continue;
        const checkpoint = await readCheckpoint(this.redis, this.keys, projection, partition);
        this.owned.set(id, { projection, partition, checkpoint });
        taken.push(id);
      }
    }
    return taken;
  }

  /** Leaves the member list and gives every lease back, so the others take them now, not at expiry. */
  async releaseAll(): Promise<void> {
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
}
