import request from 'supertest';

import { listen, type RunningServer } from '../../../shared/http/server';
import { createTestApp, type TestApp } from '../../helpers/app-fixture';
import { rawExchange } from '../../helpers/raw-http';

/**
 * Review finding (issue 22, shared/http/request-body.ts readDirectly): the direct JSON reader's
 * fast path (the whole body already buffered when the reader runs, the usual case after
 * authentication awaited) calls next() synchronously right after req.read(), before the stream
 * has emitted 'end'. The Bull Board's own express.json() (mounted after ours, bull-board.ts)
 * then finds the request not finished (on-finished: complete but still `readable`), reads the
 * drained stream again, and fails with "request size did not match content length". Before the
 * change body-parser had consumed the stream to its 'end', so the board's parser skipped it.
 * The same request gets a different answer depending on whether its body was already buffered.
 */
const PASSWORD = 'bull-board-test-password';
const basic = (email: string) => `Basic ${Buffer.from(`${email}:${PASSWORD}`).toString('base64')}`;
const RETRY_FAILED = '/admin/queues/api/queues/imports/retry/failed';

describe('Bull Board behind the direct JSON reader', () => {
  let subject: TestApp;
  let server: RunningServer;
  let port: number;

  beforeAll(async () => {
    subject = await createTestApp();
    await subject.createUser({ email: 'admin@example.com', password: PASSWORD, roles: ['Admin'] });
    server = await listen(subject.app, 0, '127.0.0.1');
    port = server.port;
  });
  afterAll(async () => {
    await server.close(1_000);
    await subject.close();
  });

  /** One write: request line, headers and body together, so the body is buffered before the reader runs. */
  function sendAtOnce(method: string, path: string, body: string): Promise<string> {
    return rawExchange(port, [
      `${method} ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: ${basic('admin@example.com')}\r\n` +
        `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    ]);
  }

  it('When an Admin sends a board action with a JSON body, then the board answers it itself (as without a body)', async () => {
    const withoutBody = await request(subject.app)
      .put(RETRY_FAILED)
      .set('Authorization', basic('admin@example.com'));
    expect(withoutBody.status).toBe(405);
    expect(withoutBody.body).toEqual({ error: { key: 'ERRORS.QUEUE_READ_ONLY' } });

    const answer = await sendAtOnce('PUT', RETRY_FAILED, '{}');
    expect(answer).toMatch(/^HTTP\/1\.1 405 /);
    expect(answer).toContain('ERRORS.QUEUE_READ_ONLY');
    expect(answer).not.toContain('request size did not match content length');
  });
});
