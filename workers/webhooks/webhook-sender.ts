import http from 'node:http';
import https from 'node:https';

import { RequestFilteringHttpAgent, RequestFilteringHttpsAgent } from 'request-filtering-agent';

/** How one delivery attempt went: a 2xx is `ok`; else an HTTP status or a network error. */
export interface AttemptResult {
  readonly ok: boolean;
  readonly httpStatus: number | null;
  /** What failed, as a class (ATTEMPT_ERRORS, or `HTTP <status>`); null when it did not. */
  readonly error: string | null;
  readonly durationMs: number;
}

/**
 * What the delivery log says of a failed attempt: a class, never the error's own text, which can
 * tell an Admin what an internal host name resolves to, or other details of the network.
 */
export const ATTEMPT_ERRORS = {
  invalidUrl: 'invalid url',
  httpOnly: 'target refused: http not allowed',
  privateAddress: 'target refused: private address',
  unspecifiedAddress: 'target refused: unspecified address',
  dnsFailure: 'DNS lookup failed',
  connectTimeout: 'connect timeout',
  responseTimeout: 'response timeout',
  connectionRefused: 'connection refused',
  connectionReset: 'connection reset',
  unreachable: 'host unreachable',
  tls: 'TLS error',
  network: 'network error',
} as const;

/** The class of a network error (its code, or request-filtering-agent's refusal). */
export function attemptErrorClass(error: Error & { code?: unknown }): string {
  const code = typeof error.code === 'string' ? error.code : '';
  // request-filtering-agent's "meta IP address" is the unspecified one (0.0.0.0, ::).
  if (/is not allowed\. Because,? It is meta IP/i.test(error.message))
    return ATTEMPT_ERRORS.unspecifiedAddress;
  if (/^DNS lookup .* is not allowed/i.test(error.message)) return ATTEMPT_ERRORS.privateAddress;
  if (code === 'ECONNREFUSED') return ATTEMPT_ERRORS.connectionRefused;
  if (code === 'ECONNRESET' || code === 'EPIPE' || /socket hang up/i.test(error.message)) {
    return ATTEMPT_ERRORS.connectionReset;
  }
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN' || code === 'EAI_FAIL') return ATTEMPT_ERRORS.dnsFailure;
  if (code === 'ETIMEDOUT') return ATTEMPT_ERRORS.connectTimeout;
  if (code === 'EHOSTUNREACH' || code === 'ENETUNREACH') return ATTEMPT_ERRORS.unreachable;
  if (/^(ERR_TLS_|ERR_SSL_|EPROTO$|CERT_|DEPTH_ZERO|SELF_SIGNED|UNABLE_TO_)/.test(code))
    return ATTEMPT_ERRORS.tls;
  return ATTEMPT_ERRORS.network;
}

export interface SenderSettings {
  readonly allowPrivateTargets: boolean;
  readonly timeoutMs: number;
}

const USER_AGENT = 'fantasy-team-service-webhooks/1';

/**
 * POSTs webhooks. Every connection goes through request-filtering-agent, which checks the address
 * a host name resolved to when the socket connects (so a name that resolves, or rebinds, to a
 * loopback, private, link-local or metadata address is refused) unless private targets are
 * allowed. Redirects are not followed (a 3xx is a failed attempt), http only when private targets
 * are allowed, and each attempt ends after `timeoutMs`, connect to response.
 */
export class WebhookSender {
  private readonly httpAgent: http.Agent;
  private readonly httpsAgent: https.Agent;

  constructor(private readonly settings: SenderSettings) {
    const filtering = {
      allowPrivateIPAddress: settings.allowPrivateTargets,
      allowMetaIPAddress: false,
      keepAlive: true,
      maxSockets: 256,
    };
    this.httpAgent = new RequestFilteringHttpAgent(filtering);
    this.httpsAgent = new RequestFilteringHttpsAgent(filtering);
  }

  send(url: string, headers: Readonly<Record<string, string>>, body: string): Promise<AttemptResult> {
    const started = performance.now();
    const done = (result: Omit<AttemptResult, 'durationMs'>): AttemptResult => ({
      ...result,
      durationMs: Math.round((performance.now() - started) * 10) / 10,
    });
    let target: URL;
    try {
      target = new URL(url);
    } catch {
      return Promise.resolve(done({ ok: false, httpStatus: null, error: ATTEMPT_ERRORS.invalidUrl }));
    }
    const secure = target.protocol === 'https:';
    if (!secure && !(target.protocol === 'http:' && this.settings.allowPrivateTargets)) {
      return Promise.resolve(done({ ok: false, httpStatus: null, error: ATTEMPT_ERRORS.httpOnly }));
    }
    return new Promise((resolve) => {
      let settled = false;
      const settle = (result: Omit<AttemptResult, 'durationMs'>) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve(done(result));
      };
      const request = (secure ? https : http).request(
        target,
        {
          method: 'POST',
          agent: secure ? this.httpsAgent : this.httpAgent,
          headers: {
            ...headers,
            'content-type': 'application/json',
            'content-length': String(Buffer.byteLength(body)),
            'user-agent': USER_AGENT,
          },
        },
        (response) => {
          // The body is not read: only the status counts. Drained so the socket can be reused, but
          // never for longer than an attempt may take (an endpoint streaming forever is cut off).
          response.resume();
          const drainLimit = setTimeout(() => response.destroy(), this.settings.timeoutMs);
          response.once('close', () => clearTimeout(drainLimit));
          const status = response.statusCode ?? 0;
          const ok = status >= 200 && status < 300;
          settle({ ok, httpStatus: status, error: ok ? null : `HTTP ${status}` });
        },
      );
      // Whether the connection was made (TLS included): a timeout before it is a connect timeout.
      let connected = false;
      // A kept-alive socket, reused, is connected already and never emits 'connect' again: a
      // listener on it would stay, one more per attempt, for as long as the socket lives.
      request.once('socket', (socket) => {
        if (!socket.connecting) connected = true;
        else socket.once(secure ? 'secureConnect' : 'connect', () => (connected = true));
      });
      const timer = setTimeout(() => {
        settle({
          ok: false,
          httpStatus: null,
          error: connected ? ATTEMPT_ERRORS.responseTimeout : ATTEMPT_ERRORS.connectTimeout,
        });
        request.destroy();
      }, this.settings.timeoutMs);
      request.on('error', (error) =>
        settle({ ok: false, httpStatus: null, error: attemptErrorClass(error) }),
      );
      request.end(body);
    });
  }

  close(): void {
    this.httpAgent.destroy();
    this.httpsAgent.destroy();
  }
}
