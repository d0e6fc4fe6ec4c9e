import { NetworkError } from './import-client';

/** One answer of the service: its status and parsed JSON body (null when empty or not JSON). */
export interface ApiAnswer {
  readonly status: number;
  readonly body: unknown;
}

/** `Authorization: Basic`, e-mail and password encoded as UTF-8 (as the basicAuth scheme says). */
export function basicAuthorization(email: string, password: string): string {
  return `Basic ${Buffer.from(`${email}:${password}`, 'utf8').toString('base64')}`;
}

/**
 * The few JSON calls a script makes on a running service (read model, command, token) as one
 * caller. Answers every status to the caller, which decides what it means; a network failure
 * throws NetworkError.
 */
export class ServiceApi {
  readonly baseUrl: string;

  constructor(
    baseUrl: string,
    private readonly fetchImpl: typeof fetch = fetch,
  ) {
    this.baseUrl = baseUrl.replace(/\/+$/, '');
  }

  async post(path: string, body: unknown, authorization?: string): Promise<ApiAnswer> {
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
        signal: AbortSignal.timeout(60_000),
      });
    } catch (error) {
      throw new NetworkError(`POST ${path}`, url, error);
    }
    const text = await response.text();
    let parsed: unknown = null;
    try {
      parsed = text ? (JSON.parse(text) as unknown) : null;
    } catch {
      parsed = text;
    }
    return { status: response.status, body: parsed };
  }

  /** A bearer token for the account (`grant_type=password`), or undefined when refused. */
  async bearer(email: string, password: string): Promise<string | undefined> {
    const answer = await this.post('/api/auth/token', { grant_type: 'password', username: email, password });
    const token = (answer.body as { access_token?: unknown } | null)?.access_token;
    return answer.status === 200 && typeof token === 'string' ? `Bearer ${token}` : undefined;
  }
}
