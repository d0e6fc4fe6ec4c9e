import http from 'node:http';
import { performance } from 'node:perf_hooks';

import { type LoadResult, percentile } from './load';

/** One request of an open-loop run: its body, and who wants to hear how it was answered. */
export interface OpenLoopRequest {
  readonly body: string;
  onAnswer?(status: number | null): void;
}

export interface OpenLoopOptions {
  readonly url: string;
  /** POST (the default) sends each request's body; GET sends none (a probe of /healthz). */
  readonly method?: 'GET' | 'POST';
  readonly headers: Readonly<Record<string, string>>;
  /** Requests started per second, on a fixed schedule, whether or not earlier ones were answered. */
  readonly ratePerSecond: number;
  readonly durationSeconds: number;
  /** The next request; undefined when none can be sent now (counted as an error: the schedule slipped). */
  next(): OpenLoopRequest | undefined;
  /** Sockets kept open at most; a request finding none free waits, and its latency shows it. */
  readonly maxSockets?: number;
  readonly timeoutMs?: number;
}

/**
 * Sends requests (POSTs, or GETs) at a fixed rate (open loop), unlike autocannon's connections, which each wait for an answer
 * before sending again (closed loop, so their latency is set by the connection count at saturation,
 * and autocannon's own rate limit sends each second's quota in one burst). Latency runs from each
 * request's scheduled start, so a server falling behind shows as latency, not as a lower offered rate;
 * it includes the timer granularity of this process (about 1 ms).
 */
export async function runOpenLoop(options: OpenLoopOptions): Promise<LoadResult> {
  const target = new URL(options.url);
  const agent = new http.Agent({ keepAlive: true, maxSockets: options.maxSockets ?? 256 });
  const timeoutMs = options.timeoutMs ?? 5_000;
  const latencies: number[] = [];
  let non2xx = 0;
  let errors = 0;
  const inFlight = new Set<Promise<void>>();

  const send = (request: OpenLoopRequest, scheduledAt: number) =>
    new Promise<void>((resolve) => {
      let settled = false;
      const finish = (status: number | null) => {
        if (settled) return;
        settled = true;
        if (status === null) errors += 1;
        else {
          latencies.push(performance.now() - scheduledAt);
          if (status < 200 || status > 299) non2xx += 1;
        }
        request.onAnswer?.(status);
        resolve();
      };
      const outgoing = http.request(
        {
          agent,
          host: target.hostname,
          port: target.port,
          path: target.pathname,
          method: options.method ?? 'POST',
          headers:
            options.method === 'GET'
              ? { ...options.headers }
              : { ...options.headers, 'content-length': Buffer.byteLength(request.body) },
        },
        (response) => {
          response.resume();
          response.on('end', () => finish(response.statusCode ?? null));
          response.on('error', () => finish(null));
        },
      );
      outgoing.setTimeout(timeoutMs, () => outgoing.destroy(new Error('timeout')));
      outgoing.on('error', () => finish(null));
      outgoing.end(options.method === 'GET' ? undefined : request.body);
    });

  const total = Math.floor(options.ratePerSecond * options.durationSeconds);
  const intervalMs = 1000 / options.ratePerSecond;
  const startedAt = performance.now();
  let started = 0;
  while (started < total) {
    const due = Math.min(total, Math.floor((performance.now() - startedAt) / intervalMs) + 1);
    for (; started < due; started += 1) {
      const request = options.next();
      if (!request) {
        errors += 1;
        continue;
      }
      const sending: Promise<void> = send(request, startedAt + started * intervalMs).finally(() =>
        inFlight.delete(sending),
      );
      inFlight.add(sending);
    }
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
  await Promise.all(inFlight);
  const elapsedSeconds = (performance.now() - startedAt) / 1000;
  agent.destroy();
  return {
    requestsPerSecond: latencies.length / elapsedSeconds,
    p50Ms: percentile(latencies, 50),
    p99Ms: percentile(latencies, 99),
    responses: latencies.length,
    non2xx,
    errors,
    warmupFailures: 0,
  };
}
