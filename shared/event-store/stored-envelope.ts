import type { EventEnvelope } from './envelope';

/**
 * The field an aggregate stream entry holds its envelope in (JSON), in both stored forms: the full
 * envelope (written before ADR 0020) and the compact one.
 */
export const STREAM_EVENT_FIELD = 'event';

/**
 * An envelope as an aggregate stream stores it (ADR 0020): without what the stream already says.
 * `aggregateType` and `aggregateId` are in the stream's key and `version` is the entry id
 * (`0-<version>`), so only the event's own fields are written; an id the key does not spell as it
 * is (keys lower-case it) is kept, so every envelope reads back exactly as it was appended.
 */
export function compactEnvelopeJson(envelope: EventEnvelope): string {
  const { aggregateType: _type, aggregateId, version: _version, ...own } = envelope;
  return JSON.stringify(aggregateId === aggregateId.toLowerCase() ? own : { aggregateId, ...own });
}

/** The part of an envelope a stored entry may leave out: what its stream says. */
export interface StreamPlace {
  readonly aggregateType: string;
  /** As the stream's key spells it (lower case). */
  readonly aggregateId: string;
  readonly version: number;
}

/**
 * The envelope an aggregate stream entry holds, in either stored form: the fields it left out are
 * its stream's (`place`); one it kept (every field of a full envelope) is used as it is. Fields
 * come in the envelope's own order, as they were appended.
 */
export function envelopeFromStream(json: string, place: StreamPlace): EventEnvelope {
  const stored = JSON.parse(json) as Partial<EventEnvelope>;
  const { eventId, eventType, aggregateType, aggregateId, version, ...rest } = stored;
  return {
    eventId,
    eventType,
    aggregateType: aggregateType ?? place.aggregateType,
    aggregateId: aggregateId ?? place.aggregateId,
    version: version ?? place.version,
    ...rest,
  } as EventEnvelope;
}

/** An aggregate stream entry as XRANGE answers it: `0-<version>` and `['event', envelope JSON]`. */
export type StreamEntry = [id: string, fields: string[]];

/** The version an aggregate stream entry id (`0-<version>`) names. */
export function versionOfStreamEntry(entryId: string): number {
  return Number(entryId.slice(entryId.indexOf('-') + 1));
}

/** The envelopes of an aggregate's stream entries, in either stored form. */
export function storedEnvelopes(
  aggregateType: string,
  aggregateId: string,
  entries: readonly StreamEntry[],
): EventEnvelope[] {
  const id = aggregateId.toLowerCase();
  return entries.map(([entryId, fields]) =>
    envelopeFromStream(fields[1] ?? 'null', {
      aggregateType,
      aggregateId: id,
      version: versionOfStreamEntry(entryId),
    }),
  );
}
