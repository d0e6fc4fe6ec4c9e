import { ExpressInstrumentation, ExpressLayerType } from '@opentelemetry/instrumentation-express';
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http';
import { WinstonInstrumentation } from '@opentelemetry/instrumentation-winston';
import { defaultResource, resourceFromAttributes } from '@opentelemetry/resources';
import { NodeSDK } from '@opentelemetry/sdk-node';
import { ATTR_SERVICE_NAME } from '@opentelemetry/semantic-conventions';

import { instrumentationNames } from './instrumentation-names';
import { boundedServerSpanAttributes, clientAddressOnEnd } from './server-span';

/** The process a resource names: its `service.name` is `fantasy-team-service-<role>`. */
export type TracedProcess = 'ingress' | 'worker';

/**
 * The OpenTelemetry SDK as this service runs it, loaded only when tracing is on (tracing.ts). Every
 * choice the standard variables make stays theirs: the exporter and its protocol, the endpoint, the
 * sampler (parent-based by default), the batch processor's `OTEL_BSP_*`, the propagators, and
 * `OTEL_SERVICE_NAME` / `OTEL_RESOURCE_ATTRIBUTES` over the default name below. Traces only: metrics
 * stay on /metrics and logs on stdout, where winston lines gain `trace_id` and `span_id`.
 */
export function startSdk(role: TracedProcess, untracedPaths: readonly string[]): NodeSDK {
  const untraced = new Set(untracedPaths);
  const sdk = new NodeSDK({
    // The detectors (environment, process, host, service.instance.id) are merged over this.
    resource: defaultResource().merge(
      resourceFromAttributes({ [ATTR_SERVICE_NAME]: `fantasy-team-service-${role}` }),
    ),
    metricReaders: [],
    logRecordProcessors: [],
    instrumentations: instrumentationsFor(untraced),
  });
  sdk.start();
  return sdk;
}

/** One instrumentation, as the SDK takes them. */
type Instrumentation = NonNullable<
  NonNullable<ConstructorParameters<typeof NodeSDK>[0]>['instrumentations']
>[number];

/** The maintained instrumentations, by the names `instrumentationNames` reads the environment with. */
function instrumentationsFor(
  untraced: ReadonlySet<string>,
  env: NodeJS.ProcessEnv = process.env,
): Instrumentation[] {
  const all: Record<string, () => Instrumentation> = {
    http: () =>
      new HttpInstrumentation({
        // Probes and scrapes, every few seconds per replica: a trace each would bury the requests'.
        ignoreIncomingRequestHook: (request) => untraced.has((request.url ?? '').split('?')[0] ?? ''),
        // The only requests the service makes are webhooks: this instrumentation's client span would
        // export their full URL, which may carry the receiver's token, and start a trace of its own
        // for an event that carries none. The dispatcher writes the delivery span and sets the
        // `traceparent` itself (workers/webhooks/webhook-dispatcher.ts).
        disableOutgoingRequestInstrumentation: true,
        // What a caller writes in the URL and headers is exported only bounded and never believed
        // (ADR 0036): no query string, a cut user agent, the client's address as Express decides it.
        startIncomingSpanHook: boundedServerSpanAttributes,
        applyCustomAttributesOnSpan: clientAddressOnEnd,
      }),
    // Routers and handlers only: a span per middleware would drown the request's own.
    express: () => new ExpressInstrumentation({ ignoreLayersType: [ExpressLayerType.MIDDLEWARE] }),
    winston: () => new WinstonInstrumentation({ disableLogSending: true }),
  };
  const names = instrumentationNames(Object.keys(all), env);
  return Object.entries(all)
    .filter(([name]) => names.includes(name))
    .map(([, create]) => create());
}
