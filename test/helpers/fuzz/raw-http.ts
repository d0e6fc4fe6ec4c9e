import { connect } from 'node:net';

import fc from 'fast-check';

/**
 * Malformed HTTP over raw sockets (node:net), where no client library would go: unfinished
 * headers and bodies, conflicting Content-Length and Transfer-Encoding, bad chunking, huge
 * headers, a body shorter than its Content-Length, chunked without the final chunk (also without
 * credentials on /api/import), a slow drip of header bytes, an idle keep-alive connection. Each
 * case must be answered (a status line that is not a 5xx) or closed by the service within the
 * timeout that governs it, plus a little slack for the server's periodic timeout check.
 */

export interface SocketTimeouts {
  readonly requestMs: number;
  readonly headersMs: number;
  readonly keepAliveMs: number;
}

/** Which of the server's timeouts must end the case if nothing else does. */
export type Governing = 'headers' | 'request' | 'keep-alive' | 'immediate';

export interface SocketCase {
  readonly name: string;
  /** Written in order; a number is a pause in milliseconds. */
  readonly steps: readonly (string | Buffer | number)[];
  readonly governing: Governing;
  /** Half-close (FIN) after the last step. */
  readonly endAfter?: boolean;
  /** Must the socket end, and not merely be answered (an idle keep-alive connection)? */
  readonly mustClose?: boolean;
}

export interface SocketOutcome {
  readonly name: string;
  /** The status of the first answer, if any. */
  readonly status?: number;
  readonly answeredAfterMs?: number;
  readonly closedAfterMs?: number;
  readonly deadlineMs: number;
  readonly problem?: string;
}

/** Slack beyond a timeout: the server checks its request/header timeouts on an interval. */
export const SOCKET_SLACK_MS = 2_000;
/** "Immediate" protocol errors: answered or closed within this. */
const IMMEDIATE_MS = 1_000;

export function deadlineOf(governing: Governing, timeouts: SocketTimeouts): number {
  switch (governing) {
    case 'headers':
      return timeouts.headersMs + SOCKET_SLACK_MS;
    case 'request':
      return timeouts.requestMs + SOCKET_SLACK_MS;
    case 'keep-alive':
      return timeouts.keepAliveMs + SOCKET_SLACK_MS;
    case 'immediate':
      return IMMEDIATE_MS + SOCKET_SLACK_MS;
  }
}

const JSON_BODY = '{"query":{"queryType":"CurrentUser"}}';

