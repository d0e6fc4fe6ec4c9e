/** One answer of the service: its status, its body as sent, and that body parsed as JSON (null when empty or not JSON). */
export interface ApiAnswer {
  readonly status: number;
  readonly body: unknown;
  readonly text: string;
}

/** The service could not be reached (refused, reset, DNS, timeout). */
export class NetworkError extends Error {
  override readonly name = 'NetworkError';

  constructor(
    readonly endpoint: string,
    readonly url: string,
    cause: unknown,
  ) {
    super(`${endpoint}: could not reach ${url} (${describeCause(cause)})`, { cause });
  }
}

function describeCause(cause: unknown): string {
  // undici wraps the socket error: `TypeError: fetch failed` with the real reason in `cause`.
  const inner = cause instanceof Error && cause.cause instanceof Error ? cause.cause : cause;
  if (inner instanceof Error) {
    const code = (inner as NodeJS.ErrnoException).code;
    return code && !inner.message.includes(code) ? `${code}: ${inner.message}` : inner.message;
  }
  return String(inner);
}

/** `Authorization: Basic`, e-mail and password encoded as UTF-8 (as the basicAuth scheme says). */
export function basicAuthorization(email: string, password: string): string {
  return `Basic ${Buffer.from(`${email}:${password}`, 'utf8').toString('base64')}`;
}

export interface ServiceApiOptions {
  /** Node's global fetch unless a test passes its own. */
  readonly fetch?: typeof fetch;
  /** Per-request time limit (default 60 s). */
  readonly requestTimeoutMs?: number;
}

/**
 * The JSON calls a script makes on a running service (read model, command, token, import), the one
 * place that speaks HTTP for the scripts. Answers every status to the caller, which decides what it
 * means; a network failure throws NetworkError.
 */
export class ServiceApi {
  readonly baseUrl: string;
  private readonly fetchImpl: typeof fetch;
  private readonly requestTimeoutMs: number;

  constructor(baseUrl: string, options: ServiceApiOptions = {}) {
    this.baseUrl = baseUrl.replace(/\/+$/, '');
    this.fetchImpl = options.fetch ?? fetch;
    this.requestTimeoutMs = options.requestTimeoutMs ?? 60_000;
  }

  /** POSTs `body` as JSON; `endpoint` names the call in a NetworkError (default `POST <path>`). */
  async post(
    path: string,
    body: unknown,
    authorization?: string,
    endpoint = `POST ${path}`,
  ): Promise<ApiAnswer> {
    const url = `${this.baseUrl}${path}`;
    let response: Response;
    try {
      response = await this.fetchImpl(url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json',
          ...(authorization ? { authorization } : {}),
        },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(this.requestTimeoutMs),
      });
    } catch (error) {
      throw new NetworkError(endpoint, url, error);
    }
    const text = await response.text();
    let parsed: unknown = null;
    try {
      parsed = text ? (JSON.parse(text) as unknown) : null;
    } catch {
      parsed = text;
    }
    return { status: response.status, body: parsed, text };
  }

  /** A bearer token for the account (`grant_type=password`), or undefined when refused. */
  async bearer(email: string, password: string): Promise<string | undefined> {
    const answer = await this.post('/api/auth/token', { grant_type: 'password', username: email, password });
    const token = (answer.body as { access_token?: unknown } | null)?.access_token;
    return answer.status === 200 && typeof token === 'string' ? `Bearer ${token}` : undefined;
  }
}
