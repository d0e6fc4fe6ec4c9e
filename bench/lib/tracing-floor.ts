import { context, type Span, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { ParentBasedSampler, TraceIdRatioBasedSampler, TracerProvider } from '@opentelemetry/sdk-trace';

import { enableSpans, inScriptSpan, inSpan, sampledTraceparent } from '../../shared/tracing/spans';

/**
 * Two figures a service run cannot resolve (its rounds scatter by more than they are), measured in
 * this process instead, in nanoseconds:
 * - what tracing off adds to a command: the command span, two script spans and the event's trace
 *   context as the command path calls them, against calling the work directly;
 * - the least an OpenTelemetry SDK does for an unsampled request: one span started and ended under
 *   a 1% parent-based sampler, active (AsyncLocalStorage) while the request's work runs, with no
 *   instrumentation, attribute or export at all.
 */

const ITERATIONS = 300_000;
const ROUNDS = 5;

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
}

/** Nanoseconds per call of `once`, the median of ROUNDS runs of ITERATIONS calls (after a warm-up run). */
async function nanosPer(once: () => Promise<unknown>): Promise<number> {
  const run = async () => {
    const started = process.hrtime.bigint();
    for (let i = 0; i < ITERATIONS; i += 1) await once();
    return Number(process.hrtime.bigint() - started) / ITERATIONS;
  };
  await run();
  const rounds: number[] = [];
  for (let round = 0; round < ROUNDS; round += 1) rounds.push(await run());
  return median(rounds);
}

const work = (_span?: Span) => Promise.resolve(1);

/** A command's spans as `CommandHandler.handle` and the event store call them. */
function tracedCommand(): Promise<unknown> {
  return inSpan(
    'command LinkFantasyTeam',
    () => ({ 'fts.command.type': 'LinkFantasyTeam', 'fts.aggregate.id': 'a' }),
    async () => {
      await inScriptSpan('lockAndLoad', 'fantasy-team', 'a', work);
      sampledTraceparent();
      return inScriptSpan('appendEvents', 'fantasy-team', 'a', work);
    },
  );
}

async function bareCommand(): Promise<unknown> {
  await work();
  return work();
}

export interface TracingFloor {
  /** ns per command that tracing off adds (spans as no-ops), over the bare calls. */
  readonly offAddedPerCommand: number;
  /** ns per request for one unsampled span, active while the request runs, under a 1% sampler. */
  readonly unsampledSpanPerRequest: number;
}

/** Measures both; registers an SDK in this process, so it runs last. */
export async function measureTracingFloor(): Promise<TracingFloor> {
  const offAddedPerCommand = (await nanosPer(tracedCommand)) - (await nanosPer(bareCommand));

  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  trace.setGlobalTracerProvider(
    new TracerProvider({
      sampler: new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(0.01) }),
    }),
  );
  enableSpans();
  const tracer = trace.getTracer('floor');
  const request = () => tracer.startActiveSpan('POST', (span) => work(span).finally(() => span.end()));
  const unsampledSpanPerRequest = (await nanosPer(request)) - (await nanosPer(work));
  return { offAddedPerCommand, unsampledSpanPerRequest };
}
