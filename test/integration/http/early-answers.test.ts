/**
 * An answer the service sends before it has read a request's body (401 before authentication, 413
 * on the declared length) reaches the clients integrators use: Node's `fetch`, the typed client,
 * curl and Python's standard library. Each sends bodies of 1 MB over the route's limit, 5 MB and
 * 50 MB to the four body-taking endpoints, with and without credentials, on a fresh connection and
 * on one that already served a request, and must read the status and the problem every time
 * (ADR 0039: the connection closes in stages, RFC 9112 section 9.6).
 *
 * EARLY_ANSWER_RUNS (default 1) repeats every case; the tally in the note ran 20.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';

import { FantasyTeamClient } from '../../../clients/typescript/src';
import { TOKEN_BODY_LIMIT_BYTES } from '../../../shared/http/request-body';
import { listen, type RunningServer } from '../../../shared/http/server';
import { createTestApp, type TestApp } from '../../helpers/app-fixture';
import type { SendCase } from '../../helpers/clients/send-bodies';
import { basicAuth } from '../../helpers/http-client';

const MB = 1024 * 1024;
const RUNS = Number(process.env.EARLY_ANSWER_RUNS ?? 1);
const MEMBER = { email: 'early-answers@example.com', password: 'early-answers-password-1' };
const PYTHON_CLIENT = path.join(__dirname, '../../helpers/clients/send_bodies.py');
const NODE_CLIENT = path.join(__dirname, '../../helpers/clients/send-bodies.ts');
const CASE_HEADER = 'x-test-case';

type ClientName = 'fetch' | 'typed client' | 'curl' | 'python';
type EndpointName = 'readmodel' | 'command' | 'import' | 'token';

interface Case {
  readonly id: string;
  readonly client: ClientName;
  readonly endpoint: EndpointName;
  readonly signedIn: boolean;
  readonly keepAlive: boolean;
  readonly bytes: number;
  readonly expectedStatus: number;
}

/** What a client made of the answer: its status and body, or the error it got instead. */
type Outcome = { readonly status: number; readonly body: string } | { readonly error: string };

