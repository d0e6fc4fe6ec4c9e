import type { Request } from 'express';

import { type FieldErrors, validationError } from '../../shared/errors';
import { decodePosition, type EntryId } from '../../shared/event-stream/log-position';
import { isPublicEventType, PUBLIC_EVENT_TYPES } from '../../shared/public-events/event-catalogue';

/** Where a stream starts: the log's beginning, its end now, or just after a position. */
export type StreamStart =
  | { readonly kind: 'beginning' }
  | { readonly kind: 'now' }
  | {
      readonly kind: 'position';
      readonly position: readonly EntryId[];
      /** Where the position came from: the parameter a refusal names. */
      readonly field: 'from' | typeof LAST_EVENT_ID_HEADER;
    };

export interface EventStreamRequest {
  readonly start: StreamStart;
  /** The event types asked for; undefined: every type. */
  readonly types: ReadonlySet<string> | undefined;
}

/** The query parameters GET /api/events reads; any other is refused. */
export const EVENT_STREAM_PARAMETERS = ['types', 'from'] as const;
export const LAST_EVENT_ID_HEADER = 'Last-Event-ID';
/** `types` longer than every known type together is not a list of known types. */
const MAX_TYPES_LENGTH = PUBLIC_EVENT_TYPES.join(',').length;

export const MESSAGES = {
  notAllowed: 'is not a parameter of this endpoint (types, from).',
  once: 'must be given once, as text.',
  emptyType: 'must be a comma-separated list of event types, without empty entries.',
  unknownType: (type: string) => `'${type.slice(0, 80)}' is not a known event type.`,
  tooLong: 'is longer than the list of every known event type.',
  from: "must be 'beginning', 'now' or a position (an event's id).",
  lastEventId: "is not a position this service wrote (an event's id).",
  trimmed:
    'is older than the event log keeps (LOG_RETENTION): events after it were trimmed. Start again from=beginning (the oldest event kept) or from=now.',
} as const;

/**
 * Reads `?types=`, `?from=` and the Last-Event-ID header, strictly: anything that is not exactly
 * what the document says is a 400 validation problem naming the parameter (never a guess, never a
 * 500). Last-Event-ID, sent by a reconnecting EventSource, wins over `from`.
 */
export function parseEventStreamRequest(req: Request): EventStreamRequest {
  const errors: FieldErrors = {};
  const add = (field: string, message: string) => (errors[field] ??= []).push(message);
  const query = req.query as Record<string, unknown>;
  for (const name of Object.keys(query)) {
    if (!(EVENT_STREAM_PARAMETERS as readonly string[]).includes(name))
      add(name.slice(0, 80), MESSAGES.notAllowed);
  }

  let types: Set<string> | undefined;
  if (query.types !== undefined) {
    if (typeof query.types !== 'string') add('types', MESSAGES.once);
    else if (query.types.length > MAX_TYPES_LENGTH) add('types', MESSAGES.tooLong);
    else {
      const names = query.types.split(',').map((name) => name.trim());
      if (names.some((name) => name === '')) add('types', MESSAGES.emptyType);
      for (const name of names)
        if (name !== '' && !isPublicEventType(name)) add('types', MESSAGES.unknownType(name));
      types = new Set(names);
    }
  }

  let start: StreamStart = { kind: 'now' };
  if (query.from !== undefined) {
    if (typeof query.from !== 'string') add('from', MESSAGES.once);
    else if (query.from === 'beginning' || query.from === 'now') start = { kind: query.from };
    else {
      const position = decodePosition(query.from);
      if (position) start = { kind: 'position', position, field: 'from' };
      else add('from', MESSAGES.from);
    }
  }

  // An EventSource sends it only when it has an id; an empty one means "none" there too.
  const lastEventId = req.get(LAST_EVENT_ID_HEADER);
  if (lastEventId !== undefined && lastEventId !== '') {
    const position = decodePosition(lastEventId);
    if (position) start = { kind: 'position', position, field: LAST_EVENT_ID_HEADER };
    else add(LAST_EVENT_ID_HEADER, MESSAGES.lastEventId);
  }

  if (Object.keys(errors).length > 0) throw validationError(errors);
  return { start, types };
}
