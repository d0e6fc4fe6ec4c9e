import { execFileSync } from 'node:child_process';
import path from 'node:path';

import { instrumentationNames } from '../../shared/tracing/instrumentation-names';
import { tracingRequested } from '../../shared/tracing/tracing';

const ROOT = path.resolve(__dirname, '../..');

/** Starts tracing for an ingress in a fresh node under `env`, and lists the SDK modules it loaded. */
function sdkModulesLoadedUnder(env: Record<string, string>): string[] {
  const script = [
    "require('./shared/tracing/tracing').startTracing('ingress');",
    'const loaded = Object.keys(require.cache).filter((file) => /@opentelemetry[\\\\/]sdk-/.test(file));',
    'process.stdout.write(JSON.stringify(loaded));',
  ].join('\n');
  const clean = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('OTEL_')));
  const output = execFileSync(process.execPath, ['--import', 'tsx', '-e', script], {
    cwd: ROOT,
    env: { ...clean, ...env },
    encoding: 'utf8',
  });
  return JSON.parse(output) as string[];
}

describe('Tracing switched by the standard OpenTelemetry variables', () => {
  it('When no OTEL_* variable asks for traces, then none of the SDK is loaded', () => {
    expect(sdkModulesLoadedUnder({})).toEqual([]);
  }, 30_000);

  it('When OTEL_TRACES_EXPORTER=otlp, then the SDK is loaded', () => {
    expect(sdkModulesLoadedUnder({ OTEL_TRACES_EXPORTER: 'otlp' }).length).toBeGreaterThan(0);
  }, 30_000);

  it.each([
    [{}, false],
    [{ OTEL_TRACES_EXPORTER: 'otlp' }, true],
    [{ OTEL_TRACES_EXPORTER: 'none' }, false],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }, true],
    [{ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://collector:4318/v1/traces' }, true],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_TRACES_EXPORTER: 'none' }, false],
    [{ OTEL_TRACES_EXPORTER: 'otlp', OTEL_SDK_DISABLED: 'true' }, false],
  ])('When the environment is %j, then tracing is requested: %s', (env, requested) => {
    expect(tracingRequested(env)).toBe(requested);
  });
});

describe('Instrumentations named by the standard variables of the Node auto-instrumentations', () => {
  const available = ['http', 'express', 'winston'];
  it.each([
    [{}, ['http', 'express', 'winston']],
    [{ OTEL_NODE_DISABLED_INSTRUMENTATIONS: 'express' }, ['http', 'winston']],
    [{ OTEL_NODE_DISABLED_INSTRUMENTATIONS: ' http , express ' }, ['winston']],
    [{ OTEL_NODE_ENABLED_INSTRUMENTATIONS: 'http,winston' }, ['http', 'winston']],
    [{ OTEL_NODE_ENABLED_INSTRUMENTATIONS: 'http', OTEL_NODE_DISABLED_INSTRUMENTATIONS: 'http' }, []],
  ])('When the environment is %j, then %j run', (env, names) => {
    expect(instrumentationNames(available, env)).toEqual(names);
  });
});
