/** Why an event stream ended, as the metrics count it. */
export type StreamEnd = 'client' | 'slow' | 'shutdown' | 'error' | 'revoked';

/** What the event streams report; shared/metrics implements it. */
export interface EventStreamMetrics {
  eventStreamOpened(): void;
  eventStreamClosed(reason: StreamEnd): void;
  eventStreamEventsSent(count: number): void;
}
