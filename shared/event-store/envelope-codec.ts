import type { RedisClient } from '../redis/connections';
import type { Keys } from '../redis/keys';
import type { EventEnvelope } from './envelope';

/**
 * How one aggregate type's events are kept at rest when some fields must be erasable: the codec
 * seals them under a key of the aggregate's own, kept in its record (`keyField`), never in an event,
 * so dropping that key erases them from the stream and the log without rewriting either
 * (crypto-shredding). The store seals on append and opens on every read, the projector before any
 * evolve. A key that does not open an envelope (erased, or a later account's) never throws: the
 * sealed fields read as null.
 */
export interface EnvelopeCodec {
  readonly aggregateType: string;
  /** The record attachment holding the aggregate's key. */
  readonly keyField: string;
  /** A fresh random key, as the attachment stores it. */
  newKey(): string;
  /** Whether appending this event needs the key (it has fields to seal). */
  seals(envelope: EventEnvelope): boolean;
  /** The envelope as stored: its erasable fields sealed under `key`. */
  seal(envelope: EventEnvelope, key: string): EventEnvelope;
  /** Whether a stored envelope holds sealed fields (one written before sealing holds none). */
  isSealed(envelope: EventEnvelope): boolean;
  /** The envelope as written: its sealed fields opened, or null where `key` does not open them. */
  open(envelope: EventEnvelope, key: string | null): EventEnvelope;
}

/**
 * The codecs of every aggregate type that has one; the others' envelopes pass through untouched,
 * at no cost.
 */
export class EnvelopeCodecs {
  private readonly byType: ReadonlyMap<string, EnvelopeCodec>;

  constructor(codecs: readonly EnvelopeCodec[] = []) {
    this.byType = new Map(codecs.map((codec) => [codec.aggregateType, codec]));
  }

  for(aggregateType: string): EnvelopeCodec | undefined {
    return this.byType.get(aggregateType);
  }

  /**
   * Opens every sealed envelope of `envelopes` (any aggregates, any types), reading each aggregate's
   * key once. The reads are sent together (one round trip on an auto-pipelining connection); none
   * at all when no envelope is sealed.
   */
  async open(redis: RedisClient, keys: Keys, envelopes: readonly EventEnvelope[]): Promise<EventEnvelope[]> {
    const recordKeys = new Map<string, { codec: EnvelopeCodec; recordKey: string }>();
    for (const envelope of envelopes) {
      const codec = this.byType.get(envelope.aggregateType);
      if (!codec?.isSealed(envelope)) continue;
      const recordKey = keys.aggregateRecord(envelope.aggregateType, envelope.aggregateId);
      recordKeys.set(recordKey, { codec, recordKey });
    }
    if (recordKeys.size === 0) return [...envelopes];
    const entries = [...recordKeys.values()];
    const values = await Promise.all(
      entries.map(({ codec, recordKey }) => redis.hget(recordKey, codec.keyField)),
    );
    const keyOf = new Map(entries.map(({ recordKey }, i) => [recordKey, values[i] ?? null]));
    return envelopes.map((envelope) => {
      const codec = this.byType.get(envelope.aggregateType);
      if (!codec?.isSealed(envelope)) return envelope;
      return codec.open(
        envelope,
        keyOf.get(keys.aggregateRecord(envelope.aggregateType, envelope.aggregateId)) ?? null,
      );
    });
  }
}
