import {
  type Attributes,
  type Context,
  context,
  propagation,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  trace,
} from '@opentelemetry/api';
import type { Request, RequestHandler, Response } from 'express';

import { METRICS_PATH } from '../../shared/metrics/metrics.routes';
import { newTraceSampled } from '../../shared/tracing/spans';
import { LIVENESS_PATH, READINESS_PATH } from '../health/health.routes';

/**
 * The longest `user_agent.original` a server span exports. Any caller, anonymous too, writes that
 * header: unbounded, it is kilobytes a span in the trace backend for nothing a real agent sends (a
 * browser's is under 200 characters). 256 keeps every real one whole.
 */
export const USER_AGENT_MAX_LENGTH = 256;

/** Probes and scrapes, every few seconds per replica: a trace each would bury the requests'. */
const UNTRACED_PATHS: ReadonlySet<string> = new Set([LIVENESS_PATH, READINESS_PATH, METRICS_PATH]);

/** The methods the HTTP semantic conventions name; any other is `_OTHER`, the original kept beside it. */
const KNOWN_METHODS: ReadonlySet<string> = new Set([
  'GET',
  'HEAD',
  'POST',
  'PUT',
  'DELETE',
  'CONNECT',
  'OPTIONS',
  'TRACE',
  'PATCH',
  'QUERY',
]);

const tracer = trace.getTracer('fantasy-team-service');

/**
 * The ingress's HTTP server span (ADR 0048), written here rather than by the maintained http and
 * Express instrumentations, which built a request's attributes, extracted its context and wrapped its
 * emitters before the sampler decided, for every request: at 1% that cost a read as much as tracing
 * every one.
 *
 * Sampling comes first. The caller's context is read (the configured propagators; `traceparent` by
 * default), and the sampler decides: a new trace before any span exists (`newTraceSampled`), a
 * caller's on a span started with no attribute (its flag, under the parent-based samplers). Then:
 * - not sampled, no caller context (99 requests in 100 at 1%): nothing else. No context is entered,
 *   so the service's own spans, which are only ever children of a recording span (spans.ts), are not
 *   written either;
 * - not sampled, in a caller's trace: the request runs in that trace, unrecorded, so the trace goes on
 *   where it continues (a queued import's job) and the log lines name it;
 * - sampled: the span takes the attributes the maintained instrumentation gave (method, route, status,
 *   scheme, path, server address and port, client and peer address, protocol version, user agent, an
 *   error status for a 5xx), bounded as ADR 0036 wants, and ends when the response closes.
 *
 * Installed only when tracing is on (`tracingOn()`): off, the app has no such middleware at all.
 */
export function serverSpans(): RequestHandler {
  return (req, res, next) => {
    if (UNTRACED_PATHS.has(req.path)) {
      next();
      return;
    }
    const parent = callerContext(req);
    const continued = parent !== ROOT_CONTEXT && trace.getSpanContext(parent) !== undefined;
    // A new trace not sampled: nothing more, not even a span object.
    if (!continued && !newTraceSampled(req.method)) {
      next();
      return;
    }
    const span = tracer.startSpan(req.method, { kind: SpanKind.SERVER }, parent);
    const recording = span.isRecording();
    if (!recording && !continued) {
      next();
      return;
    }
    // The request's and response's emitters are not bound to the context, as the http
    // instrumentation bound them: that gives the sampled requests' objects a shape of their own, and
    // at 1% every site in Node and Express that reads a request or a response then sees two shapes
    // and slows down for all (ADR 0048). What runs in their listeners and needs the request's
    // context binds itself: the body readers' continuation, the access line's listener.
    const active = trace.setSpan(parent, span);
    if (recording) {
      span.setAttributes(requestAttributes(req));
      res.once('close', () => endServerSpan(span, req, res));
    }
    context.with(active, next);
  };
}

/**
 * The context the caller's headers carry, read by the configured propagators (`OTEL_PROPAGATORS`;
 * W3C `traceparent` by default), or the root context when the request has none of their headers.
 */
function callerContext(req: Request): Context {
  propagatedHeaders ??= propagation.fields().map((field) => field.toLowerCase());
  for (const header of propagatedHeaders)
    if (req.headers[header] !== undefined) return propagation.extract(ROOT_CONTEXT, req.headers);
  return ROOT_CONTEXT;
}
/** The headers the propagators read, asked once: the SDK sets them before the app is built. */
let propagatedHeaders: readonly string[] | undefined;

/**
 * What a sampled request's span says of it from the start. Nothing a caller writes is believed or kept
 * whole (ADR 0036): no query string (it may carry a credential, `access_token` on the event stream's),
 * the user agent cut to `USER_AGENT_MAX_LENGTH`; the client's address is set at the end from `req.ip`.
 */
function requestAttributes(req: Request): Attributes {
  // An attribute whose value is undefined is not set (the SDK drops it).
  const method = KNOWN_METHODS.has(req.method) ? req.method : '_OTHER';
  const { address, port } = serverAddress(req);
  return {
    'http.request.method': method,
    'http.request.method_original': method === req.method ? undefined : req.method,
    'url.scheme': req.protocol,
    'url.path': req.path,
    'server.address': address,
    'server.port': port,
    'client.address': req.socket.remoteAddress,
    'network.peer.address': req.socket.remoteAddress,
    'network.peer.port': req.socket.remotePort,
    'network.protocol.version': req.httpVersion,
    'user_agent.original': req.headers['user-agent']?.slice(0, USER_AGENT_MAX_LENGTH),
  };
}

/**
 * `server.address` and `server.port` from the host the request names, as Express reads it (`Host`, or
 * `X-Forwarded-Host` from a proxy `TRUST_PROXY` names); the scheme's port when it names none.
 */
function serverAddress(req: Request): { address: string | undefined; port: number | undefined } {
  const host = req.host;
  if (!host) return { address: undefined, port: undefined };
  const portAt = host.lastIndexOf(':');
  const named = portAt > host.lastIndexOf(']') ? Number(host.slice(portAt + 1)) : Number.NaN;
  if (Number.isInteger(named) && named > 0) return { address: host.slice(0, portAt), port: named };
  return { address: host, port: req.protocol === 'https' ? 443 : 80 };
}

/**
 * At the response's close: the status, the route Express matched (which names the span, `POST
 * /api/command`), the client's address as the service decided it (`req.ip`, the throttle's and the
 * access log's), and an error status for a 5xx, whose `error.type` is the status; a 4xx is the
 * caller's error, not the server's.
 */
function endServerSpan(span: Span, req: Request, res: Response): void {
  const route = routeOf(req);
  // Closed before an answer: the caller went away.
  const status = res.headersSent ? res.statusCode : undefined;
  const errorType = status === undefined ? 'aborted' : status >= 500 ? String(status) : undefined;
  // An attribute whose value is undefined is not set (the SDK drops it).
  span.setAttributes({
    'http.response.status_code': status,
    'http.route': route,
    'client.address': req.ip || req.socket.remoteAddress,
    'error.type': errorType,
  });
  if (route !== undefined) span.updateName(`${req.method} ${route}`);
  if (errorType !== undefined) span.setStatus({ code: SpanStatusCode.ERROR });
  span.end();
}

/** The path pattern of the route Express matched, if one did. */
function routeOf(req: Request): string | undefined {
  const path: unknown = (req.route as { path?: unknown } | undefined)?.path;
  // Express clears `baseUrl` once a request has left every router (its final error handler).
  const base = (req.baseUrl as string | undefined) ?? '';
  return typeof path === 'string' ? base + path : undefined;
}
