/**
 * The ingress's server span (ingress/http/server-span.ts, ADR 0048) in one process, with an SDK whose
 * sampler each test sets: the decision comes first and an unsampled request enters no context; a
 * caller's trace goes on through the body's reading; a sampled request's span says what the HTTP
 * semantic conventions say, and a 5xx is an error. The same decision on a real ingress exporting to an
 * OTLP receiver: test/integration/tracing/sampling-decision.test.ts.
 */
import { once } from 'node:events';
import { request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';

import {
  context,
  propagation,
  type Span,
  SpanKind,
  SpanStatusCode,
  type TextMapPropagator,
  trace,
} from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  InMemorySpanExporter,
  ParentBasedSampler,
  type Sampler,
  SimpleSpanProcessor,
  TracerProvider,
} from '@opentelemetry/sdk-trace';
import express, { type Express } from 'express';
import request from 'supertest';

import { LIVENESS_PATH } from '../../ingress/health/health.routes';
import { serverSpans, USER_AGENT_MAX_LENGTH } from '../../ingress/http/server-span';
import { jsonBody } from '../../shared/http/request-body';
import { contextOfTraceparent, enableSpans, inSpan, traceparentOf } from '../../shared/tracing/spans';

const CALLER_TRACE = '4b'.repeat(16);
const CALLER_SPAN = 'a1'.repeat(8);
const traceparent = (flags: '00' | '01') => `00-${CALLER_TRACE}-${CALLER_SPAN}-${flags}`;

/** Reads a W3C `traceparent` only, as the SDK's default propagator does for what these tests send. */
const traceparentPropagator: TextMapPropagator = {
  inject: () => undefined,
  extract: (base, carrier, getter) => {
    const value = getter.get(carrier, 'traceparent');
    return contextOfTraceparent(typeof value === 'string' ? value : undefined, base) ?? base;
  },
  fields: () => ['traceparent'],
};

/** What a handler saw of the trace: the active context's `traceparent`, after its body was read. */
interface Seen {
  traceparent: string | undefined;
  recording: boolean | undefined;
}

function appWithServerSpans(seen: Seen): Express {
  const app = express();
  app.use(serverSpans());
  app.get(LIVENESS_PATH, (_req, res) => void res.json({ status: 'ok' }));
  // Reads its body with the service's reader, which hands on in the request's context.
  app.post('/api/things/:id', jsonBody(1_024), (req, res) => {
    seen.traceparent = traceparentOf(context.active());
    seen.recording = trace.getActiveSpan()?.isRecording();
    void inSpan(
      'command Thing',
      () => ({}),
      () => Promise.resolve(),
    ).then(() => res.status(Number(req.query.status ?? 200)).json({}));
  });
  app.post('/api/broken', () => {
    throw new Error('a bug');
  });
  return app;
}

