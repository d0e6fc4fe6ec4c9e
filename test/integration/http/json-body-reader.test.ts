import request from 'supertest';

import { listen, type RunningServer } from '../../../shared/http/server';
import { createTestApp, type TestApp } from '../../helpers/app-fixture';
import { echoJsonBodyRoute } from '../../helpers/echo-route';
import { CUT, rawExchange } from '../../helpers/raw-http';

/**
 * The direct reader of plain JSON bodies (`application/json`, UTF-8, not compressed) answers every
 * body as body-parser does: the same bodies are sent as plain JSON (read directly) and with a
 * quoted charset parameter (which the direct reader leaves to body-parser), and must get the same
 * answer. Real HTTP on the real app.
 */

const LIMIT_BYTES = 1024;
const DIRECT = 'application/json';
const THROUGH_BODY_PARSER = 'application/json; charset="utf-8"';

const BODIES: readonly [string, Buffer][] = [
  ['an object', Buffer.from('{"query":{"queryType":"CurrentUser"},"skip":0,"take":10}')],
  ['an array', Buffer.from('[1,"two",{"three":3}]')],
  ['blanks before the object', Buffer.from(' \t\r\n{"a":1}')],
  ['a byte-order mark before the object', Buffer.from('\ufeff{"a":"é€😀"}')],
  ['a byte-order mark alone', Buffer.from('\ufeff')],
  ['blanks alone', Buffer.from('   ')],
  ['a string', Buffer.from('"text"')],
  ['a number', Buffer.from('42')],
  ['null', Buffer.from('null')],
  ['malformed JSON', Buffer.from('{"query": ')],
  ['JSON with trailing garbage', Buffer.from('{"a":1} x')],
  [
    'bytes that are not UTF-8 inside a string',
    Buffer.concat([Buffer.from('{"a":"'), Buffer.from([0xff, 0xfe]), Buffer.from('"}')]),
  ],
  ['nesting at the limit', Buffer.from('['.repeat(64) + ']'.repeat(64))],
  ['nesting one level too deep', Buffer.from('['.repeat(65) + ']'.repeat(65))],
  ['a body over the limit', Buffer.from(JSON.stringify({ a: 'x'.repeat(LIMIT_BYTES) }))],
];

/** superagent would serialise a Buffer as JSON under a JSON content type; this sends the bytes as they are. */
const asIs = (body: Buffer): string => body as unknown as string;

/** The answer without what differs between any two requests (the trace id). */
function comparable(res: request.Response): unknown {
  const { traceId: _traceId, ...rest } = (res.body ?? {}) as Record<string, unknown>;
  return { status: res.status, type: res.headers['content-type'], body: rest };
}

describe('the direct JSON body reader', () => {
  let subject: TestApp;

  beforeAll(async () => {
    subject = await createTestApp({}, { extraRoutes: echoJsonBodyRoute('/test/read-json', LIMIT_BYTES) });
  });
  afterAll(() => subject.close());

  it.each(BODIES)(
    'When the body is %s, then plain JSON is answered as body-parser answers it',
    async (_name, body) => {
      const direct = await request(subject.app).post('/test/read-json').type(DIRECT).send(asIs(body));
      const parsed = await request(subject.app)
        .post('/test/read-json')
        .type(THROUGH_BODY_PARSER)
        .send(asIs(body));

      expect(comparable(direct)).toEqual(comparable(parsed));
    },
  );

  describe('over a socket', () => {
    let server: RunningServer;
    let port: number;

    beforeAll(async () => {
      server = await listen(subject.app, 0, '127.0.0.1');
      port = server.port;
    });
    afterAll(() => server.close(1_000));

    /** Sends the headers, then the body in two pieces a moment apart; resolves with the raw answer. */
    function sendInPieces(body: Buffer, declaredLength = body.length, cut = false): Promise<string> {
      const half = Math.floor(body.length / 2);
      return rawExchange(port, [
        `POST /test/read-json HTTP/1.1\r\nHost: x\r\nContent-Type: ${DIRECT}\r\nContent-Length: ${declaredLength}\r\nConnection: close\r\n\r\n`,
        body.subarray(0, half),
        50,
        cut ? CUT : body.subarray(half),
      ]);
    }

    it('When the body arrives in pieces after the headers, then it is read whole', async () => {
      const answer = await sendInPieces(Buffer.from('{"query":{"queryType":"CurrentUser"},"skip":0}'));

      expect(answer).toMatch(/^HTTP\/1\.1 200 /);
      expect(answer).toContain('{"received":{"query":{"queryType":"CurrentUser"},"skip":0}}');
    });

    it('When the client cuts the connection in the middle of the body, then the service goes on answering others', async () => {
      await sendInPieces(Buffer.from('{"a":"0123456789"}'), 100, true);

      const after = await request(server.server).post('/test/read-json').type(DIRECT).send({ a: 1 });
      expect(after.status).toBe(200);
      expect(after.body).toEqual({ received: { a: 1 } });
    });
  });
});