/** The fixed cases; `authorization` is a valid Basic header, for the cases that need one. */
export function socketCases(host: string, authorization: string): SocketCase[] {
  const h = `Host: ${host}\r\n`;
  const auth = `Authorization: ${authorization}\r\n`;
  const json = 'Content-Type: application/json\r\n';
  const readmodel = `POST /api/readmodel HTTP/1.1\r\n${h}${auth}${json}`;
  const importNoAuth = `POST /api/import HTTP/1.1\r\n${h}${json}`;
  return [
    { name: 'headers never finished', steps: [`GET /healthz HTTP/1.1\r\n${h}`], governing: 'headers' },
    { name: 'request line only', steps: ['POST /api/import HTTP/1.1\r\n'], governing: 'headers' },
    {
      name: 'headers dripped a byte at a time (slowloris)',
      steps: [...`POST /api/readmodel HTTP/1.1\r\n${h}X-A: ${'a'.repeat(40)}\r\n`].flatMap((c) => [c, 100]),
      governing: 'headers',
    },
    {
      name: 'body shorter than Content-Length',
      steps: [`${readmodel}Content-Length: 100\r\n\r\n${JSON_BODY.slice(0, 10)}`],
      governing: 'request',
    },
    {
      name: 'body shorter than Content-Length, without credentials on /api/import',
      steps: [`${importNoAuth}Content-Length: 5000\r\n\r\n{"requestId":`],
      governing: 'request',
    },
    {
      name: 'body shorter than Content-Length, then FIN',
      steps: [`${readmodel}Content-Length: 100\r\n\r\n${JSON_BODY.slice(0, 10)}`],
      governing: 'request',
      endAfter: true,
    },
    {
      name: 'chunked without the final chunk',
      steps: [
        `${readmodel}Transfer-Encoding: chunked\r\n\r\n${JSON_BODY.length.toString(16)}\r\n${JSON_BODY}\r\n`,
      ],
      governing: 'request',
    },
    {
      name: 'chunked without the final chunk, without credentials on /api/import',
      steps: [`${importNoAuth}Transfer-Encoding: chunked\r\n\r\n5\r\n{"req\r\n`],
      governing: 'request',
    },
    {
      name: 'Expect: 100-continue, then no body',
      steps: [`${readmodel}Content-Length: ${JSON_BODY.length}\r\nExpect: 100-continue\r\n\r\n`],
      governing: 'request',
    },
    {
      name: 'a body dripped slower than the request timeout',
      steps: [
        `${readmodel}Content-Length: 200\r\n\r\n`,
        ...Array.from({ length: 40 }, () => [' ', 150]).flat(),
      ],
      governing: 'request',
    },
    {
      name: 'Content-Length and Transfer-Encoding both',
      steps: [`${readmodel}Content-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n`],
      governing: 'immediate',
    },
    {
      name: 'two different Content-Lengths',
      steps: [`${readmodel}Content-Length: 4\r\nContent-Length: 40\r\n\r\n{}{}`],
      governing: 'immediate',
    },
    {
      name: 'a negative Content-Length',
      steps: [`${readmodel}Content-Length: -1\r\n\r\n`],
      governing: 'immediate',
    },
    {
      name: 'a chunk size that is not hex',
      steps: [`${readmodel}Transfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n`],
      governing: 'immediate',
    },
    {
      name: 'a chunk longer than its size',
      steps: [`${readmodel}Transfer-Encoding: chunked\r\n\r\n2\r\n{"query":1}\r\n0\r\n\r\n`],
      governing: 'immediate',
    },
    {
      name: 'an absurd chunk size',
      steps: [`${readmodel}Transfer-Encoding: chunked\r\n\r\nffffffffffffffffff\r\n{}\r\n`],
      governing: 'immediate',
    },
    {
      name: 'Transfer-Encoding other than chunked',
      steps: [`${readmodel}Transfer-Encoding: gzip, identity\r\n\r\n{}`],
      governing: 'request',
    },
    {
      name: 'huge headers (64 KiB)',
      steps: [`GET /healthz HTTP/1.1\r\n${h}X-Big: ${'x'.repeat(64 * 1024)}\r\n\r\n`],
      governing: 'immediate',
    },
    {
      name: 'thousands of headers',
      steps: [`GET /healthz HTTP/1.1\r\n${h}${'X-N: 1\r\n'.repeat(4_000)}\r\n`],
      governing: 'immediate',
    },
    {
      name: 'a NUL in a header',
      steps: [`GET /healthz HTTP/1.1\r\n${h}X-A: a\u0000b\r\n\r\n`],
      governing: 'immediate',
    },
    {
      name: 'an obs-fold header',
      steps: [`GET /healthz HTTP/1.1\r\n${h}X-A: a\r\n b\r\n\r\n`],
      governing: 'immediate',
    },
    {
      name: 'a garbage request line',
      steps: ['\u0001\u0002GARBAGE / HTTP/9.9\r\n\r\n'],
      governing: 'immediate',
    },
    { name: 'HTTP/1.1 without Host', steps: ['GET /healthz HTTP/1.1\r\n\r\n'], governing: 'immediate' },
    {
      name: 'a request smuggled behind a Content-Length',
      steps: [
        `${readmodel}Content-Length: ${JSON_BODY.length}\r\n\r\n${JSON_BODY}GET /healthz HTTP/1.1\r\n${h}\r\n`,
      ],
      governing: 'immediate',
    },
    {
      name: 'an idle keep-alive connection after an answer',
      steps: [`GET /healthz HTTP/1.1\r\n${h}Connection: keep-alive\r\n\r\n`],
      governing: 'keep-alive',
      mustClose: true,
    },
    {
      name: 'a request body over BODY_LIMIT, sent in full',
      steps: [`${readmodel}Content-Length: ${2 * 1024 * 1024}\r\n\r\n`, Buffer.alloc(2 * 1024 * 1024, 0x20)],
      governing: 'request',
    },
  ];
}