describe('The server span the ingress writes: sampling first', () => {
  const exporter = new InMemorySpanExporter();
  let decide: Sampler = new AlwaysOnSampler();
  /** Delegates to `decide`, so each test sets the sampler's verdict. */
  const sampler: Sampler = {
    shouldSample: (...args) => decide.shouldSample(...args),
    toString: () => 'test sampler',
  };
  const seen: Seen = { traceparent: undefined, recording: undefined };
  const app = appWithServerSpans(seen);
  const spans = () => exporter.getFinishedSpans();

  beforeAll(() => {
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    propagation.setGlobalPropagator(traceparentPropagator);
    trace.setGlobalTracerProvider(
      new TracerProvider({
        sampler: new ParentBasedSampler({ root: sampler }),
        spanProcessors: [new SimpleSpanProcessor({ exporter })],
      }),
    );
    enableSpans();
  });
  afterAll(() => {
    trace.disable();
    propagation.disable();
    context.disable();
  });
  beforeEach(() => {
    exporter.reset();
    seen.traceparent = undefined;
    seen.recording = undefined;
  });

  it('When a request without a caller context is not sampled, then it enters no context: the handler sees no trace and writes no span of its own', async () => {
    decide = new AlwaysOffSampler();
    await request(app).post('/api/things/1').send({ a: 1 }).expect(200);
    expect(seen).toEqual({ traceparent: undefined, recording: undefined });
    expect(spans()).toEqual([]);
  });

  it("When a caller's trace is not sampled, then the request runs in it, unrecorded, after its body is read, and nothing is exported", async () => {
    decide = new AlwaysOnSampler(); // the caller's flag decides, not the root sampler
    await request(app).post('/api/things/1').set('traceparent', traceparent('00')).send({ a: 1 }).expect(200);
    expect(seen.traceparent).toMatch(new RegExp(`^00-${CALLER_TRACE}-[0-9a-f]{16}-00$`));
    expect(seen.recording).toBe(false);
    expect(spans()).toEqual([]);
  });

  it("When a caller's trace is sampled, then the server span is its child, active after the body is read, and the handler's span is the server span's child", async () => {
    decide = new AlwaysOffSampler(); // the caller's flag decides
    await request(app)
      .post('/api/things/7?access_token=secret')
      .set('traceparent', traceparent('01'))
      .set('user-agent', 'x'.repeat(10_000))
      .send({ a: 1 })
      .expect(200);
    const [command, server] = spans();
    expect(server?.name).toBe('POST /api/things/:id');
    expect(server?.kind).toBe(SpanKind.SERVER);
    expect(server?.spanContext().traceId).toBe(CALLER_TRACE);
    expect(server?.parentSpanContext?.spanId).toBe(CALLER_SPAN);
    expect(command?.parentSpanContext?.spanId).toBe(server?.spanContext().spanId);
    expect(seen.traceparent).toBe(`00-${CALLER_TRACE}-${server?.spanContext().spanId}-01`);
    expect(server?.status.code).toBe(SpanStatusCode.UNSET);
    expect(Object.keys(server?.attributes ?? {}).sort()).toEqual(
      [
        'client.address',
        'http.request.method',
        'http.response.status_code',
        'http.route',
        'network.peer.address',
        'network.peer.port',
        'network.protocol.version',
        'server.address',
        'server.port',
        'url.path',
        'url.scheme',
        'user_agent.original',
      ].sort(),
    );
    expect(server?.attributes).toMatchObject({
      'http.request.method': 'POST',
      'http.route': '/api/things/:id',
      'http.response.status_code': 200,
      'url.scheme': 'http',
      'url.path': '/api/things/7',
      'server.address': '127.0.0.1',
      'network.protocol.version': '1.1',
    });
    expect(server?.attributes['user_agent.original']).toHaveLength(USER_AGENT_MAX_LENGTH);
    expect(JSON.stringify(server?.attributes)).not.toContain('secret');
  });

  it("When a sampled request's body comes after its headers, then the route still runs in the request's trace once the body is read", async () => {
    decide = new AlwaysOffSampler(); // the caller's flag decides
    const server = app.listen(0, '127.0.0.1');
    await once(server, 'listening');
    try {
      const { port } = server.address() as AddressInfo;
      const body = JSON.stringify({ a: 1 });
      const answered = new Promise<number>((resolve, reject) => {
        const outgoing = httpRequest(
          {
            host: '127.0.0.1',
            port,
            method: 'POST',
            path: '/api/things/2',
            headers: {
              'content-type': 'application/json',
              'content-length': String(body.length),
              traceparent: traceparent('01'),
            },
          },
          (res) => {
            res.resume();
            res.on('end', () => resolve(res.statusCode ?? 0));
          },
        );
        outgoing.on('error', reject);
        outgoing.flushHeaders();
        // The body a moment later: read in the request stream's listeners, not at once.
        setTimeout(() => outgoing.end(body), 50);
      });
      expect(await answered).toBe(200);
      const serverSpan = spans().find((span) => span.kind === SpanKind.SERVER);
      expect(seen.traceparent).toBe(`00-${CALLER_TRACE}-${serverSpan?.spanContext().spanId}-01`);
    } finally {
      server.close();
    }
  });

  it('When a sampled request answers a 4xx, then its span is not an error; a 5xx is, with the status as error.type', async () => {
    decide = new AlwaysOnSampler();
    await request(app).post('/api/things/1?status=404').send({}).expect(404);
    await request(app).post('/api/broken').send({}).expect(500);
    const [notFound, broken] = spans().filter((span) => span.kind === SpanKind.SERVER);
    expect(notFound?.status.code).toBe(SpanStatusCode.UNSET);
    expect(notFound?.attributes['error.type']).toBeUndefined();
    expect(broken).toMatchObject({
      name: 'POST /api/broken',
      status: { code: SpanStatusCode.ERROR },
      attributes: { 'http.response.status_code': 500, 'error.type': '500' },
    });
  });

  it('When a probe comes in a sampled trace, then it gets no span', async () => {
    decide = new AlwaysOnSampler();
    await request(app).get(LIVENESS_PATH).set('traceparent', traceparent('01')).expect(200);
    expect(spans()).toEqual([]);
  });

  it("When the service's own span is started outside any trace, then none is written, whatever the sampler would say", async () => {
    decide = new AlwaysOnSampler();
    const active = await inSpan(
      'command Thing',
      () => ({}),
      (span: Span) => Promise.resolve(span.isRecording()),
    );
    expect(active).toBe(false);
    expect(spans()).toEqual([]);
  });
});
