import { ROOT_CONTEXT, SpanKind } from '@opentelemetry/api';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  type IdGenerator,
  ParentBasedSampler,
  RandomIdGenerator,
  type Sampler,
  SamplingDecision,
  TraceIdRatioBasedSampler,
} from '@opentelemetry/sdk-trace';

/** A sampler, and the share of new traces (no parent) it keeps. */
export interface ConfiguredSampler {
  readonly sampler: Sampler;
  /** 1 for always on, 0 for always off, the ratio for a trace-id ratio. */
  readonly newTraceRatio: number;
}

/**
 * The sampler `OTEL_TRACES_SAMPLER` and `OTEL_TRACES_SAMPLER_ARG` name, built as the SDK builds it from
 * them (the same six names; unset or unknown, `parentbased_always_on`; a ratio that is blank or outside
 * 0..1, 1), so that the service can decide a new trace before any span exists (`RootSampling`).
 */
export function samplerFromEnv(env: NodeJS.ProcessEnv): ConfiguredSampler {
  const value = env.OTEL_TRACES_SAMPLER_ARG?.trim() ? Number(env.OTEL_TRACES_SAMPLER_ARG) : Number.NaN;
  const ratio = value >= 0 && value <= 1 ? value : 1;
  switch (env.OTEL_TRACES_SAMPLER?.trim()) {
    case 'always_on':
      return { sampler: new AlwaysOnSampler(), newTraceRatio: 1 };
    case 'always_off':
      return { sampler: new AlwaysOffSampler(), newTraceRatio: 0 };
    case 'traceidratio':
      return { sampler: new TraceIdRatioBasedSampler(ratio), newTraceRatio: ratio };
    case 'parentbased_always_off':
      return { sampler: new ParentBasedSampler({ root: new AlwaysOffSampler() }), newTraceRatio: 0 };
    case 'parentbased_traceidratio':
      return {
        sampler: new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(ratio) }),
        newTraceRatio: ratio,
      };
    default:
      return { sampler: new ParentBasedSampler({ root: new AlwaysOnSampler() }), newTraceRatio: 1 };
  }
}

/** Trace ids drawn for one kept new trace before giving up on it (at 1%, 100 on average). */
const MAX_DRAWS = 1_000_000;

/**
 * Decides a new trace (a request with no caller context) before any span is started, and for 99 in
 * 100 at 1% with one random draw and nothing else (ADR 0048: the SDK's `startSpan`, with its ids,
 * span limits, metrics and a non-recording span, costs more than the rest of the decision). A draw
 * under the ratio keeps the trace: then trace ids are drawn until the SDK's own sampler keeps one, and
 * the next trace id the SDK asks for is that one, so the span started next begins it, and the sampler,
 * deciding again on it, agrees (each sampler `samplerFromEnv` builds decides on the trace id alone).
 * Kept traces are as many (the ratio) and their ids as random as the sampler's own.
 */
export class RootSampling implements IdGenerator {
  private readonly ids = new RandomIdGenerator();
  private decided: string | undefined;
  readonly sampler: Sampler;
  private readonly ratio: number;

  /** `random` draws in [0, 1): Math.random, or a seeded generator in a test. */
  constructor(
    configured: ConfiguredSampler,
    private readonly random: () => number = Math.random,
  ) {
    this.sampler = configured.sampler;
    this.ratio = configured.newTraceRatio;
  }

  /** Whether a new trace named `name` is sampled; when it is, the next span started begins it. */
  sampled(name: string): boolean {
    if (this.ratio === 0 || this.random() >= this.ratio) return false;
    for (let draw = 0; draw < MAX_DRAWS; draw += 1) {
      const traceId = this.ids.generateTraceId();
      const { decision } = this.sampler.shouldSample(ROOT_CONTEXT, traceId, name, SpanKind.SERVER, {}, []);
      if (decision === SamplingDecision.NOT_RECORD) continue;
      this.decided = traceId;
      return true;
    }
    return false;
  }

  generateTraceId(): string {
    const traceId = this.decided ?? this.ids.generateTraceId();
    this.decided = undefined;
    return traceId;
  }

  generateSpanId(): string {
    return this.ids.generateSpanId();
  }
}
