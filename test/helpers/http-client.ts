import { randomUUID } from 'node:crypto';

/** One HTTP exchange as a fault test judges it: the answer, or the network error, and how long it took. */
export type Exchange =
  | {
      readonly ok: true;
      readonly status: number;
      readonly contentType: string;
      readonly retryAfter: string | null;
      readonly body: unknown;
      readonly ms: number;
    }
  | { readonly ok: false; readonly error: string; readonly ms: number };

export const basicAuth = (email: string, password: string) =>
  `Basic ${Buffer.from(`${email}:${password}`).toString('base64')}`;

/**
 * Sends one JSON request to a service process over real HTTP (a fresh connection each time, so a
 * connection the server cut cannot fail the next request). Never throws: a network error or a
 * timeout is an Exchange too, for the test to judge.
 */
export async function exchange(
  baseUrl: string,
  method: 'GET' | 'POST',
  path: string,
  options: { authorization?: string; body?: unknown; timeoutMs?: number } = {},
): Promise<Exchange> {
  const started = Date.now();
  try {
    const res = await fetch(`${baseUrl}${path}`, {
      method,
      headers: {
        connection: 'close',
        ...(options.body === undefined ? {} : { 'content-type': 'application/json' }),
        ...(options.authorization ? { authorization: options.authorization } : {}),
      },
      ...(options.body === undefined ? {} : { body: JSON.stringify(options.body) }),
      signal: AbortSignal.timeout(options.timeoutMs ?? 10_000),
    });
    const text = await res.text();
    let body: unknown = text;
    try {
      body = text ? (JSON.parse(text) as unknown) : null;
    } catch {
      // Not JSON: the test sees the text.
    }
    return {
      ok: true,
      status: res.status,
      contentType: res.headers.get('content-type') ?? '',
      retryAfter: res.headers.get('retry-after'),
      body,
      ms: Date.now() - started,
    };
  } catch (error) {
    return {
      ok: false,
      error: error instanceof Error ? error.message : String(error),
      ms: Date.now() - started,
    };
  }
}

/** A bearer token from the service's token endpoint; throws unless it answers 200. */
export async function bearerToken(baseUrl: string, email: string, password: string): Promise<string> {
  const answer = await exchange(baseUrl, 'POST', '/api/auth/token', {
    body: { grant_type: 'password', username: email, password },
  });
  if (!answer.ok || answer.status !== 200)
    throw new Error(`no token for ${email}: ${JSON.stringify(answer)}`);
  return `Bearer ${(answer.body as { access_token: string }).access_token}`;
}

/** A command envelope for POST /api/command with a fresh requestId unless one is given. */
export function commandBody(commandType: string, command: Record<string, unknown>, requestId = randomUUID()) {
  return { commandType, command, requestId };
}
