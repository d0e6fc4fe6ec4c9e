import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

import { basicAuthorization, FantasyTeamClient } from '../../clients/typescript/src';
import { retryAfterSeconds, retryingFetch } from '../../clients/typescript/src/retry';

/** A loopback server answering the scripted statuses in turn (then 200), counting requests. */
async function scriptedServer(answers: readonly { status: number; retryAfter?: string }[]) {
  const bodies: string[] = [];
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      bodies.push(body);
      const answer = answers[bodies.length - 1] ?? { status: 200 };
      if (answer.retryAfter !== undefined) res.setHeader('Retry-After', answer.retryAfter);
      res.statusCode = answer.status;
      res.end(JSON.stringify({ attempt: bodies.length }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/readmodel`;
  return { url, bodies, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

function post(url: string): Request {
  return new Request(url, { method: 'POST', body: '{"query":{"queryType":"CurrentUser"}}' });
}

describe('The typed client: retries of 503 with Retry-After', () => {
  it('When a 503 says Retry-After, then the same request is sent again, body included, until it succeeds', async () => {
    const server = await scriptedServer([
      { status: 503, retryAfter: '0' },
      { status: 503, retryAfter: '0' },
    ]);
    try {
      const response = await retryingFetch(fetch)(post(server.url));
      expect(response.status).toBe(200);
      expect(server.bodies).toEqual(Array(3).fill('{"query":{"queryType":"CurrentUser"}}'));
    } finally {
      await server.close();
    }
  });

  it('When the 503s go on, then the client stops after maxRetries and answers the last 503', async () => {
    const server = await scriptedServer(Array(5).fill({ status: 503, retryAfter: '0' }));
    try {
      const response = await retryingFetch(fetch, { maxRetries: 2 })(post(server.url));
      expect(response.status).toBe(503);
      expect(server.bodies).toHaveLength(3);
    } finally {
      await server.close();
    }
  });

  it('When a 503 has no Retry-After, or one longer than maxDelaySeconds, then it is answered at once', async () => {
    const server = await scriptedServer([{ status: 503 }, { status: 503, retryAfter: '3600' }]);
    try {
      expect((await retryingFetch(fetch)(post(server.url))).status).toBe(503);
      expect((await retryingFetch(fetch, { maxDelaySeconds: 30 })(post(server.url))).status).toBe(503);
      expect(server.bodies).toHaveLength(2);
    } finally {
      await server.close();
    }
  });

  it('When Retry-After is a date, then it counts the seconds until then', () => {
    const now = Date.parse('2026-11-24T10:00:00Z');
    expect(retryAfterSeconds('Tue, 24 Nov 2026 10:00:05 GMT', now)).toBe(5);
    expect(retryAfterSeconds('7', now)).toBe(7);
    expect(retryAfterSeconds('soon', now)).toBeUndefined();
  });
});

describe('The typed client: commands resent after a 503', () => {
  it('When a command given requestId null meets a 503, then every attempt carries one and the same requestId (found by the security review)', async () => {
    const server = await scriptedServer([{ status: 503, retryAfter: '0' }]);
    try {
      const client = new FantasyTeamClient({ baseUrl: new URL(server.url).origin, token: 'a-token' });
      await client
        .command({
          commandType: 'LinkFantasyTeam',
          requestId: null,
          command: {
            aggregateRootId: '3f2b8c1e-6d4a-4f7b-9c2e-1a5d7e9f0b3c',
            fantasyTeamExternalId: 1,
            fantasyUserId: 2,
          },
        })
        .catch(() => undefined);
      const ids = server.bodies.map((body) => (JSON.parse(body) as { requestId?: unknown }).requestId);
      expect(ids).toHaveLength(2);
      expect(typeof ids[0]).toBe('string');
      expect(new Set(ids).size).toBe(1);
    } finally {
      await server.close();
    }
  });
});

describe('The typed client: Basic credentials', () => {
  it('When the password is not ASCII, then it is sent as UTF-8 (RFC 7617), where btoa alone would throw', () => {
    const header = basicAuthorization('anna@example.com', 'Grüße 管理者');
    expect(Buffer.from(header.slice('Basic '.length), 'base64').toString('utf8')).toBe(
      'anna@example.com:Grüße 管理者',
    );
    expect(() => btoa('Grüße 管理者')).toThrow();
  });
});
