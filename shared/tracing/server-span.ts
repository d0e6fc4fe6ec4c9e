import type { ClientRequest, IncomingMessage, ServerResponse } from 'node:http';

import type { Attributes, Span } from '@opentelemetry/api';

/**
 * The longest `user_agent.original` a server span exports. Any caller, anonymous too, writes that
 * header: unbounded, it is kilobytes a span in the trace backend for nothing a real agent sends (a
 * browser's is under 200 characters). 256 keeps every real one whole.
 */
export const USER_AGENT_MAX_LENGTH = 256;

/**
 * What the http instrumentation's server span takes at its start over the attributes it builds from
 * the request (ADR 0036): no `url.query` (a query string may carry a credential, `access_token` on the
 * event stream's, and is the caller's to fill), the user agent cut to `USER_AGENT_MAX_LENGTH`, and
 * `client.address` the socket's peer, never the `Forwarded` / `X-Forwarded-For` a caller writes;
 * `clientAddressOnEnd` then puts Express's `req.ip` there, which believes those headers only from the
 * proxies `TRUST_PROXY` names.
 */
export function boundedServerSpanAttributes(request: IncomingMessage): Attributes {
  const userAgent = request.headers['user-agent'];
  return {
    // `undefined` removes it: the SDK drops an attribute whose value is undefined.
    'url.query': undefined,
    'user_agent.original': userAgent?.slice(0, USER_AGENT_MAX_LENGTH),
    'client.address': request.socket.remoteAddress,
  };
}

/**
 * At the response's end, the client's address as the service itself decided it: Express's `req.ip`
 * (the throttle's and the access log's), when Express handled the request. Otherwise the socket's,
 * set at the start, stays.
 */
export function clientAddressOnEnd(
  span: Span,
  request: ClientRequest | IncomingMessage,
  _response: IncomingMessage | ServerResponse,
): void {
  const ip = (request as { readonly ip?: unknown }).ip;
  if (typeof ip === 'string' && ip !== '') span.setAttribute('client.address', ip);
}
