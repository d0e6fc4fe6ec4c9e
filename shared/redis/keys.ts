import { partitionOf, partitionTag } from '../event-store/partitions';

/**
 * Every Redis key the service uses is built here and nowhere else, so the key layout (and its
 * Redis Cluster hash tags) can be read in one place. `prefix` separates deployments and test runs.
 *
 * Keys of one aggregate share its partition's hash tag, so a script touching the stream, the
 * record, the lock and the log partition stays in one cluster slot.
 */
export function createKeys(prefix: string) {
  const aggregate = (kind: string) => (aggregateType: string, aggregateId: string) =>
    `${prefix}${partitionTag(partitionOf(aggregateId))}:${kind}:${aggregateType}:${aggregateId.toLowerCase()}`;

  return Object.freeze({
    prefix,
    /** The aggregate's events, one entry per version (entry id `0-<version>`), never trimmed. */
    aggregateStream: aggregate('stream'),
    /** The aggregate's version, folded state and private attachments, written with each append. */
    aggregateRecord: aggregate('record'),
    /** Pub/sub channel where every append announces the changed aggregate's id. */
    aggregateChanges: (aggregateType: string) => `${prefix}changes:${aggregateType}`,
    /** Serialises command handling on one aggregate across every process. */
    aggregateLock: aggregate('lock'),
    /** One partition of the global event log that projectors consume. */
    logPartition: (partition: number) => `${prefix}${partitionTag(partition)}:log`,
    /** A projection's document for one aggregate, in the aggregate's partition. */
    projectionDocument: (projection: string, aggregateId: string) =>
      `${prefix}${partitionTag(partitionOf(aggregateId))}:projection:${projection}:${aggregateId.toLowerCase()}`,
    /** Pattern of every document of a projection in one partition (for rebuilds). */
    projectionDocumentPattern: (projection: string, partition: number) =>
      `${prefix}${partitionTag(partition)}:projection:${projection}:*`,
    /** The last log entry id a projection applied from one partition. */
    projectionCheckpoint: (projection: string, partition: number) =>
      `${prefix}${partitionTag(partition)}:checkpoint:${projection}`,
    /** Live projector replicas (sorted set: replica id -> last heartbeat), for balancing leases. */
    projectorMembers: () => `${prefix}projectors:members`,
    /** Which projector replica works on a partition of a projection now. */
    projectionLease: (projection: string, partition: number) =>
      `${prefix}${partitionTag(partition)}:lease:${projection}`,
    /**
     * BullMQ's prefix for the import queue. The hash tag puts every key of the queue (and the
     * inline claim below) in one cluster slot, as BullMQ's scripts require.
     */
    importQueuePrefix: () => `${prefix}{imports}`,
    /** Held while a High import runs inline in an ingress, so two never do at once. */
    importInlineClaim: () => `${prefix}{imports}:inline-claim`,
    /** One import's status and result, queryable after BullMQ has dropped the job. */
    importResult: (importJobId: string) => `${prefix}import:{${importJobId.toLowerCase()}}:result`,
    /** Its progress while it runs, apart from the record so a late write cannot undo a final one. */
    importProgress: (importJobId: string) => `${prefix}import:{${importJobId.toLowerCase()}}:progress`,
    /** The HS256 secret generated once when JWT_SECRET is unset, so every replica signs alike. */
    generatedJwtSecret: () => `${prefix}auth:jwt-secret`,
    /** The first answer to a command request id, replayed for 24 h (single key, no hash tag needed). */
    commandResponse: (requestId: string) => `${prefix}idempotency:command:${requestId.toLowerCase()}`,
    /** Failed sign-in counters (the throttle), by account and by client address. */
    authFailuresPrefix: () => `${prefix}auth:failures`,
  });
}

export type Keys = ReturnType<typeof createKeys>;
