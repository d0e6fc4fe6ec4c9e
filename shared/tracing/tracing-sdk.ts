import { WinstonInstrumentation } from '@opentelemetry/instrumentation-winston';
import { defaultResource, resourceFromAttributes } from '@opentelemetry/resources';
import { NodeSDK } from '@opentelemetry/sdk-node';
import { ATTR_SERVICE_NAME } from '@opentelemetry/semantic-conventions';

import { instrumentationNames } from './instrumentation-names';

/** The process a resource names: its `service.name` is `fantasy-team-service-<role>`. */
export type TracedProcess = 'ingress' | 'worker';

/**
 * The OpenTelemetry SDK as this service runs it, loaded only when tracing is on (tracing.ts). Every
 * choice the standard variables make stays theirs: the exporter and its protocol, the endpoint, the
 * sampler (parent-based by default), the batch processor's `OTEL_BSP_*`, the propagators, and
 * `OTEL_SERVICE_NAME` / `OTEL_RESOURCE_ATTRIBUTES` over the default name below. Traces only: metrics
 * stay on /metrics and logs on stdout, where winston lines gain `trace_id` and `span_id`.
 *
 * No http or Express instrumentation (ADR 0048): they did a request's tracing work before the sampler
 * decided, so that 1% cost about what 100% does. The ingress writes its server span itself
 * (ingress/http/server-span.ts), the webhook dispatcher its client span, and nothing else here makes
 * or serves an HTTP request worth a span.
 */
export function startSdk(role: TracedProcess): NodeSDK {
  const sdk = new NodeSDK({
    // The detectors (environment, process, host, service.instance.id) are merged over this.
    resource: defaultResource().merge(
      resourceFromAttributes({ [ATTR_SERVICE_NAME]: `fantasy-team-service-${role}` }),
    ),
    metricReaders: [],
    logRecordProcessors: [],
    instrumentations: instrumentationsFor(),
  });
  sdk.start();
  return sdk;
}

/** One instrumentation, as the SDK takes them. */
type Instrumentation = NonNullable<
  NonNullable<ConstructorParameters<typeof NodeSDK>[0]>['instrumentations']
>[number];

/**
 * The maintained instrumentations, by the names `instrumentationNames` reads the environment with:
 * winston's alone, which puts the active trace in each log line and sends no log anywhere.
 */
function instrumentationsFor(env: NodeJS.ProcessEnv = process.env): Instrumentation[] {
  const all: Record<string, () => Instrumentation> = {
    winston: () => new WinstonInstrumentation({ disableLogSending: true }),
  };
  const names = instrumentationNames(Object.keys(all), env);
  return Object.entries(all)
    .filter(([name]) => names.includes(name))
    .map(([, create]) => create());
}
