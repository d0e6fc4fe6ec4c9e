import { enableSpans } from './spans';
import type * as Sdk from './tracing-sdk';
import type { TracedProcess } from './tracing-sdk';

/**
 * Whether the standard OpenTelemetry variables ask for traces: `OTEL_TRACES_EXPORTER` naming an
 * exporter, or, with it unset, an OTLP endpoint (`OTEL_EXPORTER_OTLP_ENDPOINT` or
 * `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`). `OTEL_SDK_DISABLED=true` turns it off whatever else is set.
 */
export function tracingRequested(env: NodeJS.ProcessEnv): boolean {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return false;
  const exporters = (env.OTEL_TRACES_EXPORTER ?? '')
    .split(',')
    .map((name) => name.trim())
    .filter((name) => name !== '');
  if (exporters.length > 0) return !exporters.includes('none');
  return Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim() || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim());
}

let running: { shutdown(): Promise<void> } | undefined;

/**
 * Starts the OpenTelemetry SDK for this process when the environment asks for traces: a process's
 * entry point imports the module that calls this first, so that the tracer provider and the context
 * manager are registered before anything asks for them. Off, nothing of the SDK is loaded.
 */
export function startTracing(role: TracedProcess, env: NodeJS.ProcessEnv = process.env): void {
  if (running || !tracingRequested(env)) return;
  // Loaded only when on, and synchronously: the instrumentations must patch before the modules load.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const sdk = require('./tracing-sdk') as typeof Sdk;
  const started = sdk.startSdk(role);
  running = started.sdk;
  enableSpans(started.newTraceSampled);
}

/** Exports the spans still buffered and stops the SDK; nothing to do when tracing is off. */
export async function stopTracing(): Promise<void> {
  const sdk = running;
  running = undefined;
  await sdk?.shutdown();
}
