import http from 'node:http';
import { performance } from 'node:perf_hooks';

/**
 * A hostile client, run in a process of its own so its work never lands on the event loop of the
 * process measuring latency: `connections` lanes, each POSTing one large anonymous body after
 * another to `url` for `seconds` (each body streamed until it is all sent or answered), then one
 * JSON line on stdout (what it was answered).
 *
 *   node --import tsx bench/lib/hostile-load.ts <url> <connections> <seconds> <bodyBytes>
 */

export interface HostileLoadSummary {
  readonly requests: number;
  /** Answers by status ("401": n); a request cut before any answer is an error. */
  readonly statuses: Readonly<Record<string, number>>;
  readonly errors: number;
  /** Median and 99th percentile time from sending the head to the answer's status line, ms. */
  readonly answerP50Ms: number;
  readonly answerP99Ms: number;
  readonly seconds: number;
}

/** `depth` arrays inside each other, `bytes` long in all: a body that is cheap to send and costly to parse. */
export function nestedArrays(bytes: number): Buffer {
  const half = Math.floor(bytes / 2);
  return Buffer.concat([Buffer.alloc(half, '['), Buffer.alloc(half, ']')]);
}

const CHUNK_BYTES = 64 * 1024;

function percentile(values: number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length, Math.max(1, Math.ceil((p / 100) * sorted.length))) - 1] ?? Number.NaN;
}

async function main(): Promise<void> {
  const [url, connectionsText, secondsText, bytesText] = process.argv.slice(2);
  if (!url || !connectionsText || !secondsText || !bytesText) {
    throw new Error('usage: hostile-load.ts <url> <connections> <seconds> <bodyBytes>');
  }
  const target = new URL(url);
  const body = nestedArrays(Number(bytesText));
  const endAt = performance.now() + Number(secondsText) * 1000;
  const statuses: Record<string, number> = {};
  const answerTimes: number[] = [];
  let requests = 0;
  let errors = 0;

  const once = () =>
    new Promise<void>((resolve) => {
      const startedAt = performance.now();
      let answered = false;
      const outgoing = http.request(
        {
          host: target.hostname,
          port: target.port,
          path: target.pathname,
          method: 'POST',
          agent: false,
          headers: { 'content-type': 'application/json', 'content-length': body.length },
        },
        (response) => {
          answered = true;
          answerTimes.push(performance.now() - startedAt);
          const status = String(response.statusCode);
          statuses[status] = (statuses[status] ?? 0) + 1;
          response.resume();
          response.on('end', resolve);
          response.on('error', () => resolve());
        },
      );
      outgoing.setTimeout(60_000, () => outgoing.destroy(new Error('timeout')));
      // The server may close the connection as soon as it has answered, before the body is all
      // written: an error after the answer is the refusal working, not a failure.
      outgoing.on('error', () => {
        if (!answered) errors += 1;
        resolve();
      });
      requests += 1;
      // The body goes out as fast as the server takes it, in chunks, until it is all sent or the
      // answer has come (as curl stops sending on an early answer): the client's own copying stays
      // off the machine's CPU, which the server measured shares.
      let offset = 0;
      const pump = (): void => {
        while (!answered && offset < body.length) {
          const end = Math.min(offset + CHUNK_BYTES, body.length);
          const flushed = outgoing.write(body.subarray(offset, end));
          offset = end;
          if (!flushed) {
            outgoing.once('drain', pump);
            return;
          }
        }
        outgoing.end();
      };
      pump();
    });

  const lane = async () => {
    while (performance.now() < endAt) await once();
  };
  const started = performance.now();
  await Promise.all(Array.from({ length: Number(connectionsText) }, lane));
  const summary: HostileLoadSummary = {
    requests,
    statuses,
    errors,
    answerP50Ms: percentile(answerTimes, 50),
    answerP99Ms: percentile(answerTimes, 99),
    seconds: (performance.now() - started) / 1000,
  };
  process.stdout.write(`${JSON.stringify(summary)}\n`);
}

if (require.main === module) {
  main().catch((error: unknown) => {
    process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
    process.exitCode = 1;
  });
}
