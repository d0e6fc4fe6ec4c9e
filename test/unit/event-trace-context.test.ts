import { context, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import {
  AlwaysOnSampler,
  InMemorySpanExporter,
  ParentBasedSampler,
  SimpleSpanProcessor,
  TracerProvider,
} from '@opentelemetry/sdk-trace';

import {
  contextOfTraceparent,
  enableSpans,
  inEventSpan,
  inScriptSpan,
  inSpan,
  recordEventSpan,
  sampledTraceparent,
  tracingOn,
} from '../../shared/tracing/spans';

const TRACEPARENT = `00-${'4b'.repeat(16)}-${'a1'.repeat(8)}-01`;

describe('Spans with tracing off, and the trace context an event carries (no SDK)', () => {
  it('When no SDK was started, then a span builds no attributes, the work runs as it would, and an event carries no trace', async () => {
    expect(tracingOn()).toBe(false);
    const attributes = jest.fn(() => ({}));
    await expect(
      inSpan('command X', attributes, () => Promise.resolve(sampledTraceparent())),
    ).resolves.toBeUndefined();
    await expect(
      inEventSpan('webhook', TRACEPARENT, attributes, () => Promise.resolve('sent')),
    ).resolves.toBe('sent');
    recordEventSpan('project teams', TRACEPARENT, new Date(), attributes);
    expect(attributes).not.toHaveBeenCalled();
  });

  it('When an event carries a W3C traceparent, then its context is that trace and span, as a remote parent', () => {
    const context = contextOfTraceparent(TRACEPARENT);
    expect(context && trace.getSpanContext(context)).toEqual({
      traceId: '4b'.repeat(16),
      spanId: 'a1'.repeat(8),
      traceFlags: 1,
      isRemote: true,
    });
  });

  it.each([
    undefined,
    '',
    `01-${'4b'.repeat(16)}-${'a1'.repeat(8)}-01`,
    `00-${'0'.repeat(32)}-${'a1'.repeat(8)}-01`,
    `00-${'4b'.repeat(16)}-${'0'.repeat(16)}-01`,
    `00-${'4B'.repeat(16)}-${'a1'.repeat(8)}-01`,
    `${TRACEPARENT}-extra`,
  ])('When an event carries %j, then it names no context', (traceparent) => {
    expect(contextOfTraceparent(traceparent)).toBeUndefined();
  });
});

describe('Spans with an SDK registered: sampled and unsampled traces', () => {
  const exporter = new InMemorySpanExporter();
  const contextManager = new AsyncLocalStorageContextManager();

  beforeAll(() => {
    context.setGlobalContextManager(contextManager.enable());
    trace.setGlobalTracerProvider(
      new TracerProvider({
        sampler: new ParentBasedSampler({ root: new AlwaysOnSampler() }),
        spanProcessors: [new SimpleSpanProcessor({ exporter })],
      }),
    );
    enableSpans();
  });
  afterAll(() => {
    trace.disable();
    context.disable();
  });
  beforeEach(() => exporter.reset());

  it("When a command runs in a sampled trace, then its events' context is the command span's, and the projector's span of them is its child", async () => {
    // The service's spans are children of a request's (or a job's, or an event's) recording span.
    const carried = await trace.getTracer('test').startActiveSpan('POST /api/command', (request) =>
      inSpan(
        'command LinkFantasyTeam',
        () => ({ 'fts.command.type': 'LinkFantasyTeam' }),
        () =>
          inScriptSpan('appendEvents', 'fantasy-team', 'a', () => Promise.resolve()).then(sampledTraceparent),
      ).finally(() => request.end()),
    );
    const [script, command] = exporter.getFinishedSpans();
    expect(command?.name).toBe('command LinkFantasyTeam');
    expect(script?.parentSpanContext?.spanId).toBe(command?.spanContext().spanId);
    // Taken after the script's span ended, under the command's.
    expect(carried).toBe(`00-${command?.spanContext().traceId}-${command?.spanContext().spanId}-01`);

    recordEventSpan('project fantasy-teams', carried, new Date(), () => ({ 'fts.event.version': 2 }));
    const projected = exporter.getFinishedSpans()[3];
    expect(projected?.spanContext().traceId).toBe(command?.spanContext().traceId);
    expect(projected?.parentSpanContext?.spanId).toBe(command?.spanContext().spanId);
  });

  it('When a command runs in a trace its caller did not sample, then no span of it is made and its events carry nothing', async () => {
    const unsampled = contextOfTraceparent(`00-${'4b'.repeat(16)}-${'a1'.repeat(8)}-00`)!;
    const attributes = jest.fn(() => ({}));
    const carried = await context.with(unsampled, () =>
      inSpan('command LinkFantasyTeam', attributes, (span) => {
        expect(span.isRecording()).toBe(false);
        return inScriptSpan('appendEvents', 'fantasy-team', 'a', () => Promise.resolve(sampledTraceparent()));
      }),
    );
    expect(carried).toBeUndefined();
    expect(attributes).not.toHaveBeenCalled();
    recordEventSpan(
      'project fantasy-teams',
      `00-${'4b'.repeat(16)}-${'a1'.repeat(8)}-00`,
      new Date(),
      attributes,
    );
    expect(exporter.getFinishedSpans()).toEqual([]);
  });
});
