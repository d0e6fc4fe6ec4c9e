import { connect } from 'node:net';

import type { HttpTimeouts } from '../../../shared/config';
import { listen, type RunningServer } from '../../../shared/http/server';
import { createTestApp, type TestApp } from '../../helpers/app-fixture';

/**
 * Slow or silent clients (slowloris) over raw sockets against the real ingress on a real server:
 * each unfinished request is answered with a 408 or closed within its bound.
 * Small bounds keep the file fast; the slack covers a busy machine.
 */
const TIMEOUTS: HttpTimeouts = { requestTimeoutMs: 1_000, headersTimeoutMs: 500, keepAliveTimeoutMs: 300 };
const SLACK_MS = 2_000;
const PASSWORD = 'http-timeouts-password';
const BASIC = `Basic ${Buffer.from(`timeouts@example.com:${PASSWORD}`).toString('base64')}`;

interface Outcome {
  /** Everything the server sent. */
  readonly answer: string;
  /** When the server closed the connection, after the last byte was sent; null if it did not in time. */
  readonly closedAfterMs: number | null;
}

describe('Slow and unfinished requests on a real server', () => {
  let subject: TestApp;
  let server: RunningServer;

  beforeAll(async () => {
    subject = await createTestApp({
      HTTP_REQUEST_TIMEOUT_MS: String(TIMEOUTS.requestTimeoutMs),
      HTTP_HEADERS_TIMEOUT_MS: String(TIMEOUTS.headersTimeoutMs),
      HTTP_KEEP_ALIVE_TIMEOUT_MS: String(TIMEOUTS.keepAliveTimeoutMs),
    });
    await subject.createUser({ email: 'timeouts@example.com', password: PASSWORD, roles: ['Member'] });
    server = await listen(subject.app, 0, '127.0.0.1', subject.config.http);
  });
  afterAll(async () => {
    await server.close(1_000);
    await subject.services.importQueue.close();
    await subject.close();
  });

  /** Sends `parts` (waiting `gapMs` between them), then waits up to `giveUpMs` for the server to close. */
  function exchange(parts: readonly string[], giveUpMs: number, gapMs = 0): Promise<Outcome> {
    return new Promise((resolve, reject) => {
      const socket = connect(server.port, '127.0.0.1');
      let answer = '';
      let sentAt = 0;
      const giveUp = setTimeout(() => {
        socket.destroy();
        resolve({ answer, closedAfterMs: null });
      }, giveUpMs);
      socket.setEncoding('latin1');
      socket.on('data', (chunk: string) => (answer += chunk));
      socket.on('error', (error: NodeJS.ErrnoException) => {
        if (error.code !== 'ECONNRESET') reject(error);
      });
      socket.on('close', () => {
        clearTimeout(giveUp);
        resolve({ answer, closedAfterMs: Date.now() - sentAt });
      });
      socket.on('connect', async () => {
        for (const [i, part] of parts.entries()) {
          if (i > 0 && gapMs > 0) await new Promise((done) => setTimeout(done, gapMs));
          socket.write(part);
        }
        sentAt = Date.now();
      });
    });
  }

  /** Answered with a 408, or closed without an answer, within `boundMs` (plus the slack). */
  function expectCutOff(outcome: Outcome, boundMs: number) {
    expect(outcome.closedAfterMs).not.toBeNull();
    expect(outcome.closedAfterMs ?? Infinity).toBeLessThanOrEqual(boundMs + SLACK_MS);
    if (outcome.answer !== '') expect(outcome.answer).toMatch(/^HTTP\/1\.1 408 /);
  }

  const head = (path: string, headers: readonly string[]) =>
    [`POST ${path} HTTP/1.1`, 'Host: localhost', 'Content-Type: application/json', ...headers, '', ''].join(
      '\r\n',
    );

  it('When the headers never end, then a 408 within HTTP_HEADERS_TIMEOUT_MS', async () => {
    const outcome = await exchange(
      ['GET /healthz HTTP/1.1\r\nHost: localhost\r\nX-Slow: a'],
      TIMEOUTS.headersTimeoutMs + SLACK_MS,
    );
    expectCutOff(outcome, TIMEOUTS.headersTimeoutMs);
    expect(outcome.answer).toMatch(/^HTTP\/1\.1 408 /);
  });

  it('When a body is shorter than its Content-Length, then the connection is cut within HTTP_REQUEST_TIMEOUT_MS', async () => {
    const outcome = await exchange(
      [head('/api/readmodel', ['Content-Length: 100', `Authorization: ${BASIC}`]) + '{"query":'],
      TIMEOUTS.requestTimeoutMs + SLACK_MS,
    );
    expectCutOff(outcome, TIMEOUTS.requestTimeoutMs);
  });

  it('When an import without credentials has an unfinished body, then its 401 comes at once and the connection closes, without waiting for the body', async () => {
    const outcome = await exchange(
      [head('/api/import', ['Content-Length: 5000']) + '{"requestId":'],
      TIMEOUTS.requestTimeoutMs + SLACK_MS,
    );
    // Nothing is read for an anonymous caller: no need to wait for the request timeout.
    expect(outcome.answer).toMatch(/^HTTP\/1\.1 401 /);
    expect(outcome.answer).toMatch(/\r\nConnection: close\r\n/i);
    expect(outcome.closedAfterMs ?? Infinity).toBeLessThan(TIMEOUTS.requestTimeoutMs);
  });

  it.each([
    ['/api/import', [`Authorization: ${BASIC}`]],
    ['/api/readmodel', [`Authorization: ${BASIC}`]],
    ['/api/auth/token', []],
  ])(
    'When a chunked body to %s never sends its last chunk, then the connection is cut within HTTP_REQUEST_TIMEOUT_MS',
    async (path, headers) => {
      const outcome = await exchange(
        [head(path, ['Transfer-Encoding: chunked', ...headers]) + '5\r\n{"a":\r\n'],
        TIMEOUTS.requestTimeoutMs + SLACK_MS,
      );
      expectCutOff(outcome, TIMEOUTS.requestTimeoutMs);
    },
  );

  it('When a keep-alive connection stays idle after its answer, then it is closed within HTTP_KEEP_ALIVE_TIMEOUT_MS', async () => {
    const outcome = await exchange(
      ['GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n'],
      TIMEOUTS.keepAliveTimeoutMs + SLACK_MS,
    );
    expect(outcome.answer).toMatch(/^HTTP\/1\.1 200 /);
    expect(outcome.closedAfterMs).not.toBeNull();
    expect(outcome.closedAfterMs ?? Infinity).toBeLessThanOrEqual(TIMEOUTS.keepAliveTimeoutMs + SLACK_MS);
  });

  it('When a body arrives slowly but within the bound, then it is answered as usual', async () => {
    const body = JSON.stringify({ query: { queryType: 'CurrentUser' } });
    const outcome = await exchange(
      [
        head('/api/readmodel', [
          `Content-Length: ${body.length}`,
          `Authorization: ${BASIC}`,
          'Connection: close',
        ]),
        body.slice(0, 10),
        body.slice(10),
      ],
      TIMEOUTS.requestTimeoutMs + SLACK_MS,
      150,
    );
    expect(outcome.answer).toMatch(/^HTTP\/1\.1 200 /);
    expect(outcome.answer).toContain('timeouts@example.com');
  });
});