/** Random truncations of valid requests: cut in the headers or in the body, with or without FIN. */
export function randomSocketCases(
  host: string,
  authorization: string,
  seed: number,
  count: number,
): SocketCase[] {
  const requests = [
    { path: '/api/readmodel', body: JSON_BODY },
    {
      path: '/api/command',
      body: '{"commandType":"CreateFantasyTeam","command":{"aggregateRootId":"0f6f6b52-3a8e-4c1d-9b7e-2d4c6a8e0f99","name":"x"}}',
    },
    {
      path: '/api/import',
      body: '{"requestId":"0f6f6b52-3a8e-4c1d-9b7e-2d4c6a8e0f98","importerType":"UserSeeding","importData":{"users":[]}}',
    },
    { path: '/api/auth/token', body: '{"grant_type":"password","username":"a@b.c","password":"x"}' },
  ];
  const arbitrary = fc.record({
    request: fc.constantFrom(...requests),
    withAuth: fc.boolean(),
    chunked: fc.boolean(),
    // Per mille of the request: fast-check's doubles crowd near 0, which would cut most at byte 1.
    cut: fc.integer({ min: 0, max: 999 }).map((permille) => permille / 1000),
    lie: fc.integer({ min: -3, max: 50 }),
    endAfter: fc.boolean(),
  });
  return fc.sample(arbitrary, { seed, numRuns: count }).map((drawn, i) => {
    const { path, body } = drawn.request;
    const framing = drawn.chunked
      ? `Transfer-Encoding: chunked\r\n\r\n${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\n`
      : `Content-Length: ${body.length + Math.max(0, drawn.lie)}\r\n\r\n${body}`;
    const head = `POST ${path} HTTP/1.1\r\nHost: ${host}\r\n${drawn.withAuth ? `Authorization: ${authorization}\r\n` : ''}Content-Type: application/json\r\n`;
    const whole = head + framing;
    const cutAt = Math.max(1, Math.floor(drawn.cut * whole.length));
    const headersEnd = whole.indexOf('\r\n\r\n') + 4;
    return {
      name: `random #${i}: ${path} ${drawn.chunked ? 'chunked' : `Content-Length +${Math.max(0, drawn.lie)}`} cut at ${cutAt}/${whole.length}${drawn.endAfter ? ' then FIN' : ''}`,
      steps: [whole.slice(0, cutAt)],
      governing: cutAt < headersEnd ? 'headers' : 'request',
      endAfter: drawn.endAfter,
    } satisfies SocketCase;
  });
}

/** Runs one case: writes its steps, then waits for an answer or a close until its deadline. */
export function runSocketCase(
  host: string,
  port: number,
  socketCase: SocketCase,
  timeouts: SocketTimeouts,
): Promise<SocketOutcome> {
  const deadlineMs = deadlineOf(socketCase.governing, timeouts);
  return new Promise((resolve) => {
    const started = Date.now();
    const socket = connect({ host, port });
    let received = '';
    let status: number | undefined;
    let answeredAfterMs: number | undefined;
    let finished = false;
    const finish = (closedAfterMs?: number) => {
      if (finished) return;
      finished = true;
      clearTimeout(timer);
      socket.destroy();
      const answered = answeredAfterMs !== undefined;
      const closed = closedAfterMs !== undefined;
      let problem: string | undefined;
      if (status !== undefined && status >= 500) problem = `answered ${status}`;
      else if (socketCase.mustClose ? !closed : !answered && !closed) {
        problem = socketCase.mustClose
          ? `the connection was still open after ${deadlineMs} ms`
          : `neither answered nor closed within ${deadlineMs} ms`;
      }
      resolve({
        name: socketCase.name,
        ...(status === undefined ? {} : { status }),
        ...(answered ? { answeredAfterMs } : {}),
        ...(closed ? { closedAfterMs } : {}),
        deadlineMs,
        ...(problem ? { problem } : {}),
      });
    };
    const timer = setTimeout(() => finish(), deadlineMs);
    socket.on('data', (chunk: Buffer) => {
      received += chunk.toString('latin1');
      if (answeredAfterMs === undefined) {
        const match = /^HTTP\/1\.[01] (\d{3})/.exec(received);
        if (match) {
          status = Number(match[1]);
          answeredAfterMs = Date.now() - started;
          if (!socketCase.mustClose && status !== 100) finish();
          if (status === 100) {
            // An interim answer: the final one is still owed.
            answeredAfterMs = undefined;
            status = undefined;
            received = received.replace(/^HTTP\/1\.1 100[^\r]*\r\n\r\n/, '');
          }
        }
      }
    });
    socket.on('error', () => finish(Date.now() - started));
    socket.on('close', () => finish(Date.now() - started));
    socket.on('connect', async () => {
      for (const step of socketCase.steps) {
        if (finished) return;
        if (typeof step === 'number') await new Promise((r) => setTimeout(r, step));
        else await new Promise<void>((r) => socket.write(step, () => r()));
      }
      if (socketCase.endAfter && !finished) socket.end();
    });
  });
}

/** Runs the cases `parallel` at a time. */
export async function runSocketCases(
  host: string,
  port: number,
  cases: readonly SocketCase[],
  timeouts: SocketTimeouts,
  parallel = 32,
): Promise<SocketOutcome[]> {
  const outcomes: SocketOutcome[] = [];
  for (let i = 0; i < cases.length; i += parallel) {
    const batch = cases.slice(i, i + parallel);
    outcomes.push(...(await Promise.all(batch.map((one) => runSocketCase(host, port, one, timeouts)))));
  }
  return outcomes;
}
