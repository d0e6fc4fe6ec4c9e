import type { EventEnvelope } from '../event-store/envelope';

/**
 * A read model kept from the global log: one JSON document per aggregate, evolved by a pure
 * function. Projections never read each other and never write events.
 */
export interface Projection<Doc> {
  /** Part of every key of the projection: `fantasy-team`. */
  readonly name: string;
  /** The aggregate type whose events it reads; others are skipped (but checkpointed). */
  readonly aggregateType: string;
  /** The next document, or null to delete it. Must ignore an event it has already applied. */
  evolve(doc: Doc | null, event: EventEnvelope): Doc | null;
}
