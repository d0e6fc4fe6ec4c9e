import {
  type Attributes,
  type Context,
  INVALID_SPAN_CONTEXT,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  type TimeInput,
  trace,
  TraceFlags,
} from '@opentelemetry/api';

/**
 * The spans no library writes: a command, the event store's scripts, and the worker's spans of a
 * stored event (projected, delivered). With tracing off no SDK is registered and each of these is a
 * flag test: no attributes are built and the API is not entered (`tracingOn`); outside a sampled
 * trace they are one more test.
 */
const tracer = trace.getTracer('fantasy-team-service');

/** A span that records nothing, handed to `fn` when tracing is off. */
const UNTRACED = trace.wrapSpanContext(INVALID_SPAN_CONTEXT);

let enabled = false;
let decideNewTrace: (name: string) => boolean = () => true;

/**
 * Called once by the SDK's start (tracing.ts): from then on the spans below are written, and
 * `newTraceSampled` asks `decide` (the SDK's sampler, before any span exists: RootSampling).
 */
export function enableSpans(decide?: (name: string) => boolean): void {
  enabled = true;
  if (decide) decideNewTrace = decide;
}

/**
 * Whether a new trace (one no caller continues), whose first span is named `name`, is sampled. When it
 * is, the next span started is that trace's first, so start it right after, with nothing between.
 * Without a decider (an SDK the service did not start), true: the span's start decides.
 */
export function newTraceSampled(name: string): boolean {
  return decideNewTrace(name);
}

/** Whether this process writes spans (an SDK was started). */
export function tracingOn(): boolean {
  return enabled;
}

/**
 * Runs `fn` inside a span named `name`, ended when it settles; an error thrown marks the span as
 * failed and is thrown on. `attributes` is called only when tracing is on.
 */
export function inSpan<T>(
  name: string,
  attributes: () => Attributes,
  fn: (span: Span) => Promise<T>,
  kind: SpanKind = SpanKind.INTERNAL,
): Promise<T> {
  if (!enabled) return fn(UNTRACED);
  // Only a child of a recording span: inside a trace that is not sampled a child would not be either
  // (the samplers are parent-based), and outside any trace the work's request, job or event was
  // decided not to be (ADR 0048: an unsampled request enters no context). The work runs as it is,
  // without a span's ids, attributes and context switch.
  const parent = trace.getActiveSpan();
  if (!parent?.isRecording()) return fn(parent ?? UNTRACED);
  return tracer.startActiveSpan(name, { attributes: attributes(), kind }, (span) => endedWith(span, fn));
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
  if (!enabled) return fn(UNTRACED);
  const attributes = (): Attributes => ({
    'db.system.name': 'redis',
    'db.operation.name': 'EVALSHA',
    'db.stored_procedure.name': name,
    'fts.aggregate.type': aggregateType,
    'fts.aggregate.id': aggregateId,
  });
  return inSpan(`EVALSHA ${name}`, attributes, fn, SpanKind.CLIENT);
}

/**
 * The W3C `traceparent` of the active span when it is sampled, for an event to carry (ADR 0031): the
 * worker's spans of the event then join the trace it was written in. Undefined when tracing is off or
 * the trace is not sampled, so an unsampled event carries nothing.
 */
export function sampledTraceparent(): string | undefined {
  if (!enabled) return undefined;
  const context = trace.getActiveSpan()?.spanContext();
  if (!context || (context.traceFlags & TraceFlags.SAMPLED) === 0) return undefined;
  return `00-${context.traceId}-${context.spanId}-0${TraceFlags.SAMPLED}`;
}

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/**
 * The W3C `traceparent` of the span `context` holds, sampled or not, and nothing else of it: no
 * `tracestate`, no baggage, which a caller writes and a stored job must not keep (ADR 0036).
 */
export function traceparentOf(context: Context): string | undefined {
  const spanContext = trace.getSpanContext(context);
  if (!spanContext || !trace.isSpanContextValid(spanContext)) return undefined;
  const flags = (spanContext.traceFlags & 0xff).toString(16).padStart(2, '0');
  return `00-${spanContext.traceId}-${spanContext.spanId}-${flags}`;
}

/**
 * The context a stored `traceparent` names, as a remote parent in `base`; undefined for anything
 * else.
 */
export function contextOfTraceparent(
  traceparent: string | undefined,
  base: Context = ROOT_CONTEXT,
): Context | undefined {
  const parts = traceparent === undefined ? null : TRACEPARENT.exec(traceparent);
  if (!parts) return undefined;
  const [, traceId = '', spanId = '', flags = '00'] = parts;
  const spanContext = { traceId, spanId, traceFlags: Number.parseInt(flags, 16), isRemote: true };
  if (!trace.isSpanContextValid(spanContext)) return undefined;
  return trace.setSpanContext(base, spanContext);
}

/**
 * A span, already over, in the trace an event was written in (`traceparent`, as the event carries
 * it): what the worker did with that event, from `startTime` to now. Nothing when tracing is off or
 * the event carries no trace.
 */
export function recordEventSpan(
  name: string,
  traceparent: string | undefined,
  startTime: TimeInput,
  attributes: () => Attributes,
  kind: SpanKind = SpanKind.CONSUMER,
): void {
  if (!enabled) return;
  const parent = contextOfTraceparent(traceparent);
  if (!parent) return;
  tracer.startSpan(name, { kind, startTime, attributes: attributes() }, parent).end();
}

/**
 * Runs `fn` inside a span of the trace an event was written in, active while it runs (so what it
 * calls, an outgoing HTTP request for one, joins that trace and carries it on). Without tracing or a
 * trace on the event, `fn` runs as it would.
 */
export function inEventSpan<T>(
  name: string,
  traceparent: string | undefined,
  attributes: () => Attributes,
  fn: (span: Span) => Promise<T>,
  kind: SpanKind = SpanKind.PRODUCER,
): Promise<T> {
  if (!enabled) return fn(UNTRACED);
  const parent = contextOfTraceparent(traceparent);
  if (!parent) return fn(UNTRACED);
  return tracer.startActiveSpan(name, { kind, attributes: attributes() }, parent, (span) =>
    endedWith(span, fn),
  );
}

/** Runs `fn` in `span` and ends it when it settles; an error thrown marks the span failed and is thrown on. */
async function endedWith<T>(span: Span, fn: (span: Span) => Promise<T>): Promise<T> {
  try {
    return await fn(span);
  } catch (error) {
    span.setStatus({ code: SpanStatusCode.ERROR, message: error instanceof Error ? error.name : 'error' });
    throw error;
  } finally {
    span.end();
  }
}
