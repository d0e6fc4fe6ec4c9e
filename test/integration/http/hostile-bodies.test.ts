import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { connect } from 'node:net';
import zlib from 'node:zlib';

import request from 'supertest';

import { PROBLEMS } from '../../../shared/http/problem';
import { BODY_MESSAGES, MAX_JSON_DEPTH, TOKEN_BODY_LIMIT_BYTES } from '../../../shared/http/request-body';
import { createTestApp, type TestApp } from '../../helpers/app-fixture';
import { echoJsonBodyRoute } from '../../helpers/echo-route';

/**
 * Bodies from a hostile caller: nothing of an anonymous caller's body is read, inflated or parsed;
 * JSON deeper than MAX_JSON_DEPTH never reaches JSON.parse; a compressed body stops inflating at
 * the route's limit. Real HTTP (supertest, and raw sockets where a body must stay unfinished) on a
 * real Redis.
 */

const MB = 1024 * 1024;
const ECHO_LIMIT_BYTES = MB;
const IMPORT_LIMIT_BYTES = 16 * MB; // IMPORT_BODY_LIMIT's default
const MEMBER = { email: 'body-member@example.com', password: 'body-member-password-1' };
const basic = `Basic ${Buffer.from(`${MEMBER.email}:${MEMBER.password}`).toString('base64')}`;

/** superagent would serialise a Buffer as JSON under a JSON content type; this sends the bytes as they are. */
const asIs = (body: Buffer): string => body as unknown as string;

/** `depth` arrays inside each other: `[[[...]]]`. */
const nested = (depth: number): string => '['.repeat(depth) + ']'.repeat(depth);

/**
 * A brotli body that inflates to `inflatedBytes` of blanks from a few dozen bytes: nothing in it
 * for the shape scan to refuse (`[`s are refused as too deep after 65 bytes), only its size.
 */
function brotliBomb(inflatedBytes: number, fill = ' '): Buffer {
  return zlib.brotliCompressSync(Buffer.alloc(inflatedBytes, fill), {
    params: {
      [zlib.constants.BROTLI_PARAM_QUALITY]: 5,
      [zlib.constants.BROTLI_PARAM_LGWIN]: 24,
      [zlib.constants.BROTLI_PARAM_SIZE_HINT]: inflatedBytes,
    },
  });
}

/**
 * Counts what every brotli decompression stream the service creates puts out (body-parser calls
 * zlib.createBrotliDecompress on each br body). The real stream does the work; this only listens.
 */
function watchBrotli(): { readonly streams: number; readonly inflatedBytes: number; restore(): void } {
  const original = Object.getOwnPropertyDescriptor(zlib, 'createBrotliDecompress') as PropertyDescriptor;
  const real = zlib.createBrotliDecompress.bind(zlib);
  const seen = { streams: 0, inflatedBytes: 0 };
  const watching: typeof zlib.createBrotliDecompress = (options) => {
    const stream = real(options);
    seen.streams += 1;
    stream.on('data', (chunk: Buffer) => {
      seen.inflatedBytes += chunk.length;
    });
    return stream;
  };
  // Node's zlib exports are read-only but configurable: replaced here, put back by restore().
  Object.defineProperty(zlib, 'createBrotliDecompress', { ...original, value: watching });
  return {
    get streams() {
      return seen.streams;
    },
    get inflatedBytes() {
      return seen.inflatedBytes;
    },
    restore: () => Object.defineProperty(zlib, 'createBrotliDecompress', original),
  };
}

/**
 * JSON.parse calls made by body-parser on text of at least `minLength` characters (the test's own
 * contract check parses request bodies too; those are not the service's).
 */
function watchLargeParses(minLength: number): { readonly count: number; restore(): void } {
  const realParse = JSON.parse.bind(JSON);
  let count = 0;
  const spy = jest.spyOn(JSON, 'parse').mockImplementation((text: string, reviver) => {
    if (typeof text === 'string' && text.length >= minLength && new Error().stack?.includes('body-parser')) {
      count += 1;
    }
    return realParse(text, reviver) as unknown;
  });
  return {
    get count() {
      return count;
    },
    restore: () => spy.mockRestore(),
  };
}

interface RawAnswer {
  /** The whole answer, head and body, as received. */
  readonly text: string;
  readonly bodyBytesSent: number;
}

/**
 * Sends a request head declaring `declaredLength` body bytes, then only `firstBytes` of the body,
 * and never the rest. Resolves once the server has answered and closed the connection; rejects if
 * it does neither while the body is unfinished (a server that waits for the body to parse it).
 */
