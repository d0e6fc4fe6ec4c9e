/**
 * Sends each case of a JSON list on stdin with Node's `fetch` or with the typed client, from a
 * process of its own (the service's event loop never paces the sender), one JSON line per case:
 * {"status", "body"}, or {"error"} when no answer was read.
 *
 *   node --import tsx test/helpers/clients/send-bodies.ts
 *
 * A case: {"client": "fetch" | "typed client", "baseUrl", "path", "headers", "bytes",
 * "keepAlive", "endpoint", "credentials"?, "token"?}. Each case has a connection pool of its own
 * with one connection: a keep-alive case first GETs /healthz on it, so the POST reuses it (fetch's
 * shared pool may open a new connection for a POST while another stands idle).
 */
import { Agent } from 'undici';

import { FantasyApiError, FantasyTeamClient } from '../../../clients/typescript/src';

export interface SendCase {
  readonly client: 'fetch' | 'typed client';
  readonly baseUrl: string;
  readonly path: string;
  readonly endpoint: 'readmodel' | 'command' | 'import' | 'token';
  /** Sent as they are by fetch; the typed client sets its own but for the test's case header. */
  readonly headers: Readonly<Record<string, string>>;
  readonly bytes: number;
  readonly keepAlive: boolean;
  readonly credentials?: { readonly email: string; readonly password: string };
  /** The token endpoint's case: the password is `bytes` long (built here, not sent through stdin). */
  readonly padPassword?: boolean;
  readonly token?: string;
}

export type SendOutcome = { readonly status: number; readonly body: string } | { readonly error: string };

const CASE_HEADER = 'x-test-case';

async function poolFor(item: SendCase): Promise<Agent> {
  const pool = new Agent({ connections: 1 });
  if (item.keepAlive) await (await fetch(`${item.baseUrl}/healthz`, { dispatcher: pool })).arrayBuffer();
  return pool;
}

async function byFetch(item: SendCase, pool: Agent): Promise<SendOutcome> {
  const answer = await fetch(`${item.baseUrl}${item.path}`, {
    method: 'POST',
    headers: item.headers,
    body: Buffer.alloc(item.bytes, 'a'),
    dispatcher: pool,
  });
  return { status: answer.status, body: await answer.text() };
}

/** The typed client builds its JSON itself: a string field makes it as long as the case's body. */
async function byTypedClient(item: SendCase, pool: Agent): Promise<SendOutcome> {
  let calls = 0;
  const filler = 'a'.repeat(item.bytes);
  const client = new FantasyTeamClient({
    baseUrl: item.baseUrl,
    ...(item.credentials
      ? { credentials: item.padPassword ? { ...item.credentials, password: filler } : item.credentials }
      : {}),
    ...(item.token ? { token: item.token } : {}),
    fetch: (input, init) => {
      calls += 1;
      const request = new Request(input, init);
      request.headers.set(CASE_HEADER, item.headers[CASE_HEADER] ?? '');
      return fetch(request, { dispatcher: pool });
    },
  });
  const send = {
    readmodel: () => client.query('CurrentUser', { filler }),
    command: () => client.command({ commandType: 'CreateFantasyTeam', teamName: filler } as never),
    import: () =>
      client.import({ importerType: 'UserSeeding', importData: { users: [{ email: filler }] } } as never),
    token: () => client.signIn(),
  }[item.endpoint];
  try {
    await send();
    return { error: 'the client answered a success' };
  } catch (error) {
    if (calls !== 1) return { error: `the client sent ${calls} requests` };
    if (!(error instanceof FantasyApiError)) throw error;
    return { status: error.status, body: error.body === undefined ? '' : JSON.stringify(error.body) };
  }
}

function describeError(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = (error as Error & { cause?: { code?: string; message?: string } }).cause;
  return cause ? `${error.message}: ${cause.code ?? cause.message}` : error.message;
}

async function main(): Promise<void> {
  let input = '';
  for await (const chunk of process.stdin) input += String(chunk);
  for (const item of JSON.parse(input) as SendCase[]) {
    const pool = await poolFor(item);
    let outcome: SendOutcome;
    try {
      outcome = await (item.client === 'fetch' ? byFetch : byTypedClient)(item, pool);
    } catch (error) {
      outcome = { error: describeError(error) };
    } finally {
      await pool.close();
    }
    process.stdout.write(`${JSON.stringify(outcome)}\n`);
  }
}

void main();
