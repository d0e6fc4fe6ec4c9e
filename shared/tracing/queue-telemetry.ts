import { type Context, context, INVALID_SPAN_CONTEXT, isSpanContextValid, trace } from '@opentelemetry/api';
import { SpanKind, type Telemetry } from 'bullmq';
import type * as BullMqOtel from 'bullmq-otel';

import { contextOfTraceparent, traceparentOf } from './spans';
import { tracingRequested } from './tracing';

let telemetry: Telemetry<Context> | undefined;

/**
 * BullMQ's own telemetry (`bullmq-otel`) for a queue's or worker's options, when the environment asks
 * for traces: `queue.add` writes the active context into the job, and the worker runs the job inside
 * a `process <queue>` span continuing it, so whatever the job does (its commands) joins the trace of
 * the request that queued it. Off, an empty object: nothing of `bullmq-otel` is loaded or made, and
 * BullMQ calls straight through.
 */
export function queueTelemetry(env: NodeJS.ProcessEnv = process.env): {
  readonly telemetry?: Telemetry<Context>;
} {
  if (!tracingRequested(env)) return {};
  telemetry ??= withoutUpkeepRoots();
  return { telemetry };
}

/**
 * bullmq-otel as it comes, but for two things. A job keeps only the `traceparent` of the span that
 * added it (ADR 0036): the library's context manager writes whatever the propagators carry, so a
 * caller's `tracestate` and `baggage` (kilobytes, the caller's to fill) would be stored in the job's
 * options and handed to the worker; reading, only a `traceparent` is taken, from jobs added before
 * too. And an internal span BullMQ starts outside any trace is its
 * upkeep (the stalled-job check's timer, with every check under it, an idle worker's poll, close),
 * which would be a trace that never ends beside the jobs'. Those are not recorded, nor what runs under
 * them; a job's spans (added, fetched, processed, completed) have a parent or are the producer's or
 * the consumer's.
 */
function withoutUpkeepRoots(): Telemetry<Context> {
  // Loaded only when tracing is on.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { BullMQOtel, BullMQOTelSpan } = require('bullmq-otel') as typeof BullMqOtel;
  const otel = new BullMQOtel('bullmq');
  const unrecorded = new BullMQOTelSpan(trace.wrapSpanContext(INVALID_SPAN_CONTEXT));
  const manager = otel.contextManager;
  return {
    contextManager: {
      active: (): Context => context.active(),
      with: (active: Context, fn) => manager.with(active, fn),
      getMetadata: (active: Context) => JSON.stringify({ traceparent: traceparentOf(active) }),
      fromMetadata: (active: Context, metadata: string): Context =>
        contextOfTraceparent(storedTraceparent(metadata), active) ?? active,
    },
    tracer: {
      startSpan(name, options, parent?: Context) {
        const inTrace = isSpanContextValid(
          trace.getSpanContext(parent ?? context.active()) ?? INVALID_SPAN_CONTEXT,
        );
        if (!inTrace && (options?.kind ?? SpanKind.INTERNAL) === SpanKind.INTERNAL) return unrecorded;
        return otel.tracer.startSpan(name, options, parent);
      },
    },
  };
}

/** The `traceparent` a job's telemetry metadata (JSON) holds, if it holds one. */
function storedTraceparent(metadata: string): string | undefined {
  try {
    const parsed: unknown = JSON.parse(metadata);
    const traceparent =
      typeof parsed === 'object' && parsed !== null
        ? (parsed as Record<string, unknown>).traceparent
        : undefined;
    return typeof traceparent === 'string' ? traceparent : undefined;
  } catch {
    return undefined;
  }
}
