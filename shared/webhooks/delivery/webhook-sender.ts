import http from 'node:http';
import https from 'node:https';

import { RequestFilteringHttpAgent, RequestFilteringHttpsAgent } from 'request-filtering-agent';

/** How one delivery attempt went: a 2xx is `ok`; else an HTTP status or a network error. */
export interface AttemptResult {
  readonly ok: boolean;
  readonly httpStatus: number | null;
  readonly error: string | null;
  readonly durationMs: number;
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
      return Promise.resolve(done({ ok: false, httpStatus: null, error: 'invalid url' }));
    }
    const secure = target.protocol === 'https:';
    if (!secure && !(target.protocol === 'http:' && this.settings.allowPrivateTargets)) {
      return Promise.resolve(
        done({ ok: false, httpStatus: null, error: 'refused: only https targets are allowed' }),
      );
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
          settle({ ok: status >= 200 && status < 300, httpStatus: status, error: null });
        },
      );
      const timer = setTimeout(() => {
        request.destroy(new Error(`timed out after ${this.settings.timeoutMs} ms`));
      }, this.settings.timeoutMs);
      request.on('error', (error) => settle({ ok: false, httpStatus: null, error: error.message }));
      request.end(body);
    });
  }

  close(): void {
    this.httpAgent.destroy();
    this.httpsAgent.destroy();
  }
}
