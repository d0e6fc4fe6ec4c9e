import type { DomainEvent } from '../domain/decider';

/** Why an event was written: who asked, through which request, as part of what. */
export interface EventMetadata {
  readonly actorUserId: string;
  readonly requestId: string | null;
  readonly correlationId: string | null;
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
