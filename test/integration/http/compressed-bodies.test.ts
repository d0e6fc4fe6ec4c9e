import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';

import request from 'supertest';

import { PROBLEMS } from '../../../shared/http/problem';
import { jsonBody } from '../../../shared/http/request-body';
import { createTestApp, type TestApp } from '../../helpers/app-fixture';

/**
 * superagent would serialise a Buffer as JSON under a JSON content type; this sends the bytes as
 * they are (its typings say a serializer returns a string, but it writes a Buffer unchanged).
 */
const asIs = (body: Buffer): string => body as unknown as string;

describe('Compressed request bodies (Content-Encoding)', () => {
  let subject: TestApp;

  beforeAll(async () => {
    subject = await createTestApp(
      { BODY_LIMIT: '64kb' },
      {
        extraRoutes: (routes) => {
          routes.add('post', '/test/echo', jsonBody(64 * 1024), (req, res) => {
            res.json({ received: req.body as unknown });
          });
        },
      },
    );
  });
  afterAll(() => subject.close());

  const post = (encoding: string, body: Buffer) =>
    request(subject.app)
      .post('/test/echo')
      .set('Content-Type', 'application/json')
      .set('Content-Encoding', encoding)
      .serialize(asIs)
      .send(body);

  const json = Buffer.from('{"query":{"queryType":"CurrentUser"}}');

  it.each([
    ['gzip', gzipSync(json)],
    ['deflate', deflateSync(json)],
    ['br', brotliCompressSync(json)],
  ])('When a body is %s-encoded, then the route receives it decoded', async (encoding, body) => {
    const res = await post(encoding, body);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ received: { query: { queryType: 'CurrentUser' } } });
  });

  it.each(['gzip', 'deflate', 'br'])(
    'When a %s body is corrupt, then the answer is the 400 problem, not a 500',
    async (encoding) => {
      const res = await post(encoding, Buffer.from('this is not compressed at all'));
      expect(res.status).toBe(400);
      expect(res.body).toEqual({
        ...PROBLEMS[400],
        status: 400,
        errors: { $: ['The request body could not be read.'] },
        traceId: res.headers['x-request-id'],
      });
    },
  );

  it('When a small gzip body inflates beyond BODY_LIMIT (a zip bomb), then the answer is the 413 problem', async () => {
    const bomb = gzipSync(Buffer.alloc(4 * 1024 * 1024, ' '));
    expect(bomb.length).toBeLessThan(16 * 1024);
    const res = await post('gzip', bomb);
    expect(res.status).toBe(413);
    expect(res.body).toMatchObject({ ...PROBLEMS[413], status: 413 });
  });
});
