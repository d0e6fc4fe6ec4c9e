import type { EventEnvelope } from './envelope';

/**
 * The field an aggregate stream entry holds its envelope in (JSON), in every stored form: the full
 * envelope (written before ADR 0020), the compact object and the positional array.
 */
export const STREAM_EVENT_FIELD = 'event';

/**
 * An envelope as an aggregate stream stores it (ADR 0020): without what the stream's key and the
 * entry id (`0-<version>`) already say. The usual envelope is written positionally (ADR 0020 §2b):
 * `[eventId, eventType, occurredAt, data, actorUserId, requestId, correlationId(, traceId(, traceparent))]`
 * (traceId null when only a traceparent follows), with
 * `occurredAt` as epoch milliseconds when that spells the same ISO text back. Any other envelope (an
 * id the lower-cased key does not spell, fields in another order, an unknown metadata field) is
 * written as an object, so every envelope reads back exactly as it was appended.
 */
export function compactEnvelopeJson(envelope: EventEnvelope): string {
  const { aggregateType: _type, aggregateId, version: _version, ...own } = envelope;
  if (aggregateId !== aggregateId.toLowerCase()) return JSON.stringify({ aggregateId, ...own });
  return positional(own) ?? JSON.stringify(own);
}

type OwnFields = Omit<EventEnvelope, 'aggregateType' | 'aggregateId' | 'version'>;

/** The envelope's own fields, in this order, are what the positional form holds. */
const OWN_FIELDS = 'eventId,eventType,occurredAt,data,metadata';
const METADATA_FIELDS = 'actorUserId,requestId,correlationId';
/** The optional metadata fields, in the order they follow the others. */
const OPTIONAL_METADATA = ['traceId', 'traceparent'] as const;

/** The positional form of `own`, or undefined when it would not read back as the same envelope. */
function positional(own: OwnFields): string | undefined {
  const { eventId, eventType, occurredAt, data, metadata } = own;
  if (Object.keys(own).join(',') !== OWN_FIELDS || data === undefined) return undefined;
  if (typeof eventId !== 'string' || typeof eventType !== 'string' || typeof occurredAt !== 'string')
    return undefined;
  if (typeof metadata !== 'object' || metadata === null) return undefined;
  const { actorUserId, requestId, correlationId, traceId, traceparent } = metadata;
  // An optional key holding undefined is left out by JSON, as the object form would.
  const present = OPTIONAL_METADATA.filter((name) => metadata[name] !== undefined);
  const names = Object.keys(metadata)
    .filter((name) => metadata[name as keyof typeof metadata] !== undefined || !isOptional(name))
    .join(',');
  if (names !== [METADATA_FIELDS, ...present].join(',')) return undefined;
  if (typeof actorUserId !== 'string' || (requestId !== null && typeof requestId !== 'string'))
    return undefined;
  if (correlationId !== null && typeof correlationId !== 'string') return undefined;
  if (traceId !== undefined && typeof traceId !== 'string') return undefined;
  if (traceparent !== undefined && typeof traceparent !== 'string') return undefined;
  const at = Date.parse(occurredAt);
  // Only an instant whose ISO text is exactly occurredAt is stored as a number.
  const when = Number.isFinite(at) && new Date(at).toISOString() === occurredAt ? at : occurredAt;
  const values: unknown[] = [eventId, eventType, when, data, actorUserId, requestId, correlationId];
  if (traceparent !== undefined) values.push(traceId ?? null, traceparent);
  else if (traceId !== undefined) values.push(traceId);
  return JSON.stringify(values);
}

function isOptional(name: string): boolean {
  return (OPTIONAL_METADATA as readonly string[]).includes(name);
}

/** The part of an envelope a stored entry may leave out: what its stream says. */
export interface StreamPlace {
  readonly aggregateType: string;
  /** As the stream's key spells it (lower case). */
  readonly aggregateId: string;
  readonly version: number;
}

/**
 * The envelope an aggregate stream entry holds, in any stored form: positional (an array), or an
 * object whose left-out fields are its stream's (`place`) and whose kept ones (every field of an
 * envelope written before ADR 0020) are used as they are. Fields come in the envelope's own
 * order, as they were appended.
 */
export function envelopeFromStream(json: string, place: StreamPlace): EventEnvelope {
  const stored = JSON.parse(json) as Partial<EventEnvelope> | PositionalEnvelope;
  if (Array.isArray(stored)) return fromPositional(stored, place);
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

type PositionalEnvelope = [
  eventId: string,
  eventType: string,
  occurredAt: number | string,
  data: EventEnvelope['data'],
  actorUserId: string,
  requestId: string | null,
  correlationId: string | null,
  traceId?: string | null,
  traceparent?: string,
];

function fromPositional(stored: PositionalEnvelope, place: StreamPlace): EventEnvelope {
  const [eventId, eventType, occurredAt, data, actorUserId, requestId, correlationId] = stored;
  const [traceId, traceparent] = [stored[7] ?? undefined, stored[8]];
  const metadata = {
    actorUserId,
    requestId,
    correlationId,
    ...(traceId === undefined ? {} : { traceId }),
    ...(traceparent === undefined ? {} : { traceparent }),
  };
  return {
    eventId,
    eventType,
    aggregateType: place.aggregateType,
    aggregateId: place.aggregateId,
    version: place.version,
    occurredAt: typeof occurredAt === 'number' ? new Date(occurredAt).toISOString() : occurredAt,
    data,
    metadata,
  };
}

/** An aggregate stream entry as XRANGE answers it: `0-<version>` and `['event', stored envelope]`. */
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
