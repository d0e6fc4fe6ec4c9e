import { trace } from '@opentelemetry/api';

import {
  contextOfTraceparent,
  inEventSpan,
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
    await expect(inSpan('command X', attributes, () => Promise.resolve(sampledTraceparent()))).resolves.toBeUndefined();
    await expect(inEventSpan('webhook', TRACEPARENT, attributes, () => Promise.resolve('sent'))).resolves.toBe('sent');
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
