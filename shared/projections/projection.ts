import type { EventEnvelope } from '../event-store/envelope';
import type { Keys } from '../redis/keys';

/**
 * A lookup entry a document implies: a field of a hash, a member of a sorted set or of a set.
 * The projector keeps entries in step with their document (adds what appeared, removes what went).
 */
export type IndexEntry =
  | { readonly kind: 'hash'; readonly key: string; readonly field: string; readonly value: string }
  | { readonly kind: 'zset'; readonly key: string; readonly member: string; readonly score: number }
  | { readonly kind: 'set'; readonly key: string; readonly member: string };

/**
 * A read model kept from the global log: one JSON document per aggregate, evolved by a pure
 * function, plus the index entries each document implies. Projections never read each other and
 * never write events. A batch writes the partition's checkpoint, the documents and their index
 * entries in one script, so on a cluster they share one hash tag: documents in their aggregate's
 * partition (the fantasy team), or every key under one tag of its own (the sport projections, whose
 * indexes span all players).
 */
export interface Projection<Doc> {
  /** Part of every key of the projection: `fantasy-team`. */
  readonly name: string;
  /** The aggregate type whose events it reads; others are skipped (but checkpointed). */
  readonly aggregateType: string;
  /** The next document, or null to delete it. Must ignore an event it has already applied. */
  evolve(doc: Doc | null, event: EventEnvelope): Doc | null;
  /** Where it records the last log entry applied from one partition. */
  checkpointKey(keys: Keys, partition: number): string;
  documentKey(keys: Keys, aggregateId: string): string;
  /**
   * Set by a projection keeping its documents in their aggregate's partition: what every document
   * key of one partition starts with, the lower-cased aggregate id following (so documentKey must
   * be exactly that). The projector then reads a batch's documents in the script that reads its
   * entries and events (read-projection-batch-1.lua), in the same round trip.
   */
  documentsIn?(keys: Keys, partition: number): string;
  /** Glob patterns of every key it writes (checkpoints included), for a rebuild. */
  keyPatterns(keys: Keys): readonly string[];
  /** The index entries a document implies; none when absent. */
  indexEntries?(doc: Doc, keys: Keys): readonly IndexEntry[];
}

export type AnyProjection = Projection<unknown>;
