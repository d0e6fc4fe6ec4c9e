import { execFileSync } from 'node:child_process';
import path from 'node:path';

import { loadConfig } from '../../shared/config';
import { importQueueOptions } from '../../shared/importers/import-queue';
import { createKeys } from '../../shared/redis/keys';
import { tracingRequested } from '../../shared/tracing/tracing';

const ROOT = path.resolve(__dirname, '../..');

/**
 * Starts tracing for an ingress in a fresh node under `env` and asks for the queues' telemetry, and
 * lists the modules of the SDK and of bullmq-otel it loaded.
 */
function sdkModulesLoadedUnder(env: Record<string, string>): string[] {
  const script = [
    "require('./shared/tracing/tracing').startTracing('ingress');",
    "require('./shared/tracing/queue-telemetry').queueTelemetry();",
    'const loaded = Object.keys(require.cache).filter((file) => /@opentelemetry[\\\\/]sdk-|bullmq-otel/.test(file));',
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
  it('When no OTEL_* variable asks for traces, then none of the SDK nor of bullmq-otel is loaded', () => {
    expect(sdkModulesLoadedUnder({})).toEqual([]);
  }, 30_000);

  it('When OTEL_TRACES_EXPORTER=otlp, then the SDK and bullmq-otel are loaded', () => {
    const loaded = sdkModulesLoadedUnder({ OTEL_TRACES_EXPORTER: 'otlp' });
    expect(loaded).toEqual(expect.arrayContaining([expect.stringMatching(/@opentelemetry[\\/]sdk-node/)]));
    expect(loaded).toEqual(expect.arrayContaining([expect.stringMatching(/bullmq-otel/)]));
  }, 30_000);

  it('When tracing is on, then no instrumentation hooks the module loader: `require` is what Node gave', () => {
    // require-in-the-middle, which every maintained instrumentation installs, resolves every
    // `require` call again, a library's lazy ones on a request's path included (ADR 0048).
    const script = [
      "const Module = require('node:module');",
      'const original = Module.prototype.require;',
      "require('./shared/tracing/tracing').startTracing('ingress');",
      'process.stdout.write(String(Module.prototype.require === original));',
    ].join('\n');
    const clean = Object.fromEntries(
      Object.entries(process.env).filter(([name]) => !name.startsWith('OTEL_')),
    );
    const output = execFileSync(process.execPath, ['--import', 'tsx', '-e', script], {
      cwd: ROOT,
      env: { ...clean, OTEL_TRACES_EXPORTER: 'otlp' },
      encoding: 'utf8',
    });
    expect(output).toBe('true');
  }, 30_000);

  it("When no OTEL_* variable asks for traces, then the import queue's options carry no telemetry; when one does, BullMQ's", () => {
    const config = loadConfig({
      NODE_ENV: 'test',
      JWT_SECRET: 'a-unit-test-secret-of-at-least-32-characters',
    });
    const keys = createKeys('tracing-off:');
    expect(importQueueOptions(config, keys, {})).not.toHaveProperty('telemetry');
    expect(importQueueOptions(config, keys, { OTEL_TRACES_EXPORTER: 'none' })).not.toHaveProperty(
      'telemetry',
    );
    expect(importQueueOptions(config, keys, { OTEL_TRACES_EXPORTER: 'otlp' }).telemetry).toEqual({
      tracer: expect.anything(),
      contextManager: expect.anything(),
    });
  });

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
