import { type Attributes, type Span, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';

/**
 * The spans no library writes: a command, and the event store's scripts. Without a registered SDK
 * (tracing off) the API's tracer is a no-op and these cost a call each.
 */
const tracer = trace.getTracer('fantasy-team-service');

/**
 * Runs `fn` inside a span named `name`, ended when it settles; an error thrown marks the span as
 * failed and is thrown on.
 */
export function inSpan<T>(
  name: string,
  attributes: Attributes,
  fn: (span: Span) => Promise<T>,
  kind: SpanKind = SpanKind.INTERNAL,
): Promise<T> {
  return tracer.startActiveSpan(name, { attributes, kind }, async (span) => {
    try {
      return await fn(span);
    } catch (error) {
      span.setStatus({ code: SpanStatusCode.ERROR, message: error instanceof Error ? error.name : 'error' });
      throw error;
    } finally {
      span.end();
    }
  });
}

/**
 * Runs one event-store script (`name`, as registered) inside a client span of its own: one span per
 * script, never one per Redis call.
 */
export function inScriptSpan<T>(
  name: string,
  aggregateType: string,
  aggregateId: string,
  fn: (span: Span) => Promise<T>,
): Promise<T> {
  const attributes: Attributes = {
    'db.system.name': 'redis',
    'db.operation.name': 'EVALSHA',
    'db.stored_procedure.name': name,
    'fts.aggregate.type': aggregateType,
    'fts.aggregate.id': aggregateId,
  };
  return inSpan(`EVALSHA ${name}`, attributes, fn, SpanKind.CLIENT);
}
