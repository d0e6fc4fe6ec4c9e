import type { DomainEvent } from './decider';

/** Why an event was written: who asked, through which request, as part of what. */
export interface EventMetadata {
  readonly actorUserId: string;
  /** The requestId of the command or import body (the caller's idempotency id), or null. */
  readonly requestId: string | null;
  /**
   * Chosen by the service, never by a client: a fresh UUID per command request, the import job id
   * for an import's events (which is how an import recognises its own writes), or a fixed name
   * for the service's own writes.
   */
  readonly correlationId: string | null;
  /**
   * The HTTP request's X-Request-Id (the client's when well formed, else the ingress's own): a
   * trace id to find the request's log lines, nothing more. Absent on events written outside an
   * HTTP command.
   */
  readonly traceId?: string;
  /**
   * The W3C trace context of the command span that wrote the event, when that trace was sampled
   * (ADR 0031): the projector's and the delivery's spans of the event join that trace. Absent with
   * tracing off or unsampled.
   */
  readonly traceparent?: string;
}

/** An event as stored: in the aggregate's stream and in the global log, as one JSON field. */
export interface EventEnvelope<Event extends DomainEvent = DomainEvent> {
  readonly eventId: string;
  readonly eventType: Event['type'];
  readonly aggregateType: string;
  readonly aggregateId: string;
  /** 1 for the aggregate's first event. */
  readonly version: number;
  /** ISO 8601, UTC. */
  readonly occurredAt: string;
  readonly data: Event['data'];
  readonly metadata: EventMetadata;
}

export function parseEnvelope(json: string): EventEnvelope {
  return JSON.parse(json) as EventEnvelope;
}