function unfinishedBody(
  port: number,
  head: { path: string; headers: Record<string, string>; declaredLength: number },
  firstBytes: Buffer,
  waitMs = 15_000,
): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => {
      socket.destroy();
      reject(
        new Error(
          `no answer and no close within ${waitMs} ms while the body was unfinished; got: ${Buffer.concat(chunks).toString().split('\r\n')[0] ?? ''}`,
        ),
      );
    }, waitMs);
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    socket.on('end', () => {
      clearTimeout(timer);
      socket.destroy();
      resolve({ text: Buffer.concat(chunks).toString('latin1'), bodyBytesSent: firstBytes.length });
    });
    const lines = [
      `POST ${head.path} HTTP/1.1`,
      'Host: 127.0.0.1',
      `Content-Length: ${head.declaredLength}`,
      ...Object.entries(head.headers).map(([name, value]) => `${name}: ${value}`),
    ];
    socket.write(`${lines.join('\r\n')}\r\n\r\n`);
    socket.write(firstBytes);
  });
}

function statusOf(answer: RawAnswer): number {
  return Number(/^HTTP\/1\.1 (\d{3})/.exec(answer.text)?.[1]);
}

function headerOf(answer: RawAnswer, name: string): string | undefined {
  const head = answer.text.slice(0, answer.text.indexOf('\r\n\r\n'));
  const line = head.split('\r\n').find((l) => l.toLowerCase().startsWith(`${name.toLowerCase()}:`));
  return line?.slice(name.length + 1).trim();
}

function bodyOf(answer: RawAnswer): string {
  return answer.text.slice(answer.text.indexOf('\r\n\r\n') + 4);
}

