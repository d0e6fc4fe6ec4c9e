import { defaultResource, resourceFromAttributes } from '@opentelemetry/resources';
import { NodeSDK } from '@opentelemetry/sdk-node';
import { ATTR_SERVICE_NAME } from '@opentelemetry/semantic-conventions';

import { RootSampling, samplerFromEnv } from './root-sampling';

/** The process a resource names: its `service.name` is `fantasy-team-service-<role>`. */
export type TracedProcess = 'ingress' | 'worker';

/**
 * The OpenTelemetry SDK as this service runs it, loaded only when tracing is on (tracing.ts). Every
 * choice the standard variables make stays theirs: the exporter and its protocol, the endpoint, the
 * sampler (parent-based by default), the batch processor's `OTEL_BSP_*`, the propagators, and
 * `OTEL_SERVICE_NAME` / `OTEL_RESOURCE_ATTRIBUTES` over the default name below. Traces only: metrics
 * stay on /metrics and logs on stdout, where the logger adds `trace_id` and `span_id` (shared/logger.ts).
 *
 * No instrumentation (ADR 0048): the http and Express ones did a request's tracing work before the
 * sampler decided, so that 1% cost about what 100% does, and any of them hooks the module loader. The
 * ingress writes its server span itself (ingress/http/server-span.ts), the webhook dispatcher its
 * client span, BullMQ its own through bullmq-otel, and the logger the trace ids of a line.
 */
export function startSdk(role: TracedProcess): {
  readonly sdk: NodeSDK;
  /** Whether a new trace is sampled, asked before its first span (RootSampling). */
  readonly newTraceSampled: (name: string) => boolean;
} {
  // The sampler the SDK would build from OTEL_TRACES_SAMPLER, built here so that a new trace can be
  // decided before any span is started (ADR 0048).
  const roots = new RootSampling(samplerFromEnv(process.env));
  const sdk = new NodeSDK({
    sampler: roots.sampler,
    idGenerator: roots,
    // The detectors (environment, process, host, service.instance.id) are merged over this.
    resource: defaultResource().merge(
      resourceFromAttributes({ [ATTR_SERVICE_NAME]: `fantasy-team-service-${role}` }),
    ),
    metricReaders: [],
    logRecordProcessors: [],
    // None (ADR 0048): their hooks on the module loader resolve every `require` call again.
    instrumentations: [],
  });
  sdk.start();
  return { sdk, newTraceSampled: (name) => roots.sampled(name) };
}
