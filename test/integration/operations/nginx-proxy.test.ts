/**
 * deploy/nginx.conf, loaded by Debian's nginx (1.22 on this machine) in front of a real ingress, and
 * requests through it as clients send them. What differs from the compose deployment, and only
 * that, is replaced in a copy; each replacement must match the shipped file exactly once, so a
 * change there fails here until this test follows it:
 * - the upstream `ingress:8080 resolve` and the `resolver` (Docker's DNS, re-resolved for scaling;
 *   `resolve` on a server needs nginx 1.27.3, compose runs 1.28) -> this test's ingress;
 * - the listen ports -> free loopback ports; the certificate paths -> a self-signed pair made here;
 * - the event stream's read timeout (1 h) -> 2 s, so that a stream open for longer proves that the
 *   heartbeat (SSE_HEARTBEAT_MS, 500 ms here) is what keeps it open.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { connect as tlsConnect } from 'node:tls';

import { Agent, fetch } from 'undici';

import { freePort } from '../../../scripts/lib/free-port';
import { createTestApp, type TestApp } from '../../helpers/app-fixture';
import { eventually, PROJECT_ROOT } from '../../helpers/processes';
import { replaceOnce } from '../../helpers/replace-once';
import { selfSignedCertificate } from '../../helpers/self-signed';
import { SseClient } from '../../helpers/sse-client';

const SHIPPED = readFileSync(path.join(PROJECT_ROOT, 'deploy', 'nginx.conf'), 'utf8');
const ADMIN = { email: 'proxy-admin@example.com', password: 'proxy admin password' };
const EVENTS_READ_TIMEOUT_S = 2;

/** The shipped configuration with this machine's addresses, certificate and a short stream timeout. */
function configForTest(ports: { upstream: number; http: number; https: number }, tlsDir: string): string {
  let conf = replaceOnce(SHIPPED, 'resolver 127.0.0.11 valid=10s ipv6=off;', '');
  conf = replaceOnce(conf, 'server ingress:8080 resolve;', `server 127.0.0.1:${ports.upstream};`);
  conf = replaceOnce(conf, 'listen 8080;', `listen 127.0.0.1:${ports.http};`);
  conf = replaceOnce(conf, 'listen 8443 ssl;', `listen 127.0.0.1:${ports.https} ssl;`);
  conf = replaceOnce(conf, '/etc/nginx/tls/cert.pem', path.join(tlsDir, 'cert.pem'));
  conf = replaceOnce(conf, '/etc/nginx/tls/key.pem', path.join(tlsDir, 'key.pem'));
  const events = conf.indexOf('location = /api/events');
  return (
    conf.slice(0, events) +
    replaceOnce(conf.slice(events), 'proxy_read_timeout 1h;', `proxy_read_timeout ${EVENTS_READ_TIMEOUT_S}s;`)
  );
}

/** nginx with `conf`, in the foreground, its pid, temp files and error log under `dir`. */
function nginxArgs(dir: string, test = false): string[] {
  return [
    ...(test ? ['-t'] : []),
    '-p',
    dir,
    '-c',
    path.join(dir, 'nginx.conf'),
    '-g',
    `pid ${path.join(dir, 'nginx.pid')}; error_log ${path.join(dir, 'error.log')};${test ? '' : ' daemon off;'}`,
  ];
}