describe('Answers sent before the body was read', () => {
  let subject: TestApp;
  let server: RunningServer;
  let baseUrl: string;
  let token: string;
  let scratch: string;
  /** Per case id: whether its request came on a connection that had served one before. */
  const reusedConnection = new Map<string, boolean>();

  beforeAll(async () => {
    // The import byte budget off: 5 MB imports are read and answered 400 every time, not 429 after three.
    subject = await createTestApp({ IMPORT_BYTES_PER_ACCOUNT_PER_MINUTE: '0' });
    await subject.createUser({ ...MEMBER, roles: ['Member'] });
    server = await listen(subject.app, 0, '127.0.0.1', subject.config.http);
    baseUrl = `http://127.0.0.1:${server.port}`;
    const served = new WeakMap<Socket, number>();
    server.server.on('request', (req: IncomingMessage) => {
      const before = served.get(req.socket) ?? 0;
      served.set(req.socket, before + 1);
      const id = req.headers[CASE_HEADER];
      if (typeof id === 'string') reusedConnection.set(id, before > 0);
    });
    const client = new FantasyTeamClient({ baseUrl, credentials: MEMBER });
    token = (await client.signIn()).access_token;
    scratch = await mkdtemp(path.join(tmpdir(), 'early-answers-'));
  });
  afterAll(async () => {
    await server?.close(1_000);
    await subject?.close();
    if (scratch) await rm(scratch, { recursive: true, force: true });
  });

  const endpoints: Record<EndpointName, { path: string; limit: () => number; contentType: string }> = {
    readmodel: {
      path: '/api/readmodel',
      limit: () => subject.config.bodyLimitBytes,
      contentType: 'application/json',
    },
    command: {
      path: '/api/command',
      limit: () => subject.config.bodyLimitBytes,
      contentType: 'application/json',
    },
    import: {
      path: '/api/import',
      limit: () => subject.config.importBodyLimitBytes,
      contentType: 'application/json',
    },
    token: {
      path: '/api/auth/token',
      limit: () => TOKEN_BODY_LIMIT_BYTES,
      contentType: 'application/x-www-form-urlencoded',
    },
  };

  /** Without credentials the three API routes answer 401 before reading; the token route reads the body (its 8 KB limit). */
  const expectedStatus = (endpoint: EndpointName, signedIn: boolean, bytes: number): number => {
    if (!signedIn && endpoint !== 'token') return 401;
    return bytes > endpoints[endpoint].limit() ? 413 : 400;
  };

  /**
   * Signed in with Basic where the route takes it (the password check runs before the refusal, so
   * more of the body is on its way by then), with the Bearer token on commands.
   */
  const headersOf = (item: Case): Record<string, string> => ({
    'Content-Type': endpoints[item.endpoint].contentType,
    [CASE_HEADER]: item.id,
    ...(item.signedIn
      ? {
          Authorization:
            item.endpoint === 'command' ? `Bearer ${token}` : basicAuth(MEMBER.email, MEMBER.password),
        }
      : {}),
  });

  /** The typed client signs in as the headers do; without credentials it carries a token that is not one. */
  const typedClientAccess = (item: Case): Pick<SendCase, 'credentials' | 'token'> => {
    if (item.endpoint === 'token')
      return { credentials: { email: MEMBER.email, password: 'a'.repeat(item.bytes) } };
    if (!item.signedIn) return { token: 'not-a-token' };
    return item.endpoint === 'command' ? { token } : { credentials: MEMBER };
  };

  /** curl's bodies, one file per size. */
  const bodyFiles = new Map<number, string>();
  const bodyFile = async (bytes: number): Promise<string> => {
    let file = bodyFiles.get(bytes);
    if (!file) {
      file = path.join(scratch, `body-${bytes}`);
      await writeFile(file, Buffer.alloc(bytes, 'a'));
      bodyFiles.set(bytes, file);
    }
    return file;
  };

  /** Node's fetch or the typed client, from a process of their own (test/helpers/clients/send-bodies.ts). */
  const byNode = async (items: readonly Case[]): Promise<Outcome[]> => {
    const input: SendCase[] = items.map((item) => ({
      client: item.client as SendCase['client'],
      baseUrl,
      path: endpoints[item.endpoint].path,
      endpoint: item.endpoint,
      headers: headersOf(item),
      bytes: item.bytes,
      keepAlive: item.keepAlive,
      ...typedClientAccess(item),
    }));
    const { code, stdout, stderr } = await run(
      process.execPath,
      ['--import', 'tsx', NODE_CLIENT],
      JSON.stringify(input),
    );
    return linesOf(items, { code, stdout, stderr });
  };

  const byCurl = async (item: Case): Promise<Outcome> => {
    const file = await bodyFile(item.bytes);
    const post = [
      '-s',
      '-X',
      'POST',
      '--data-binary',
      `@${file}`,
      ...Object.entries(headersOf(item)).flatMap(([name, value]) => ['-H', `${name}: ${value}`]),
      '-w',
      '\n%{http_code}',
      `${baseUrl}${endpoints[item.endpoint].path}`,
    ];
    // One invocation, two transfers: curl reuses the connection of the first for the second.
    const args = item.keepAlive ? ['-s', '-o', '/dev/null', `${baseUrl}/healthz`, '--next', ...post] : post;
    const { code, stdout, stderr } = await run('curl', args);
    const cut = stdout.lastIndexOf('\n');
    const status = Number(stdout.slice(cut + 1));
    if (code !== 0 || !status) return { error: `curl exited ${code}: ${stderr.trim()}` };
    return { status, body: stdout.slice(0, cut) };
  };

  /** Python's cases in one interpreter: its start-up is paid once. */
  const byPython = async (items: readonly Case[]): Promise<Outcome[]> => {
    const input = items.map((item) => ({
      url: `${baseUrl}${endpoints[item.endpoint].path}`,
      headers: headersOf(item),
      bytes: item.bytes,
      fill: 'a',
      keepAlive: item.keepAlive,
    }));
    return linesOf(items, await run('python3', [PYTHON_CLIENT], JSON.stringify(input)));
  };

  const casesOf = (client: ClientName): Case[] => {
    const all: Case[] = [];
    for (let runIndex = 0; runIndex < RUNS; runIndex++) {
      for (const endpoint of Object.keys(endpoints) as EndpointName[]) {
        for (const signedIn of [true, false]) {
          for (const keepAlive of [false, true]) {
            for (const bytes of [endpoints[endpoint].limit() + MB, 5 * MB, 50 * MB]) {
              all.push({
                id: `${client}/${endpoint}/${signedIn ? 'signed-in' : 'anonymous'}/${keepAlive ? 'keep-alive' : 'fresh'}/${bytes}/${runIndex}`,
                client,
                endpoint,
                signedIn,
                keepAlive,
                bytes,
                expectedStatus: expectedStatus(endpoint, signedIn, bytes),
              });
            }
          }
        }
      }
    }
    return all;
  };

  /** Each case's outcome beside what it should be; mismatches are listed together. */
  const failuresOf = (items: readonly Case[], outcomes: readonly Outcome[]): string[] =>
    items.flatMap((item, index) => {
      const outcome = outcomes[index] as Outcome;
      const wrong = (what: string) => [`${item.id}: ${what}`];
      if ('error' in outcome) return wrong(`no answer (${outcome.error})`);
      if (outcome.status !== item.expectedStatus)
        return wrong(`answered ${outcome.status}, not ${item.expectedStatus}`);
      if (reusedConnection.get(item.id) !== item.keepAlive) {
        return wrong(`sent on a ${reusedConnection.get(item.id) ? 'reused' : 'fresh'} connection`);
      }
      // The import's 401 has no body (spec 4.6); every other answer is the problem of its status.
      if (item.endpoint === 'import' && outcome.status === 401)
        return outcome.body === '' ? [] : wrong('a 401 body');
      try {
        const problem = JSON.parse(outcome.body) as { status?: number };
        return problem.status === item.expectedStatus ? [] : wrong(`a problem of status ${problem.status}`);
      } catch {
        return wrong(`a body that is not the problem: ${outcome.body.slice(0, 80)}`);
      }
    });

  const sequentially = async (items: readonly Case[], send: (item: Case) => Promise<Outcome>) => {
    const outcomes: Outcome[] = [];
    for (const item of items) outcomes.push(await send(item));
    return outcomes;
  };

  /** A client process's answer lines, one per case. */
  const linesOf = (
    items: readonly Case[],
    { code, stdout, stderr }: Awaited<ReturnType<typeof run>>,
  ): Outcome[] => {
    const lines = stdout.trim().split('\n').filter(Boolean);
    if (code !== 0 || lines.length !== items.length) {
      throw new Error(`the client exited ${code} after ${lines.length} of ${items.length} cases: ${stderr}`);
    }
    return lines.map((line) => JSON.parse(line) as Outcome);
  };

  it.each<[ClientName, (items: readonly Case[]) => Promise<Outcome[]>]>([
    ['fetch', byNode],
    ['typed client', byNode],
    ['curl', (items) => sequentially(items, byCurl)],
    ['python', byPython],
  ])(
    'When %s sends bodies the service refuses before reading them, then it reads every answer',
    async (client, send) => {
      const items = casesOf(client);
      const outcomes = await send(items);
      expect(failuresOf(items, outcomes)).toEqual([]);
    },
    600_000,
  );
});

function run(command: string, args: readonly string[], input?: string) {
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve, reject) => {
    const child = spawn(command, args, { stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(input);
  });
}
