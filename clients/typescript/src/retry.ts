export interface RetryOptions {
  /** Retries after the first attempt (default 3; 0 turns retrying off). */
  readonly maxRetries?: number;
  /** A Retry-After longer than this (seconds, default 30) is not waited for: the 503 is answered. */
  readonly maxDelaySeconds?: number;
}

const DEFAULTS: Required<RetryOptions> = { maxRetries: 3, maxDelaySeconds: 30 };

/**
 * A fetch that sends a request again after a 503 that carries `Retry-After` (the service's answer
 * when Redis is unreachable, an aggregate is busy, or a projection is behind), waiting as told, at
 * most `maxRetries` times and never longer than `maxDelaySeconds` a time. A 503 without
 * Retry-After, or any other status, is answered as it is. Every request the client sends may be
 * repeated: reads and tokens change nothing, commands and imports carry a requestId.
 */
export function retryingFetch(
  base: typeof fetch,
  options: RetryOptions = {},
): (request: Request) => Promise<Response> {
  const { maxRetries, maxDelaySeconds } = { ...DEFAULTS, ...options };
  return async (request: Request) => {
    for (let retry = 0; ; retry += 1) {
      const response = await base(request.clone());
      const delay = retryAfterSeconds(response.headers.get('Retry-After'));
      if (response.status !== 503 || delay === undefined || delay > maxDelaySeconds || retry >= maxRetries) {
        return response;
      }
      await response.body?.cancel();
      await new Promise((resolve) => setTimeout(resolve, delay * 1000));
    }
  };
}

/** Retry-After as seconds (RFC 9110: a number of seconds or an HTTP date); undefined if absent or unreadable. */
export function retryAfterSeconds(header: string | null, now = Date.now()): number | undefined {
  if (header === null) return undefined;
  if (/^\d+$/.test(header.trim())) return Number(header.trim());
  const at = Date.parse(header);
  return Number.isNaN(at) ? undefined : Math.max(0, Math.ceil((at - now) / 1000));
}