describe('Hostile request bodies', () => {
  let subject: TestApp;
  let server: Server;
  let port: number;
  let bearer: string;

  beforeAll(async () => {
    subject = await createTestApp({}, { extraRoutes: echoJsonBodyRoute('/test/echo', ECHO_LIMIT_BYTES) });
    await subject.createUser({ ...MEMBER, roles: ['Member'] });
    const token = await request(subject.app)
      .post('/api/auth/token')
      .send({ grant_type: 'password', username: MEMBER.email, password: MEMBER.password });
    bearer = `Bearer ${(token.body as { access_token: string }).access_token}`;
    server = createServer(subject.app);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    await subject.close();
  });

  describe('an anonymous caller', () => {
    const TWELVE_MB = 12 * MB;

    it.each([
      ['/api/import', 'no credentials', undefined],
      ['/api/import', 'a token that is not one', 'Bearer not-a-token'],
      ['/api/readmodel', 'no credentials', undefined],
      ['/api/command', 'a token that is not one', 'Bearer not-a-token'],
    ])(
      'When a 12 MB body to %s (%s) has only begun to arrive, then the 401 comes at once and the connection closes without the rest being read',
      async (path, _case, authorization) => {
        const answer = await unfinishedBody(
          port,
          {
            path,
            declaredLength: TWELVE_MB,
            headers: {
              'Content-Type': 'application/json',
              ...(authorization ? { Authorization: authorization } : {}),
            },
          },
          Buffer.from('[[[[[[[[[[[[[[[['),
        );

        expect(statusOf(answer)).toBe(401);
        expect(headerOf(answer, 'Connection')).toBe('close');
        if (path === '/api/import') {
          expect(bodyOf(answer)).toBe(''); // the import's 401 has an empty body (spec 4.6)
        } else {
          expect(headerOf(answer, 'Content-Type')).toMatch(/^application\/problem\+json/);
          expect(JSON.parse(bodyOf(answer))).toMatchObject({ ...PROBLEMS[401], status: 401 });
        }
      },
    );

    it('When a whole 12 MB nested-array body is sent to POST /api/import, then it gets its 401 and JSON.parse never sees it', async () => {
      const parses = watchLargeParses(MB);
      try {
        const res = await request(subject.app)
          .post('/api/import')
          .set('Content-Type', 'application/json')
          .send(nested(TWELVE_MB / 2));
        expect(res.status).toBe(401);
        expect(res.text).toBe('');
        expect(res.headers.connection).toBe('close');
      } finally {
        parses.restore();
      }
      expect(parses.count).toBe(0);
    });

    it('When a brotli bomb (64 MB inflated, a few dozen bytes sent) comes without credentials, then it gets its 401 and nothing is inflated', async () => {
      const bomb = brotliBomb(64 * MB);
      expect(bomb.length).toBeLessThan(100);
      const brotli = watchBrotli();
      try {
        for (const path of ['/api/import', '/api/readmodel', '/api/command']) {
          const res = await request(subject.app)
            .post(path)
            .set('Content-Type', 'application/json')
            .set('Content-Encoding', 'br')
            .serialize(asIs)
            .send(bomb);
          expect(res.status).toBe(401);
        }
      } finally {
        brotli.restore();
      }
      expect(brotli.streams).toBe(0);
      expect(brotli.inflatedBytes).toBe(0);
    });
  });

  describe('a compressed body', () => {
    /** POSTs a brotli bomb of `inflatedBytes` as the authenticated caller, counting what was inflated. */
    const sendBrotliBomb = async (path: string, inflatedBytes: number) => {
      const brotli = watchBrotli();
      try {
        const res = await request(subject.app)
          .post(path)
          .set('Authorization', basic)
          .set('Content-Type', 'application/json')
          .set('Content-Encoding', 'br')
          .serialize(asIs)
          .send(brotliBomb(inflatedBytes));
        return { res, brotli };
      } finally {
        brotli.restore();
      }
    };

    it('When an authenticated caller sends a brotli bomb (64 MB inflated) to POST /api/import, then the answer is the 413 problem and inflation stopped at the 16 MB limit', async () => {
      const { res, brotli } = await sendBrotliBomb('/api/import', 64 * MB);
      expect(res.status).toBe(413);
      expect(res.body).toMatchObject({
        ...PROBLEMS[413],
        status: 413,
        detail: `The request body is larger than ${IMPORT_LIMIT_BYTES} bytes allowed.`,
      });
      expect(brotli.streams).toBe(1);
      expect(brotli.inflatedBytes).toBeGreaterThan(IMPORT_LIMIT_BYTES);
      // One decompression chunk or a few past the limit, never the 64 MB.
      expect(brotli.inflatedBytes).toBeLessThan(IMPORT_LIMIT_BYTES + MB);
    });

    it('When an authenticated caller sends a brotli bomb of nested arrays, then it is refused as too deep within the first inflated chunk', async () => {
      const brotli = watchBrotli();
      let res: request.Response;
      try {
        res = await request(subject.app)
          .post('/api/import')
          .set('Authorization', basic)
          .set('Content-Type', 'application/json')
          .set('Content-Encoding', 'br')
          .serialize(asIs)
          .send(brotliBomb(64 * MB, '['));
      } finally {
        brotli.restore();
      }
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ errors: { $: [BODY_MESSAGES.tooDeep] } });
      expect(brotli.inflatedBytes).toBeLessThan(MB);
    });

    it('When an authenticated caller sends a brotli bomb (16 MB inflated) to POST /api/readmodel, then the 413 problem comes after at most BODY_LIMIT was inflated', async () => {
      const { res, brotli } = await sendBrotliBomb('/api/readmodel', 16 * MB);
      expect(res.status).toBe(413);
      expect(res.body).toMatchObject({ ...PROBLEMS[413], status: 413 });
      expect(brotli.inflatedBytes).toBeLessThan(subject.config.bodyLimitBytes + MB);
    });

    it.each(['zstd', 'compress', 'gzip, br'])(
      'When the Content-Encoding is %s (not one accepted), then the answer is the 400 problem naming the accepted ones',
      async (encoding) => {
        const res = await request(subject.app)
          .post('/test/echo')
          .set('Content-Type', 'application/json')
          .set('Content-Encoding', encoding)
          .serialize(asIs)
          .send(encoding === 'zstd' ? zlib.zstdCompressSync(Buffer.from('{"a":1}')) : Buffer.from('{"a":1}'));
        expect(res.status).toBe(400);
        expect(res.body).toEqual({
          ...PROBLEMS[400],
          status: 400,
          errors: { $: [BODY_MESSAGES.encoding(encoding)] },
          traceId: res.headers['x-request-id'],
        });
      },
    );
    it('When a JSON body declares a charset other than UTF-8, then the answer is the 400 problem (the depth scan reads UTF-8 only)', async () => {
      const res = await request(subject.app)
        .post('/test/echo')
        .set('Content-Type', 'application/json; charset=utf-16le')
        .serialize(asIs)
        .send(Buffer.from('{"a":[1]}', 'utf16le'));
      expect(res.status).toBe(400);
      expect(res.body).toEqual({
        ...PROBLEMS[400],
        status: 400,
        errors: { $: [BODY_MESSAGES.notUtf8] },
        traceId: res.headers['x-request-id'],
      });
    });
  });

  describe('nesting depth', () => {
    const tooDeep = (res: request.Response) => ({
      ...PROBLEMS[400],
      status: 400,
      errors: { $: [`The request body is nested deeper than ${MAX_JSON_DEPTH} levels.`] },
      traceId: res.headers['x-request-id'],
    });

    it('When a body is nested exactly 64 levels deep, then the route receives it parsed; at 65 levels, the 400 problem', async () => {
      const atLimit = JSON.parse(nested(MAX_JSON_DEPTH)) as unknown;
      const accepted = await request(subject.app)
        .post('/test/echo')
        .set('Content-Type', 'application/json')
        .send(nested(MAX_JSON_DEPTH));
      expect(accepted.status).toBe(200);
      expect(accepted.body).toEqual({ received: atLimit });

      const refused = await request(subject.app)
        .post('/test/echo')
        .set('Content-Type', 'application/json')
        .send(nested(MAX_JSON_DEPTH + 1));
      expect(refused.status).toBe(400);
      expect(refused.body).toEqual(tooDeep(refused));
    });

    it('When brackets and escaped quotes sit inside strings, then they do not count as nesting', async () => {
      const body = { text: `\\"${'['.repeat(200)}"{{{`, list: [[['x']]] };
      const res = await request(subject.app).post('/test/echo').send(body);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ received: body });
    });

    it('When an object is nested 65 levels deep inside an envelope, then every route that reads a body refuses it with the 400 problem', async () => {
      let deep: unknown = 1;
      for (let i = 0; i < MAX_JSON_DEPTH; i++) deep = { d: deep }; // 64 objects, 65 with the envelope
      const answers = [
        await request(subject.app)
          .post('/api/readmodel')
          .set('Authorization', basic)
          .send({ query: { queryType: 'CurrentUser' }, deep }),
        await request(subject.app)
          .post('/api/command')
          .set('Authorization', bearer)
          .send({ commandType: 'CreateFantasyTeam', command: { deep } }),
        await request(subject.app)
          .post('/api/import')
          .set('Authorization', basic)
          .send({ importerType: 'UserSeeding', importData: { deep } }),
        await request(subject.app)
          .post('/api/auth/token')
          .send({ grant_type: 'password', username: MEMBER.email, password: MEMBER.password, deep }),
      ];
      for (const res of answers) {
        expect(res.status).toBe(400);
        expect(res.body).toEqual(tooDeep(res));
      }
    });

    it('When a 12 MB nested-array body comes from an authenticated caller, then it is refused as too deep without JSON.parse seeing it', async () => {
      const parses = watchLargeParses(MB);
      let res: request.Response;
      try {
        res = await request(subject.app)
          .post('/api/import')
          .set('Authorization', basic)
          .set('Content-Type', 'application/json')
          .send(nested(6 * MB));
      } finally {
        parses.restore();
      }
      expect(res.status).toBe(400);
      expect(res.body).toEqual(tooDeep(res));
      expect(parses.count).toBe(0);
    });
  });

  describe('the token endpoint', () => {
    it('When a token request body is over 8 KB, then the answer is the 413 problem', async () => {
      const res = await request(subject.app)
        .post('/api/auth/token')
        .send({
          grant_type: 'password',
          username: MEMBER.email,
          password: MEMBER.password,
          scope: 'x'.repeat(TOKEN_BODY_LIMIT_BYTES),
        });
      expect(res.status).toBe(413);
      expect(res.body).toMatchObject({
        ...PROBLEMS[413],
        status: 413,
        detail: `The request body is larger than ${TOKEN_BODY_LIMIT_BYTES} bytes allowed.`,
      });
    });

    it('When a token request declares a 12 MB body, then the 413 comes at once and the connection closes without it being read', async () => {
      const answer = await unfinishedBody(
        port,
        {
          path: '/api/auth/token',
          declaredLength: 12 * MB,
          headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
        },
        Buffer.from('grant_type=password&username='),
      );
      expect(statusOf(answer)).toBe(413);
      expect(headerOf(answer, 'Connection')).toBe('close');
      expect(JSON.parse(bodyOf(answer))).toMatchObject({ ...PROBLEMS[413], status: 413 });
    });

    it('When a token request is form-encoded or JSON and small, then it is still read', async () => {
      const form = await request(subject.app)
        .post('/api/auth/token')
        .type('form')
        .send({ grant_type: 'password', username: MEMBER.email, password: MEMBER.password });
      const json = await request(subject.app)
        .post('/api/auth/token')
        .send({ grant_type: 'password', username: MEMBER.email, password: MEMBER.password });
      for (const res of [form, json]) {
        expect(res.status).toBe(200);
        expect(res.body).toMatchObject({ token_type: 'Bearer' });
      }
    });
  });

  describe('metrics', () => {
    it('When an authenticated request is answered, then its operation label still comes from its body', async () => {
      const labels = { route: '/api/readmodel', operation: 'CurrentUser', status: '200' };
      const count = async () => {
        const text = await subject.metrics.registry.metrics();
        return text
          .split('\n')
          .filter(
            (line) =>
              line.startsWith('fts_http_request_duration_seconds_count{') &&
              Object.entries(labels).every(([name, value]) => line.includes(`${name}="${value}"`)),
          )
          .reduce((sum, line) => sum + Number(line.split(' ').pop()), 0);
      };
      const before = await count();
      const res = await request(subject.app)
        .post('/api/readmodel')
        .set('Authorization', basic)
        .send({ query: { queryType: 'CurrentUser' } });
      expect(res.status).toBe(200);
      expect(await count()).toBe(before + 1);
    });
  });
});