describe('The reverse proxy (deploy/nginx.conf) in front of an ingress', () => {
  let subject: TestApp;
  let server: Server;
  let nginx: ChildProcess;
  let dir: string;
  let ca: string;
  let https: string;
  let http: number;
  let agent: Agent;
  let bearer: string;
  let basic: string;

  beforeAll(async () => {
    subject = await createTestApp({ TRUST_PROXY: 'loopback', SSE_HEARTBEAT_MS: '500' });
    await subject.createUser({ ...ADMIN, roles: ['Admin'] });
    server = subject.app.listen(0, '127.0.0.1');
    await once(server, 'listening');
    dir = mkdtempSync(path.join(tmpdir(), 'fts-nginx-'));
    const tlsDir = path.join(dir, 'tls');
    ca = selfSignedCertificate(tlsDir);
    http = await freePort();
    const httpsPort = await freePort();
    https = `https://127.0.0.1:${httpsPort}`;
    writeFileSync(
      path.join(dir, 'nginx.conf'),
      configForTest({ upstream: (server.address() as AddressInfo).port, http, https: httpsPort }, tlsDir),
    );
    nginx = spawn('nginx', nginxArgs(dir), { stdio: 'ignore' });
    await new Promise<void>((resolve, reject) => {
      nginx.once('spawn', () => resolve());
      nginx.once('error', (error) =>
        reject(
          new Error(`nginx did not start (apt-get install nginx; .ci/run installs it): ${error.message}`),
        ),
      );
    });
    agent = new Agent({ connect: { ca } });
    await eventually(async () => {
      try {
        return (await fetch(`${https}/healthz`, { dispatcher: agent })).status === 200;
      } catch {
        return false;
      }
    }, 15_000);
    const token = await fetch(`${https}/api/auth/token`, {
      dispatcher: agent,
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ grant_type: 'password', username: ADMIN.email, password: ADMIN.password }),
    });
    bearer = `Bearer ${((await token.json()) as { access_token: string }).access_token}`;
    basic = `Basic ${Buffer.from(`${ADMIN.email}:${ADMIN.password}`).toString('base64')}`;
  }, 60_000);

  afterAll(async () => {
    await agent?.close();
    if (nginx && nginx.exitCode === null && nginx.signalCode === null) {
      nginx.kill('SIGQUIT');
      await once(nginx, 'exit');
    }
    server?.closeAllConnections();
    await new Promise((resolve) => server?.close(resolve));
    await subject?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('When nginx -t reads the configuration, then it is valid', () => {
    const checked = spawnSync('nginx', nginxArgs(dir, true), { encoding: 'utf8' });
    expect(checked.stderr).toContain('test is successful');
    expect(checked.status).toBe(0);
  });

  it('When a client speaks TLS, then 1.2 or 1.3 is negotiated with the certificate, and 1.1 is refused', async () => {
    const { port } = new URL(https);
    const negotiate = (maxVersion: 'TLSv1.1' | 'TLSv1.3') =>
      new Promise<string>((resolve, reject) => {
        const socket = tlsConnect({
          host: '127.0.0.1',
          port: Number(port),
          ca,
          servername: 'localhost',
          maxVersion,
          minVersion: 'TLSv1',
        });
        socket.once('secureConnect', () => {
          resolve(socket.getProtocol() ?? '');
          socket.end();
        });
        socket.once('error', reject);
      });
    expect(['TLSv1.2', 'TLSv1.3']).toContain(await negotiate('TLSv1.3'));
    await expect(negotiate('TLSv1.1')).rejects.toThrow();
  });

  it('When a request comes over plain HTTP, then it is sent to HTTPS, and refused when it carries credentials', async () => {
    const get = (headers: Record<string, string>) =>
      new Promise<{ status: number; location?: string; body: string }>((resolve, reject) => {
        const req = httpRequest({ host: '127.0.0.1', port: http, path: '/api/readmodel', headers }, (res) => {
          let body = '';
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => (body += chunk));
          res.on('end', () =>
            resolve({
              status: res.statusCode ?? 0,
              ...(res.headers.location ? { location: res.headers.location } : {}),
              body,
            }),
          );
        });
        req.on('error', reject);
        req.end();
      });
    expect(await get({ host: 'api.example.com' })).toMatchObject({
      status: 308,
      location: 'https://api.example.com/api/readmodel',
    });
    const refused = await get({ host: 'api.example.com', authorization: basic });
    expect(refused.status).toBe(403);
    expect(refused.body).toContain('Consider the credentials just sent exposed');
  });

  it("When a client sends its own X-Forwarded-For and X-Request-Id, then the ingress sees the proxy's address and the id comes back", async () => {
    const requestId = randomUUID();
    const res = await fetch(`${https}/api/readmodel`, {
      dispatcher: agent,
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        authorization: bearer,
        'x-forwarded-for': '203.0.113.9',
        'x-request-id': requestId,
      },
      body: JSON.stringify({ query: { queryType: 'CurrentUser' } }),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-request-id')).toBe(requestId);
    await eventually(() => subject.logs.text.includes(requestId), 5_000);
    const access = subject.logs.text
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .find((line) => line.message === 'request finished' && JSON.stringify(line).includes(requestId));
    expect(access).toMatchObject({ clientAddress: '127.0.0.1' });
  });

  it("When an event stream stays open past the proxy's read timeout, then heartbeats keep it open and events arrive as written", async () => {
    const stream = await SseClient.connect(`${https}/api/events`, { authorization: bearer }, ca);
    try {
      expect(stream.status).toBe(200);
      const openedAt = Date.now();
      // Three read timeouts of the proxy: without the heartbeat it would have closed the stream.
      await stream.until(
        (client) => Date.now() - openedAt > 3 * EVENTS_READ_TIMEOUT_S * 1_000 && client.messages.length > 0,
        30_000,
        'heartbeats past the read timeout',
      );
      expect(stream.ended).toBe(false);
      expect(stream.messages.filter((message) => message.comments.length > 0).length).toBeGreaterThanOrEqual(
        3,
      );
      const teamId = randomUUID();
      const created = await fetch(`${https}/api/command`, {
        dispatcher: agent,
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: bearer },
        body: JSON.stringify({
          commandType: 'CreateFantasyTeam',
          command: { aggregateRootId: teamId, name: 'Proxy XI' },
        }),
      });
      expect(created.status).toBe(200);
      // Not buffered by the proxy: the event arrives while the stream stays open.
      await stream.until(
        (client) => client.events.some((event) => event.data?.includes(teamId) === true),
        10_000,
        'the event',
      );
      expect(stream.ended).toBe(false);
    } finally {
      stream.close();
    }
  });

  it("When a body is over the proxy's limit, then Node's fetch, curl and Python each read the 413 problem", async () => {
    const body = Buffer.alloc(5 * 1024 * 1024, 0x20);
    const viaFetch = await fetch(`${https}/api/readmodel`, {
      dispatcher: agent,
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: basic },
      body,
    });
    expect(viaFetch.status).toBe(413);
    expect(viaFetch.headers.get('content-type')).toBe('application/problem+json');
    const problem = (await viaFetch.json()) as { status: number; title: string; traceId: string };
    expect(problem).toMatchObject({ status: 413, title: 'Payload Too Large' });
    expect(problem.traceId).toBe(viaFetch.headers.get('x-request-id'));

    const bodyFile = path.join(dir, 'body.json');
    writeFileSync(bodyFile, body);
    const curl = spawnSync(
      'curl',
      [
        '-s',
        '--cacert',
        path.join(dir, 'tls', 'cert.pem'),
        '-o',
        '-',
        '-w',
        '\n%{http_code}',
        '-X',
        'POST',
        '-H',
        'content-type: application/json',
        '-H',
        `authorization: ${basic}`,
        '--data-binary',
        `@${bodyFile}`,
        `${https}/api/readmodel`,
      ],
      { encoding: 'utf8' },
    );
    expect(curl.stdout.trim().split('\n').at(-1)).toBe('413');
    expect(curl.stdout).toContain('"title":"Payload Too Large"');

    const python = spawnSync(
      'python3',
      [
        '-c',
        [
          'import ssl, sys, urllib.request, urllib.error',
          'ctx = ssl.create_default_context(cafile=sys.argv[2])',
          "req = urllib.request.Request(sys.argv[1], data=open(sys.argv[3], 'rb').read(), method='POST', headers={'content-type': 'application/json', 'authorization': sys.argv[4]})",
          'try:\n  urllib.request.urlopen(req, context=ctx)\nexcept urllib.error.HTTPError as e:\n  print(e.code, e.read().decode())',
        ].join('\n'),
        `${https}/api/readmodel`,
        path.join(dir, 'tls', 'cert.pem'),
        bodyFile,
        basic,
      ],
      { encoding: 'utf8' },
    );
    expect(python.stderr).toBe('');
    expect(python.stdout).toMatch(/^413 \{.*"title":"Payload Too Large"/);
  });

  it('When the ingress refuses a body it has not read (401 before authentication), then the client reads it through the proxy', async () => {
    const res = await fetch(`${https}/api/readmodel`, {
      dispatcher: agent,
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: Buffer.alloc(900 * 1024, 0x20),
    });
    expect(res.status).toBe(401);
    await res.arrayBuffer();
  });
  // Last: it fills the per-address limits that every other request here counts against.
  it("When one address sends more than the proxy's limits allow, then the excess gets the 429 problem with Retry-After", async () => {
    // 800 at once: past limit_conn (64 connections) and limit_req (200 a second, bursts of 400).
    const answers = await Promise.all(
      Array.from({ length: 800 }, async () => {
        const res = await fetch(`${https}/healthz`, { dispatcher: agent });
        return { status: res.status, headers: res.headers, text: await res.text() };
      }),
    );
    const refused = answers.filter(({ status }) => status === 429);
    expect(refused.length).toBeGreaterThan(0);
    expect(answers.filter(({ status }) => status !== 200 && status !== 429)).toEqual([]);
    const [first] = refused;
    expect(first?.headers.get('content-type')).toBe('application/problem+json');
    expect(first?.headers.get('retry-after')).toBe('1');
    expect(JSON.parse(first?.text ?? '{}')).toMatchObject({
      status: 429,
      title: 'Too Many Requests',
      traceId: first?.headers.get('x-request-id'),
    });
  });
});
