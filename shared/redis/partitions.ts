/**
 * The global event log is split into a fixed number of partitions, and every key that belongs to
 * one aggregate carries its partition's hash tag (`{p7}`). On Redis Cluster that puts an
 * aggregate's stream, record, lock and its log partition in one slot, so one script can append to
 * all of them atomically. Changing the count re-homes every aggregate: it is fixed on purpose.
 */
export const LOG_PARTITIONS = 16;

/** FNV-1a over the lower-cased id: cheap, stable across processes and versions. */
export function partitionOf(aggregateId: string): number {
  let hash = 0x811c9dc5;
  const text = aggregateId.toLowerCase();
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash % LOG_PARTITIONS;
}

export function partitionTag(partition: number): string {
  return `{p${partition}}`;
}
