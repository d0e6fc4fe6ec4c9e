/**
 * Which of `available` instrumentations to run: `OTEL_NODE_ENABLED_INSTRUMENTATIONS` (all when unset)
 * less `OTEL_NODE_DISABLED_INSTRUMENTATIONS`, comma-separated names without the
 * `@opentelemetry/instrumentation-` prefix, as `@opentelemetry/auto-instrumentations-node` reads them.
 */
export function instrumentationNames(available: readonly string[], env: NodeJS.ProcessEnv): string[] {
  const listed = (name: string) =>
    env[name]
      ?.split(',')
      .map((entry) => entry.trim())
      .filter((entry) => entry !== '');
  const enabled = listed('OTEL_NODE_ENABLED_INSTRUMENTATIONS');
  const disabled = new Set(listed('OTEL_NODE_DISABLED_INSTRUMENTATIONS') ?? []);
  return available.filter((name) => (enabled === undefined || enabled.includes(name)) && !disabled.has(name));
}
