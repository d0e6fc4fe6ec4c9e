import { randomBytes, randomUUID } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { gzipSync } from 'node:zlib';

import { Webhook } from 'standardwebhooks';

import { freePort } from '../scripts/lib/free-port';
import { ImportClient, type ImportItem } from './lib/import-client';
import { percentile, positiveNumberFromEnv } from './lib/load';
import { markdownTable } from './lib/markdown-table';
import { cpuSeconds } from './lib/process-cost';
import {
  ensureBuilt,
  scratchDir,
  type ServerProcess,
  stopAll,
  stopAllOnInterrupt,
  track,
} from './lib/processes';
import { machineInfo } from './lib/report';
import {
  basicAuthorization,
  type BenchService,
  commandOrThrow,
  createMember,
  forEachConcurrently,
  issueToken,
  JSON_HEADERS,
  sleep,
  startService,
} from './lib/service';

/**
 * `npm run bench:mixed-soak` (issue 43): what an integrator's long mixed session does to a fresh
 * command's `minVersion` read. One ingress (READ_WAIT_MS=10000, so the read's time is the lag) and
 * one worker (projections, imports, webhooks) on a private Redis, a webhook receiver here that
 * answers 500 to the first attempt of each event and 200 after, and for BENCH_MIX_SECONDS (240)
 * rounds of scenarios, one after the other, through HTTP only: token and Basic checks, read-model
 * queries, hostile and oversized bodies, user and player imports (High and Normal, dry runs, row
 * errors), the rating input across seasons, a Member creating 100 teams, account changes (passwords,
 * roles, disable/enable, erasure and re-registration), webhook deliveries of links and unlinks, and an
 * event stream resumed by Last-Event-ID. Every request's status is checked: a wrong one stops the run,
 * naming its scenario.
 *
 * Beside the rounds, a probe every BENCH_PROBE_MS (250): the Admin creates a team, links it, and reads
 * it back with `minVersion` = the link's version; the time from the link's answer to the read's is the
 * sample (a 503 PROJECTION_BEHIND, or more than 2,000 ms, is a failure: the default READ_WAIT_MS). Every
 * 500 ms the worker's /metrics (METRICS_PORT) gives the projector's lag per projection and its pass
 * durations, and /proc the processes' CPU. Prints a summary and writes it as JSON in the scratch dir.
 * Settings: BENCH_MIX_SECONDS, BENCH_PROBE_MS, BENCH_MIX_USERS (users per round's High UserSeeding, 300).
 */

const MIX_SECONDS = positiveNumberFromEnv('BENCH_MIX_SECONDS', 240);
const PROBE_EVERY_MS = positiveNumberFromEnv('BENCH_PROBE_MS', 250);
const USERS_PER_ROUND = positiveNumberFromEnv('BENCH_MIX_USERS', 300);
const METRICS_EVERY_MS = 500;
/** A probe read slower than the default READ_WAIT_MS would have been answered PROJECTION_BEHIND. */
const SLOW_MS = 2_000;
/** The ingress waits this long for a minVersion read, so that the read's time measures the lag. */
const READ_WAIT_MS = 10_000;
const IMPORT_TIMEOUT_MS = 180_000;
const DELIVERY_TIMEOUT_MS = 120_000;
const STREAM_TIMEOUT_MS = 15_000;
const RATING_PLAYERS = 5;
const WEBHOOK_TEAMS = 5;
const MEMBER_TEAMS = 100;
const RUN_TAG = randomBytes(3).toString('hex');

const SCENARIOS = [
  'auth',
  'readmodel',
  'hostile',
  'imports',
  'ratings',
  'member-teams',
  'accounts',
  'webhooks',
  'event-stream',
] as const;
type ScenarioName = (typeof SCENARIOS)[number];
/** What is running: a scenario, or the set-up before the rounds and the drain after them. */
type Phase = ScenarioName | 'setup' | 'drain';

const started = performance.now();
function log(message: string): void {
  process.stderr.write(`[mixed-soak] ${new Date().toISOString().slice(11, 23)} ${message}\n`);
}

// ---------------------------------------------------------------------------------------------
// HTTP as an integrator sends it, every status checked and tallied under the running scenario.

interface Answer {
  readonly status: number;
  readonly text: string;
  readonly body: unknown;
  readonly headers: Headers;
}

interface RequestOptions {
  readonly method?: string;
  /** Sent as JSON (content-type application/json). */
  readonly json?: unknown;
  /** Sent as it is, with `headers`' content-type. */
  readonly raw?: string | Buffer;
  readonly auth?: string;
  readonly headers?: Readonly<Record<string, string>>;
}

/** The run's state that scenarios share. */
interface Mix {
  readonly service: BenchService;
  readonly base: string;
  readonly adminBasic: string;
  adminBearer: string;
  readonly imports: ImportClient;
  readonly receiver: Receiver;
  phase: Phase;
  round: number;
  /** phase -> "what status" -> count. */
  readonly tallies: Map<Phase, Map<string, number>>;
  /** "phase: what" -> each answer's time (ms). */
  readonly latencies: Map<string, number[]>;
  readonly serviceAccount: { readonly email: string; readonly basic: string };
  readonly subscriptionId: string;
  lastImportJobId: string;
  readonly readTeam: string;
  readonly ratingTeam: string;
  readonly streamTeam: Team;
  readonly webhookTeams: Team[];
  readonly ratingPlayers: Player[];
  nextLinkId: number;
  nextPlayerId: number;
  /** Each round's rating check: how long until the rating input showed the round's stats. */
  readonly ratingVisibleMs: number[];
  /** Each webhook scenario's events: command answer to the 200 delivery, and the attempts it took. */
  readonly deliveries: { readonly ms: number; readonly attempts: number }[];
}

interface Team {
  readonly id: string;
  linked: boolean;
}

interface Player {
  readonly platformId: string;
  readonly feedId: number;
  readonly fantasyId: number;
}

function tally(mix: Mix, what: string): void {
  const counts = mix.tallies.get(mix.phase) ?? new Map<string, number>();
  counts.set(what, (counts.get(what) ?? 0) + 1);
  mix.tallies.set(mix.phase, counts);
}

/** Sends one request and checks its status against `expected`; throws naming `what` otherwise. */
async function call(
  mix: Mix,
  what: string,
  urlPath: string,
  options: RequestOptions,
  expected: number | readonly number[],
): Promise<Answer> {
  const method = options.method ?? (options.json !== undefined || options.raw !== undefined ? 'POST' : 'GET');
  const headers: Record<string, string> = {
    ...(options.json !== undefined ? JSON_HEADERS : {}),
    ...(options.auth ? { authorization: options.auth } : {}),
    ...options.headers,
  };
  let response: Response;
  const sent = performance.now();
  try {
    response = await fetch(`${mix.base}${urlPath}`, {
      method,
      headers,
      body: options.json !== undefined ? JSON.stringify(options.json) : options.raw,
      signal: AbortSignal.timeout(60_000),
    });
  } catch (error) {
    tally(mix, `${what} no answer`);
    throw new Error(`${what}: ${method} ${urlPath} got no answer: ${String(error)}`);
  }
  const text = await response.text();
  const times = mix.latencies.get(`${mix.phase}: ${what}`) ?? [];
  times.push(performance.now() - sent);
  mix.latencies.set(`${mix.phase}: ${what}`, times);
  let body: unknown = text;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {
    // Not JSON: kept as text.
  }
  tally(mix, `${what} ${response.status}`);
  const allowed = typeof expected === 'number' ? [expected] : expected;
  if (!allowed.includes(response.status))
    throw new Error(
      `${what}: ${method} ${urlPath} answered ${response.status}, expected ${allowed.join(' or ')}: ${text.slice(0, 600)}`,
    );
  return { status: response.status, text, body, headers: response.headers };
}

function readModel(
  mix: Mix,
  what: string,
  auth: string,
  body: Record<string, unknown>,
  expected: number | readonly number[] = 200,
): Promise<Answer> {
  return call(mix, what, '/api/readmodel', { json: body, auth }, expected);
}

/** A command by Bearer `auth`: its answer, and its `version` (NaN when refused as expected). */
async function command(
  mix: Mix,
  auth: string,
  commandType: string,
  body: Record<string, unknown>,
  expected: number | readonly number[] = 200,
): Promise<{ version: number; body: Record<string, unknown> }> {
  const answer = await call(
    mix,
    commandType,
    '/api/command',
    { json: { commandType, command: body }, auth },
    expected,
  );
  const fields = (answer.body ?? {}) as Record<string, unknown>;
  return { version: Number(fields.version), body: fields };
}

async function signIn(
  mix: Mix,
  what: string,
  email: string,
  password: string,
  expected = 200,
): Promise<string> {
  const answer = await call(
    mix,
    what,
    '/api/auth/token',
    { json: { grant_type: 'password', username: email, password } },
    expected,
  );
  return `Bearer ${String((answer.body as { access_token?: string }).access_token)}`;
}

function results<T>(answer: Answer): T[] {
  return (answer.body as { results?: T[] } | null)?.results ?? [];
}

function check(condition: boolean, message: string): void {
  if (!condition) throw new Error(message);
}

function basic(email: string, password: string): string {
  return `Basic ${Buffer.from(`${email}:${password}`).toString('base64')}`;
}

function password(): string {
  return `pw-${randomBytes(12).toString('base64url')}`;
}

/** Submits an import; answers the import once it has run (a Pending one is polled until it has). */
async function importAndWait(
  mix: Mix,
  what: string,
  body: Record<string, unknown>,
  expectedStatus: ImportItem['status'] | 'dry-run',
): Promise<Record<string, unknown>> {
  const answer = await call(
    mix,
    what,
    '/api/import',
    { json: { requestId: randomUUID(), ...body }, auth: mix.adminBasic },
    200,
  );
  let item = answer.body as ImportItem & Record<string, unknown>;
  if (expectedStatus === 'dry-run') {
    check(
      item.dryRun !== undefined,
      `${what}: a dry run answered without dryRun: ${answer.text.slice(0, 400)}`,
    );
    return item;
  }
  mix.lastImportJobId = item.importJobId;
  const deadline = Date.now() + IMPORT_TIMEOUT_MS;
  while (item.status === 'Pending') {
    if (Date.now() > deadline) throw new Error(`${what}: still Pending after ${IMPORT_TIMEOUT_MS} ms`);
    await sleep(200);
    item = (await mix.imports.result(item.importJobId)) as ImportItem & Record<string, unknown>;
    tally(mix, `${what} GetImportJobResult 200`);
  }
  check(
    item.status === expectedStatus,
    `${what}: the import ended ${item.status}, expected ${expectedStatus}: ${JSON.stringify(item).slice(0, 600)}`,
  );
  return item;
}

function rowErrorCodes(item: Record<string, unknown>): string[] {
  return ((item.rowErrors ?? []) as { code: string }[]).map((row) => row.code);
}

function newPlayers(mix: Mix, count: number): Player[] {
  return Array.from({ length: count }, () => {
    const id = mix.nextPlayerId++;
    return { platformId: randomUUID(), feedId: 1_000_000 + id, fantasyId: 2_000_000 + id };
  });
}

function playerRow(player: Player, rating: number, price: number): Record<string, unknown> {
  return {
    ...player,
    feedFullName: `Feed ${player.feedId}`,
    leaguePlayerId: `LP-${player.feedId}`,
    platformFullName: `Player ${player.feedId}`,
    stats: { rating, price, fantasyPositions: [1, 2] },
  };
}

/** Link when unlinked, unlink when linked; the answered version. */
async function toggle(mix: Mix, auth: string, team: Team): Promise<number> {
  const id = mix.nextLinkId++;
  const { version } = team.linked
    ? await command(mix, auth, 'UnlinkFantasyTeam', { aggregateRootId: team.id, unlinkReason: 'mixed soak' })
    : await command(mix, auth, 'LinkFantasyTeam', {
        aggregateRootId: team.id,
        fantasyTeamExternalId: 5_000_000 + id,
        fantasyUserId: 6_000_000 + id,
      });
  team.linked = !team.linked;
  return version;
}

// ---------------------------------------------------------------------------------------------
// The webhook receiver: 500 to the first attempt of each event, 200 to every later one.

interface DeliveredEvent {
  readonly attempts: number;
  readonly at: number;
}

class Receiver {
  readonly attempts = new Map<string, number>();
  /** `<aggregateId>:<version>` -> the event's 200 delivery. */
  readonly delivered = new Map<string, DeliveredEvent>();
  requests = 0;
  badSignatures = 0;
  private verifier: Webhook | undefined;
  private readonly server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      this.requests += 1;
      const body = Buffer.concat(chunks).toString('utf8');
      const id = String(req.headers['webhook-id'] ?? '');
      const attempt = (this.attempts.get(id) ?? 0) + 1;
      this.attempts.set(id, attempt);
      if (this.verifier) {
        try {
          this.verifier.verify(body, req.headers as Record<string, string>);
        } catch {
          this.badSignatures += 1;
        }
      }
      if (attempt === 1) {
        res.writeHead(500).end();
        return;
      }
      try {
        const { data } = JSON.parse(body) as { data: { aggregateId: string; version: number } };
        const key = `${data.aggregateId}:${data.version}`;
        if (!this.delivered.has(key)) this.delivered.set(key, { attempts: attempt, at: performance.now() });
      } catch {
        // Not an event: counted in requests only.
      }
      res.writeHead(200).end();
    });
  });

  /** The subscription's signing secret: every request is verified with it from now on. */
  set secret(secret: string) {
    this.verifier = new Webhook(secret);
  }

  async start(): Promise<string> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    track({
      stop: () =>
        new Promise<void>((resolve) => {
          this.server.close(() => resolve());
          this.server.closeAllConnections();
        }),
    });
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/hooks`;
  }

  get failedFirstAttempts(): number {
    return this.attempts.size;
  }
}

// ---------------------------------------------------------------------------------------------
// An event stream client (fetch and a parser, as the integrators' guide suggests from Node).

interface StreamEvent {
  readonly id: string;
  readonly type: string;
  readonly aggregateId: string;
  readonly version: number;
}

class EventStreamClient {
  readonly events: StreamEvent[] = [];
  lastId: string | undefined;
  private readonly controller = new AbortController();

  static async open(mix: Mix, what: string, query: string, lastEventId?: string): Promise<EventStreamClient> {
    const client = new EventStreamClient();
    const headers: Record<string, string> = { authorization: mix.adminBasic, accept: 'text/event-stream' };
    if (lastEventId) headers['last-event-id'] = lastEventId;
    const response = await fetch(`${mix.base}/api/events${query}`, {
      headers,
      signal: client.controller.signal,
    });
    tally(mix, `${what} ${response.status}`);
    if (response.status !== 200 || !response.body)
      throw new Error(`${what}: GET /api/events answered ${response.status}: ${await response.text()}`);
    void client.read(response.body.getReader());
    // The stream opens with `retry:` and the position it starts after.
    await client.waitUntil(() => client.lastId !== undefined, `${what}: no opening id`);
    return client;
  }

  private async read(reader: ReadableStreamDefaultReader<Uint8Array>): Promise<void> {
    const decoder = new TextDecoder();
    let buffer = '';
    for (;;) {
      const chunk = await reader.read().catch(() => ({ done: true, value: undefined }));
      if (chunk.done || !chunk.value) return;
      buffer += decoder.decode(chunk.value, { stream: true });
      let end = buffer.indexOf('\n\n');
      while (end !== -1) {
        this.parse(buffer.slice(0, end));
        buffer = buffer.slice(end + 2);
        end = buffer.indexOf('\n\n');
      }
    }
  }

  private parse(block: string): void {
    let id: string | undefined;
    let data: string | undefined;
    for (const line of block.split('\n')) {
      if (line.startsWith('id: ')) id = line.slice(4);
      else if (line.startsWith('data: ')) data = line.slice(6);
    }
    if (id !== undefined) this.lastId = id;
    if (id === undefined || data === undefined) return;
    const event = JSON.parse(data) as { type: string; data: { aggregateId: string; version: number } };
    this.events.push({
      id,
      type: event.type,
      aggregateId: event.data.aggregateId,
      version: event.data.version,
    });
  }

  async waitUntil(done: () => boolean, failure: string, timeoutMs = STREAM_TIMEOUT_MS): Promise<void> {
    const deadline = performance.now() + timeoutMs;
    while (!done()) {
      if (performance.now() > deadline) throw new Error(`${failure} within ${timeoutMs} ms`);
      await sleep(20);
    }
  }

  has(aggregateId: string, version: number): boolean {
    return this.events.some((event) => event.aggregateId === aggregateId && event.version === version);
  }

  close(): void {
    this.controller.abort();
  }
}

// ---------------------------------------------------------------------------------------------
// The scenarios, in the order an integrator's script ran them.

async function authScenario(mix: Mix): Promise<void> {
  const { adminEmail, adminPassword } = mix.service.credentials;
  mix.adminBearer = await signIn(mix, 'token (password grant, JSON)', adminEmail, adminPassword);
  await call(
    mix,
    'token (password grant, form)',
    '/api/auth/token',
    {
      raw: new URLSearchParams({
        grant_type: 'password',
        username: adminEmail,
        password: adminPassword,
      }).toString(),
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    },
    200,
  );
  await signIn(mix, 'token (unknown account)', `nobody-${RUN_TAG}-${mix.round}@example.com`, password(), 400);
  const byBasic = await readModel(mix, 'CurrentUser (Basic)', mix.adminBasic, {
    query: { queryType: 'CurrentUser' },
  });
  const user = (byBasic.body as { data: { authenticationType: string; email: string }[] }).data[0];
  check(user?.authenticationType === 'Basic', `CurrentUser (Basic) answered ${byBasic.text.slice(0, 300)}`);
  await readModel(mix, 'CurrentUser (Bearer)', mix.adminBearer, {
    query: { queryType: 'CurrentUser' },
    skip: 0,
    take: 10,
  });
  await call(
    mix,
    'CurrentUser (anonymous)',
    '/api/readmodel',
    { json: { query: { queryType: 'CurrentUser' } } },
    401,
  );
  await call(
    mix,
    'CurrentUser (Basic, unknown account)',
    '/api/readmodel',
    {
      json: { query: { queryType: 'CurrentUser' } },
      // Not the Admin's e-mail: 10 failures of one account from one address throttle it (429).
      auth: basic(`nobody-basic-${RUN_TAG}-${mix.round}@example.com`, password()),
    },
    401,
  );
  await call(mix, 'healthz', '/healthz', {}, 200);
  await call(mix, 'readyz', '/readyz', {}, 200);
  await call(mix, 'openapi.json', '/api/openapi.json', {}, 200);
}

async function readModelScenario(mix: Mix): Promise<void> {
  const bearer = mix.adminBearer;
  const team = await readModel(mix, 'GetFantasyTeam', bearer, {
    query: { queryType: 'GetFantasyTeam', id: mix.readTeam },
  });
  check(
    results<{ id: string }>(team)[0]?.id === mix.readTeam,
    `GetFantasyTeam answered ${team.text.slice(0, 300)}`,
  );
  await readModel(mix, 'GetFantasyTeam (Basic)', mix.adminBasic, {
    query: { queryType: 'GetFantasyTeam', id: mix.readTeam },
  });
  await readModel(
    mix,
    'GetFantasyTeam (missing team)',
    bearer,
    { query: { queryType: 'GetFantasyTeam', id: randomUUID() } },
    404,
  );
  await readModel(mix, 'ListUsers', bearer, { query: { queryType: 'ListUsers', role: 'Member' }, take: 100 });
  const prefix = await readModel(mix, 'ListUsers (emailPrefix)', mix.adminBasic, {
    query: { queryType: 'ListUsers', emailPrefix: `mix-${RUN_TAG}` },
    take: 50,
  });
  const listed = prefix.body as { results: { email: string }[] };
  if (listed.results.length === 50)
    await readModel(mix, 'ListUsers (after)', bearer, {
      query: { queryType: 'ListUsers', emailPrefix: `mix-${RUN_TAG}` },
      take: 50,
      after: listed.results[49]?.email,
    });
  await readModel(mix, 'GetUser (email)', bearer, {
    query: { queryType: 'GetUser', email: mix.serviceAccount.email },
  });
  await readModel(mix, 'AvailableImporters', bearer, { query: { queryType: 'AvailableImporters' } });
  await readModel(mix, 'GetImportJobResult', mix.adminBasic, {
    query: { queryType: 'GetImportJobResult', importJobId: mix.lastImportJobId },
  });
  await readModel(mix, 'ListWebhookSubscriptions', bearer, {
    query: { queryType: 'ListWebhookSubscriptions' },
  });
  await readModel(mix, 'GetWebhookDeliveries', bearer, {
    query: { queryType: 'GetWebhookDeliveries', subscriptionId: mix.subscriptionId },
    take: 50,
  });
  await readModel(mix, 'GetMappedPlayers (ServiceAccount, Basic)', mix.serviceAccount.basic, {
    query: { queryType: 'GetMappedPlayers' },
    take: 100,
  });
  await readModel(
    mix,
    'GetMappedPlayers (Bearer: Basic only)',
    bearer,
    { query: { queryType: 'GetMappedPlayers' } },
    401,
  );
  await readModel(
    mix,
    'GetMappedPlayers (Admin: ServiceAccount only)',
    mix.adminBasic,
    {
      query: { queryType: 'GetMappedPlayers' },
    },
    403,
  );
  await readModel(mix, 'GetTeamRatingInputByTeamId', bearer, {
    query: { queryType: 'GetTeamRatingInputByTeamId', id: mix.ratingTeam },
    dataType: 'TeamRatingInput',
  });
  await readModel(
    mix,
    'GetTeamRatingInputByTeamId (paging inside query)',
    bearer,
    {
      query: { queryType: 'GetTeamRatingInputByTeamId', id: mix.ratingTeam, take: 5 },
      dataType: 'TeamRatingInput',
    },
    400,
  );
}

async function hostileScenario(mix: Mix): Promise<void> {
  const auth = mix.adminBasic;
  const json = { 'content-type': 'application/json' };
  const currentUser = JSON.stringify({ query: { queryType: 'CurrentUser' } });
  const longBeyond2To53 = `{"commandType":"LinkFantasyTeam","command":{"aggregateRootId":"${mix.readTeam}","fantasyTeamExternalId":9007199254740993,"fantasyUserId":1}}`;
  // What each hostile request is, where it goes, how it is sent, and the status it must get.
  const requests: [what: string, urlPath: string, options: RequestOptions, expected: number][] = [
    [
      'malformed JSON',
      '/api/readmodel',
      { raw: '{"query": {"queryType": "CurrentUser"', auth, headers: json },
      400,
    ],
    [
      'malformed JSON (command)',
      '/api/command',
      { raw: '{"commandType": ', auth: mix.adminBearer, headers: json },
      400,
    ],
    [
      'wrong content-type (text/plain)',
      '/api/readmodel',
      { raw: currentUser, auth, headers: { 'content-type': 'text/plain' } },
      400,
    ],
    [
      'wrong charset (latin1)',
      '/api/readmodel',
      { raw: currentUser, auth, headers: { 'content-type': 'application/json; charset=latin1' } },
      400,
    ],
    [
      'body over BODY_LIMIT (413)',
      '/api/readmodel',
      { json: { query: { queryType: 'CurrentUser' }, padding: 'x'.repeat(1_100_000) }, auth },
      413,
    ],
    [
      'token body over 8 KB (413)',
      '/api/auth/token',
      { json: { grant_type: 'password', username: 'someone@example.com', password: 'x'.repeat(10_000) } },
      413,
    ],
    ['anonymous 2 MB command (401)', '/api/command', { json: { padding: 'y'.repeat(2_000_000) } }, 401],
    ['unknown queryType', '/api/readmodel', { json: { query: { queryType: 'NoSuchQuery' } }, auth }, 400],
    [
      'unknown commandType',
      '/api/command',
      { json: { commandType: 'NoSuchCommand', command: {} }, auth: mix.adminBearer },
      400,
    ],
    [
      'nested 70 deep',
      '/api/readmodel',
      { raw: `${'{"a":'.repeat(70)}1${'}'.repeat(70)}`, auth, headers: json },
      400,
    ],
    [
      'GUID in braces',
      '/api/readmodel',
      { json: { query: { queryType: 'GetFantasyTeam', id: `{${mix.readTeam}}` } }, auth },
      400,
    ],
    ['long beyond 2^53', '/api/command', { raw: longBeyond2To53, auth: mix.adminBearer, headers: json }, 400],
    [
      'gzip body',
      '/api/readmodel',
      { raw: gzipSync(currentUser), auth, headers: { ...json, 'content-encoding': 'gzip' } },
      200,
    ],
    [
      'zstd body',
      '/api/readmodel',
      { raw: currentUser, auth, headers: { ...json, 'content-encoding': 'zstd' } },
      400,
    ],
    ['unknown path', '/api/nothing', { json: {}, auth }, 404],
    ['GET on a POST route', '/api/command', { auth }, 405],
  ];
  for (const [what, urlPath, options, expected] of requests)
    await call(mix, what, urlPath, options, expected);
}

async function importsScenario(mix: Mix): Promise<void> {
  const r = mix.round;
  const email = (i: number) => `mix-${RUN_TAG}-r${r}-${String(i).padStart(4, '0')}@example.com`;
  const human = (address: string, withPassword = false) => ({
    email: address,
    userType: 'Human',
    roles: ['Member'],
    firstName: 'Mix',
    lastName: `Round ${r}`,
    ...(withPassword ? { password: password() } : {}),
  });
  // 1. A High UserSeeding of USERS_PER_ROUND accounts (a few with a password, hashed), inline when idle.
  const seeded = Array.from({ length: USERS_PER_ROUND }, (_, i) => email(i));
  const high = await importAndWait(
    mix,
    'UserSeeding High',
    {
      importerType: 'UserSeeding',
      priority: 'High',
      importData: { users: seeded.map((address, i) => human(address, i < 3)) },
    },
    'Completed',
  );
  check(
    high.commandsExecuted === USERS_PER_ROUND,
    `UserSeeding High ran ${String(high.commandsExecuted)} commands`,
  );
  // 2. A Normal one, queued for the worker.
  await importAndWait(
    mix,
    'UserSeeding Normal',
    {
      importerType: 'UserSeeding',
      importData: { enabled: true, users: Array.from({ length: 50 }, (_, i) => human(email(10_000 + i))) },
    },
    'Completed',
  );
  // 3. Dry runs: 5 existing accounts fail it; with skipIfUsersExist they are skipped.
  const mixed = [
    ...seeded.slice(0, 5).map((address) => human(address)),
    ...Array.from({ length: 10 }, (_, i) => human(email(20_000 + i))),
  ];
  const dry = await importAndWait(
    mix,
    'UserSeeding dry run (existing rows)',
    {
      importerType: 'UserSeeding',
      dryRun: true,
      importData: { users: mixed },
    },
    'dry-run',
  );
  check(
    dry.status === 'Failed' && rowErrorCodes(dry).filter((code) => code === 'USER_EXISTS').length === 5,
    `UserSeeding dry run answered ${JSON.stringify(dry).slice(0, 400)}`,
  );
  const drySkip = await importAndWait(
    mix,
    'UserSeeding dry run (skipIfUsersExist)',
    {
      importerType: 'UserSeeding',
      priority: 'High',
      dryRun: true,
      importData: { skipIfUsersExist: true, users: mixed },
    },
    'dry-run',
  );
  check(
    drySkip.status === 'Completed',
    `UserSeeding dry run (skip) answered ${JSON.stringify(drySkip).slice(0, 400)}`,
  );
  // 4. Row errors: the same batch for real, existing rows skipped; then a batch repeating an e-mail.
  const skipping = await importAndWait(
    mix,
    'UserSeeding row errors (USER_EXISTS skipped)',
    {
      importerType: 'UserSeeding',
      priority: 'High',
      importData: { skipIfUsersExist: true, users: mixed },
    },
    'Completed',
  );
  check(
    rowErrorCodes(skipping).length === 5,
    `UserSeeding with existing rows answered ${JSON.stringify(skipping).slice(0, 400)}`,
  );
  const duplicate = await importAndWait(
    mix,
    'UserSeeding row errors (DUPLICATE_IN_BATCH)',
    {
      importerType: 'UserSeeding',
      importData: { users: [human(email(30_000)), human(email(30_001)), human(email(30_000))] },
    },
    'Failed',
  );
  check(
    rowErrorCodes(duplicate).includes('DUPLICATE_IN_BATCH'),
    `duplicate batch: ${JSON.stringify(duplicate).slice(0, 400)}`,
  );
  // 5. PlayerSeeding: High, Normal, a dry run, and a batch with a feed id another player holds.
  const highPlayers = newPlayers(mix, 20);
  await importAndWait(
    mix,
    'PlayerSeeding High',
    {
      importerType: 'PlayerSeeding',
      priority: 'High',
      importData: {
        season: '2026',
        players: highPlayers.map((p, i) => playerRow(p, 5 + i / 10, 400_000 + i)),
      },
    },
    'Completed',
  );
  await importAndWait(
    mix,
    'PlayerSeeding Normal',
    {
      importerType: 'PlayerSeeding',
      priority: 'Normal',
      importData: {
        season: '2026',
        players: newPlayers(mix, 20).map((p, i) => playerRow(p, 6 + i / 10, 300_000 + i)),
      },
    },
    'Completed',
  );
  const dryPlayers = await importAndWait(
    mix,
    'PlayerSeeding dry run',
    {
      importerType: 'PlayerSeeding',
      dryRun: true,
      importData: { season: '2026', players: newPlayers(mix, 10).map((p) => playerRow(p, 7, 200_000)) },
    },
    'dry-run',
  );
  check(
    dryPlayers.status === 'Completed',
    `PlayerSeeding dry run answered ${JSON.stringify(dryPlayers).slice(0, 400)}`,
  );
  // A new player claiming the feed id of one seeded above: refused alone, the batch Failed.
  const clash: Player = { ...(newPlayers(mix, 1)[0] as Player), feedId: (highPlayers[0] as Player).feedId };
  const refused = await importAndWait(
    mix,
    'PlayerSeeding row errors (FEED_ID_TAKEN)',
    {
      importerType: 'PlayerSeeding',
      priority: 'High',
      importData: {
        season: '2026',
        players: [...newPlayers(mix, 2), clash].map((p) => playerRow(p, 4, 100_000)),
      },
    },
    'Failed',
  );
  check(
    rowErrorCodes(refused).includes('FEED_ID_TAKEN'),
    `PlayerSeeding clash: ${JSON.stringify(refused).slice(0, 400)}`,
  );
  // 6. Refusals: an unknown importer, and no credentials (an empty 401).
  await call(
    mix,
    'unknown importerType',
    '/api/import',
    {
      json: { requestId: randomUUID(), importerType: 'NoSuchImporter', importData: {} },
      auth: mix.adminBasic,
    },
    400,
  );
  await call(
    mix,
    'anonymous import',
    '/api/import',
    {
      json: { requestId: randomUUID(), importerType: 'UserSeeding', importData: { users: [] } },
    },
    401,
  );
}

/** The rating input's players as the round seeds them: season 2025 and 2026 differ. */
function seasonRating(season: string, round: number, index: number): number {
  return (season === '2025' ? 3 : 6) + index + (round % 10) / 10;
}

async function ratingsScenario(mix: Mix): Promise<void> {
  const r = mix.round;
  const seasons = [
    { season: '2025', round: Math.min(r, 38), finalRound: 38 },
    { season: '2026', round: ((r - 1) % 27) + 1, finalRound: 27 },
  ];
  for (const { season, round, finalRound } of seasons)
    await importAndWait(
      mix,
      `PlayerSeeding season ${season}`,
      {
        importerType: 'PlayerSeeding',
        priority: 'High',
        importData: {
          season,
          round,
          finalRound,
          players: mix.ratingPlayers.map((p, i) =>
            playerRow(p, seasonRating(season, r, i), 500_000 + r * 1_000 + i),
          ),
        },
      },
      'Completed',
    );
  // A new captain each round, so the roster changes and answers a new version.
  const captain = r % RATING_PLAYERS;
  const { version } = await command(mix, mix.adminBearer, 'SetFantasyTeamRoster', {
    aggregateRootId: mix.ratingTeam,
    players: mix.ratingPlayers.map((p, i) => ({
      participantId: p.platformId,
      selectionStatus: i === captain ? 0 : i === (captain + 1) % RATING_PLAYERS ? 1 : 2,
    })),
  });
  // The stats come through the players projection, which no minVersion of the team covers: read
  // until they show (how long that took is reported).
  const seededAt = performance.now();
  for (const { season, round } of seasons) {
    for (;;) {
      const answer = await readModel(mix, `GetTeamRatingInputByTeamId season ${season}`, mix.adminBearer, {
        query: { queryType: 'GetTeamRatingInputByTeamId', id: mix.ratingTeam, season, minVersion: version },
        dataType: 'TeamRatingInput',
      });
      const [input] = results<{
        team: Record<string, { rating: number; selectionStatus: number }>;
        round: number;
      }>(answer);
      const shown = mix.ratingPlayers.every(
        (p, i) => input?.team[String(p.feedId)]?.rating === seasonRating(season, r, i),
      );
      if (
        shown &&
        input?.round === round &&
        input.team[String(mix.ratingPlayers[captain]?.feedId)]?.selectionStatus === 0
      )
        break;
      if (performance.now() - seededAt > 30_000)
        throw new Error(
          `the rating input of season ${season} did not show round ${r}'s stats in 30 s: ${answer.text.slice(0, 500)}`,
        );
      await sleep(50);
    }
  }
  mix.ratingVisibleMs.push(performance.now() - seededAt);
  const none = await readModel(mix, 'GetTeamRatingInputByTeamId season 2024 (no stats)', mix.adminBearer, {
    query: { queryType: 'GetTeamRatingInputByTeamId', id: mix.ratingTeam, season: '2024' },
    dataType: 'TeamRatingInput',
  });
  check(
    Object.keys(results<{ team: object }>(none)[0]?.team ?? { x: 1 }).length === 0,
    `season 2024: ${none.text.slice(0, 300)}`,
  );
  await readModel(mix, 'GetMappedPlayers season 2025', mix.serviceAccount.basic, {
    query: { queryType: 'GetMappedPlayers', season: '2025' },
    take: 100,
  });
  await readModel(mix, 'GetMappedPlayers by platformId', mix.serviceAccount.basic, {
    query: { queryType: 'GetMappedPlayers', platformId: mix.ratingPlayers[0]?.platformId },
  });
}

async function memberTeamsScenario(mix: Mix): Promise<void> {
  const secret = password();
  const memberBasic = await createMember(mix.service.ingress, mix.service.credentials, secret);
  tally(mix, 'UserSeeding High (the Member) 200');
  const email =
    Buffer.from(memberBasic.slice('Basic '.length), 'base64').toString('utf8').split(':')[0] ?? '';
  const member = await signIn(mix, 'token (Member)', email, secret);
  const teams: Team[] = Array.from({ length: MEMBER_TEAMS }, () => ({ id: randomUUID(), linked: false }));
  await forEachConcurrently(teams, 4, async (team, i) => {
    await command(mix, member, 'CreateFantasyTeam', { aggregateRootId: team.id, name: `Member XI ${i}` });
  });
  const over = await command(
    mix,
    member,
    'CreateFantasyTeam',
    { aggregateRootId: randomUUID(), name: 'One too many' },
    400,
  );
  check(over.body.errorCode === 'COMMAND_VALIDATION_ERROR', `the 101st team: ${JSON.stringify(over.body)}`);
  for (const team of teams.slice(0, 20)) await toggle(mix, member, team);
  let version = 0;
  for (const team of teams.slice(0, 10)) version = await toggle(mix, member, team);
  await readModel(mix, 'GetFantasyTeam (Member, own, minVersion)', member, {
    query: { queryType: 'GetFantasyTeam', id: teams[9]?.id, minVersion: version },
  });
  await readModel(
    mix,
    "GetFantasyTeam (Member, the Admin's team)",
    member,
    { query: { queryType: 'GetFantasyTeam', id: mix.readTeam } },
    404,
  );
  await readModel(mix, 'ListUsers (Member: forbidden)', member, { query: { queryType: 'ListUsers' } }, 403);
  await command(
    mix,
    member,
    'LinkFantasyTeam',
    {
      aggregateRootId: mix.readTeam,
      fantasyTeamExternalId: 1,
      fantasyUserId: 1,
    },
    400,
  );
  await call(mix, 'event stream (Member: forbidden)', '/api/events', { auth: memberBasic }, 403);
}

async function accountsScenario(mix: Mix): Promise<void> {
  const admin = mix.adminBearer;
  const email = `acct-${RUN_TAG}-r${mix.round}@example.com`;
  const passwords = [password(), password(), password(), password()] as const;
  const register = (secret: string, what: string) =>
    importAndWait(
      mix,
      what,
      {
        importerType: 'UserSeeding',
        priority: 'High',
        importData: {
          users: [
            { email, userType: 'Human', roles: ['Member'], password: secret, userName: `acct ${mix.round}` },
          ],
        },
      },
      'Completed',
    );
  await register(passwords[0], 'UserSeeding High (the account)');
  const own = await signIn(mix, 'token (account)', email, passwords[0]);
  const found = await readModel(mix, 'GetUser (account)', admin, { query: { queryType: 'GetUser', email } });
  const id = results<{ id: string }>(found)[0]?.id ?? '';
  // Its own password, then the Admin's reset.
  await command(mix, own, 'ChangePassword', { currentPassword: passwords[0], newPassword: passwords[1] });
  await signIn(mix, 'token (after ChangePassword)', email, passwords[1]);
  await command(mix, admin, 'SetUserPassword', { aggregateRootId: id, newPassword: passwords[2] });
  const reset = await signIn(mix, 'token (after SetUserPassword)', email, passwords[2]);
  // Roles: UserManager added, then taken away again.
  const promoted = await command(mix, admin, 'SetUserRoles', {
    aggregateRootId: id,
    roles: ['Member', 'UserManager'],
  });
  const seen = await readModel(mix, 'GetUser (minVersion, roles)', admin, {
    query: { queryType: 'GetUser', id, minVersion: promoted.version },
  });
  check(
    results<{ roles: string[] }>(seen)[0]?.roles.includes('UserManager') === true,
    `GetUser after SetUserRoles: ${seen.text.slice(0, 300)}`,
  );
  await readModel(
    mix,
    'CurrentUser (token of the old roles)',
    reset,
    { query: { queryType: 'CurrentUser' } },
    [200, 401],
  );
  await command(mix, admin, 'SetUserRoles', { aggregateRootId: id, roles: ['Member'] });
  // Disable and enable.
  await command(mix, admin, 'DisableUser', { aggregateRootId: id, reason: 'mixed soak' });
  await signIn(mix, 'token (disabled)', email, passwords[2], 400);
  await command(mix, admin, 'EnableUser', { aggregateRootId: id });
  await signIn(mix, 'token (enabled again)', email, passwords[2]);
  // Erasure, then the same e-mail registered again.
  await command(mix, admin, 'DeleteUser', { aggregateRootId: id });
  await readModel(mix, 'GetUser (deleted)', admin, { query: { queryType: 'GetUser', email } }, 404);
  await register(passwords[3], 'UserSeeding High (re-registration)');
  await signIn(mix, 'token (re-registered)', email, passwords[3]);
  const again = await readModel(mix, 'GetUser (re-registered)', admin, {
    query: { queryType: 'GetUser', email },
  });
  check(
    results<{ id: string }>(again)[0]?.id === id,
    `the re-registered account: ${again.text.slice(0, 300)}`,
  );
}

async function webhooksScenario(mix: Mix): Promise<void> {
  const expected: { key: string; at: number }[] = [];
  for (let pass = 0; pass < 2; pass += 1)
    for (const team of mix.webhookTeams) {
      const version = await toggle(mix, mix.adminBearer, team);
      expected.push({ key: `${team.id}:${version}`, at: performance.now() });
    }
  const deadline = performance.now() + DELIVERY_TIMEOUT_MS;
  while (!expected.every(({ key }) => mix.receiver.delivered.has(key))) {
    if (performance.now() > deadline) {
      const missing = expected.filter(({ key }) => !mix.receiver.delivered.has(key)).length;
      throw new Error(
        `${missing} of ${expected.length} link/unlink events were not delivered within ${DELIVERY_TIMEOUT_MS} ms`,
      );
    }
    await sleep(50);
  }
  for (const { key, at } of expected) {
    const delivered = mix.receiver.delivered.get(key) as DeliveredEvent;
    check(delivered.attempts >= 2, `${key} was delivered at its first attempt, which the receiver refuses`);
    mix.deliveries.push({ ms: delivered.at - at, attempts: delivered.attempts });
  }
  const retrying = await readModel(mix, 'GetWebhookDeliveries (retrying)', mix.adminBearer, {
    query: { queryType: 'GetWebhookDeliveries', subscriptionId: mix.subscriptionId, status: 'retrying' },
    take: 10,
  });
  check(
    (retrying.body as { totalCount: number }).totalCount > 0,
    `no retrying attempt listed: ${retrying.text.slice(0, 300)}`,
  );
  await readModel(mix, 'GetWebhookDeliveries (delivered)', mix.adminBasic, {
    query: { queryType: 'GetWebhookDeliveries', subscriptionId: mix.subscriptionId, status: 'delivered' },
    take: 10,
  });
}

async function eventStreamScenario(mix: Mix): Promise<void> {
  const types = '?types=FantasyTeamLinkedEvent,FantasyTeamUnlinkedEvent';
  const team = mix.streamTeam;
  const first = await EventStreamClient.open(mix, 'event stream (from now)', types);
  let before: number;
  try {
    before = await toggle(mix, mix.adminBearer, team);
    await first.waitUntil(
      () => first.has(team.id, before),
      `event stream: ${team.id} v${before} not received`,
    );
    // Read for a while: the probe's links arrive meanwhile.
    await sleep(2_000);
  } finally {
    first.close();
  }
  const lastId = first.lastId as string;
  const seenIds = new Set(first.events.map((event) => event.id));
  const missed = await toggle(mix, mix.adminBearer, team);
  const resumed = await EventStreamClient.open(mix, 'event stream (Last-Event-ID)', types, lastId);
  try {
    await resumed.waitUntil(
      () => resumed.has(team.id, missed),
      `resumed stream: ${team.id} v${missed} not received`,
    );
    await sleep(1_000);
    const repeated = resumed.events.filter((event) => seenIds.has(event.id)).length;
    check(repeated === 0, `the resumed stream repeated ${repeated} event(s) sent before Last-Event-ID`);
    check(!resumed.has(team.id, before), 'the resumed stream repeated the event before Last-Event-ID');
  } finally {
    resumed.close();
  }
  await call(
    mix,
    'event stream (malformed from)',
    `/api/events?from=not-a-position`,
    { auth: mix.adminBasic },
    400,
  );
  await call(
    mix,
    'event stream (unknown type)',
    `/api/events?types=NoSuchEvent`,
    { auth: mix.adminBasic },
    400,
  );
  await call(mix, 'event stream (anonymous)', '/api/events', {}, 401);
}

const SCENARIO_RUNS: Record<ScenarioName, (mix: Mix) => Promise<void>> = {
  auth: authScenario,
  readmodel: readModelScenario,
  hostile: hostileScenario,
  imports: importsScenario,
  ratings: ratingsScenario,
  'member-teams': memberTeamsScenario,
  accounts: accountsScenario,
  webhooks: webhooksScenario,
  'event-stream': eventStreamScenario,
};

// ---------------------------------------------------------------------------------------------
// The probe: create, link, and read back with minVersion, every PROBE_EVERY_MS.

interface ProbeSample {
  /** Wall time of the link's answer. */
  readonly at: string;
  /** From the link's answer to the read's (the lag a client sees); NaN when the read got no answer. */
  readonly ms: number;
  readonly linkMs: number;
  readonly status: number;
  readonly phase: Phase;
  readonly round: number;
  readonly version: number;
}

async function probeLoop(
  mix: Mix,
  token: string,
  running: () => boolean,
  samples: ProbeSample[],
  errors: string[],
) {
  const headers = { ...JSON_HEADERS, authorization: token };
  const post = async (urlPath: string, body: unknown) => {
    const response = await fetch(`${mix.base}${urlPath}`, {
      method: 'POST',
      headers,
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(READ_WAIT_MS + 10_000),
    });
    return { status: response.status, body: (await response.json()) as Record<string, unknown> };
  };
  let n = 0;
  while (running()) {
    const began = performance.now();
    n += 1;
    const id = randomUUID();
    try {
      const created = await post('/api/command', {
        commandType: 'CreateFantasyTeam',
        command: { aggregateRootId: id, name: `Probe ${n}` },
      });
      if (created.status !== 200) throw new Error(`probe CreateFantasyTeam answered ${created.status}`);
      const linkStarted = performance.now();
      const linked = await post('/api/command', {
        commandType: 'LinkFantasyTeam',
        command: { aggregateRootId: id, fantasyTeamExternalId: 9_000_000 + n, fantasyUserId: 9_500_000 + n },
      });
      if (linked.status !== 200) throw new Error(`probe LinkFantasyTeam answered ${linked.status}`);
      const answeredAt = performance.now();
      const phase = mix.phase;
      const round = mix.round;
      const at = new Date().toISOString();
      const version = Number(linked.body.version);
      let status = 0;
      try {
        status = (
          await post('/api/readmodel', { query: { queryType: 'GetFantasyTeam', id, minVersion: version } })
        ).status;
      } catch {
        // No answer: status 0, a failure.
      }
      samples.push({
        at,
        ms: performance.now() - answeredAt,
        linkMs: answeredAt - linkStarted,
        status,
        phase,
        round,
        version,
      });
    } catch (error) {
      errors.push(`${new Date().toISOString()} ${mix.phase}: ${String(error)}`);
    }
    await sleep(Math.max(0, PROBE_EVERY_MS - (performance.now() - began)));
  }
}

// ---------------------------------------------------------------------------------------------
// The worker's metrics and the processes' CPU, every METRICS_EVERY_MS.

interface MetricsSample {
  /** Seconds since the bench began. */
  readonly t: number;
  readonly phase: Phase;
  /** projection -> partition -> entries behind. */
  readonly lag: Map<string, Map<string, number>>;
  /** le -> cumulative count. */
  readonly passBuckets: Map<string, number>;
  readonly passSum: number;
  readonly passCount: number;
  /** The worker's longest event-loop delay since the previous scrape. */
  readonly eventLoopMaxSeconds: number;
  /** The ingress's (its own METRICS_PORT). */
  readonly ingressEventLoopMaxSeconds: number;
  readonly heapUsedBytes: number;
  /** GC kind (major, minor, incremental, weakcb) -> seconds spent, cumulative. */
  readonly gcSeconds: Map<string, number>;
  readonly workerRssKiB: number;
  /** CPU seconds, cumulative: each process of the service, this bench, and the whole machine. */
  readonly cpu: {
    readonly worker: number;
    readonly ingress: number;
    readonly redis: number;
    readonly bench: number;
    /** Every core's user, nice, system, irq and softirq time (/proc/stat). */
    readonly machineBusy: number;
    /** Time the hypervisor gave to others while this machine wanted to run (/proc/stat steal). */
    readonly steal: number;
  };
}

/** The machine's busy and stolen CPU seconds, from /proc/stat's first line (USER_HZ = 100). */
function machineCpu(): { busy: number; steal: number } {
  const fields = (readFileSync('/proc/stat', 'utf8').split('\n')[0] ?? '')
    .trim()
    .split(/\s+/)
    .slice(1)
    .map(Number);
  const [user = 0, nice = 0, system = 0, , , irq = 0, softirq = 0, steal = 0] = fields;
  return { busy: (user + nice + system + irq + softirq) / 100, steal: steal / 100 };
}

function rssKiB(pid: number): number {
  try {
    return Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? Number.NaN);
  } catch {
    return Number.NaN;
  }
}

function parseMetrics(text: string) {
  const lag = new Map<string, Map<string, number>>();
  const passBuckets = new Map<string, number>();
  let passSum = 0;
  let passCount = 0;
  let eventLoopMaxSeconds = 0;
  let heapUsedBytes = 0;
  const gcSeconds = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line.startsWith('#') || line === '') continue;
    const match = /^([a-z_]+)(?:\{([^}]*)\})? (\S+)$/.exec(line);
    if (!match) continue;
    const [, name, labelText = '', valueText] = match;
    const value = Number(valueText);
    const labels = Object.fromEntries([...labelText.matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1], m[2]]));
    if (name === 'fts_projector_lag_events') {
      const partitions = lag.get(labels.projection ?? '') ?? new Map<string, number>();
      partitions.set(labels.partition ?? '', value);
      lag.set(labels.projection ?? '', partitions);
    } else if (name === 'fts_projector_pass_duration_seconds_bucket') passBuckets.set(labels.le ?? '', value);
    else if (name === 'fts_projector_pass_duration_seconds_sum') passSum = value;
    else if (name === 'fts_projector_pass_duration_seconds_count') passCount = value;
    else if (name === 'fts_nodejs_eventloop_lag_max_seconds') eventLoopMaxSeconds = value;
    else if (name === 'fts_nodejs_heap_size_used_bytes') heapUsedBytes = value;
    else if (name === 'fts_nodejs_gc_duration_seconds_sum') gcSeconds.set(labels.kind ?? '', value);
  }
  return { lag, passBuckets, passSum, passCount, eventLoopMaxSeconds, heapUsedBytes, gcSeconds };
}

async function sampleMetrics(
  mix: Mix,
  urls: { readonly worker: string; readonly ingress: string },
  running: () => boolean,
  samples: MetricsSample[],
  errors: string[],
) {
  const { service } = mix;
  const worker = service.workers[0] as ServerProcess;
  while (running()) {
    const began = performance.now();
    try {
      const scrape = async (url: string) =>
        parseMetrics(await (await fetch(url, { signal: AbortSignal.timeout(5_000) })).text());
      const [parsed, ingress] = await Promise.all([scrape(urls.worker), scrape(urls.ingress)]);
      const machine = machineCpu();
      const bench = process.cpuUsage();
      samples.push({
        t: (performance.now() - started) / 1000,
        phase: mix.phase,
        ...parsed,
        ingressEventLoopMaxSeconds: ingress.eventLoopMaxSeconds,
        workerRssKiB: rssKiB(worker.pid),
        cpu: {
          worker: cpuSeconds(worker.pid),
          ingress: cpuSeconds(service.ingress.pid),
          redis: cpuSeconds(service.redisServer.pid),
          bench: (bench.user + bench.system) / 1e6,
          machineBusy: machine.busy,
          steal: machine.steal,
        },
      });
    } catch (error) {
      errors.push(`${new Date().toISOString()} metrics: ${String(error)}`);
    }
    await sleep(Math.max(0, METRICS_EVERY_MS - (performance.now() - began)));
  }
}

// ---------------------------------------------------------------------------------------------
// The summary.

interface ProbeStats {
  readonly samples: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly maxMs: number;
  /** Over SLOW_MS, or not answered 200 (503 PROJECTION_BEHIND, or nothing). */
  readonly failures: number;
  readonly over2000Ms: number;
  readonly not200: number;
}

function probeStats(samples: readonly ProbeSample[]): ProbeStats {
  const times = samples.map((s) => s.ms).filter((ms) => Number.isFinite(ms));
  return {
    samples: samples.length,
    p50Ms: percentile(times, 50),
    p99Ms: percentile(times, 99),
    maxMs: times.length ? Math.max(...times) : Number.NaN,
    failures: samples.filter((s) => s.status !== 200 || s.ms > SLOW_MS).length,
    over2000Ms: samples.filter((s) => s.ms > SLOW_MS).length,
    not200: samples.filter((s) => s.status !== 200).length,
  };
}

interface PassStats {
  readonly passes: number;
  readonly meanMs: number;
  /** Upper bounds from the histogram's buckets: the smallest `le` holding the quantile. */
  readonly p50AtMostMs: number;
  readonly p99AtMostMs: number;
  readonly over250Ms: number;
  readonly over1s: number;
  /** [le (s), passes in the bucket (not cumulative)], in the buckets' order. */
  readonly buckets: [string, number][];
}

function passStats(from: MetricsSample | undefined, to: MetricsSample | undefined): PassStats {
  const les = [...(to?.passBuckets.keys() ?? [])];
  const cumulative = les.map((le) => (to?.passBuckets.get(le) ?? 0) - (from?.passBuckets.get(le) ?? 0));
  const passes = (to?.passCount ?? 0) - (from?.passCount ?? 0);
  const quantile = (q: number) => {
    const index = cumulative.findIndex((count) => count >= q * passes);
    const le = les[index] ?? '+Inf';
    return le === '+Inf' ? Number.POSITIVE_INFINITY : Number(le) * 1000;
  };
  const atLeast = (seconds: number) => passes - (cumulative[les.indexOf(String(seconds))] ?? passes);
  return {
    passes,
    meanMs: passes > 0 ? (((to?.passSum ?? 0) - (from?.passSum ?? 0)) / passes) * 1000 : Number.NaN,
    p50AtMostMs: passes > 0 ? quantile(0.5) : Number.NaN,
    p99AtMostMs: passes > 0 ? quantile(0.99) : Number.NaN,
    over250Ms: atLeast(0.25),
    over1s: atLeast(1),
    buckets: les.map((le, i) => [le, (cumulative[i] ?? 0) - (i > 0 ? (cumulative[i - 1] ?? 0) : 0)]),
  };
}

interface LagMax {
  readonly projection: string;
  /** The most entries behind in one partition, when, and in which phase. */
  readonly maxPartition: number;
  readonly partition: string;
  readonly maxTotal: number;
  readonly atSeconds: number;
  readonly phase: Phase;
}

function lagMaxima(samples: readonly MetricsSample[]): LagMax[] {
  const maxima = new Map<string, LagMax>();
  for (const sample of samples)
    for (const [projection, partitions] of sample.lag) {
      const total = [...partitions.values()].reduce((sum, value) => sum + value, 0);
      const [partition, worst] = [...partitions].reduce((a, b) => (b[1] > a[1] ? b : a), ['-', 0]);
      const known = maxima.get(projection);
      if (!known || worst > known.maxPartition || (worst === known.maxPartition && total > known.maxTotal))
        maxima.set(projection, {
          projection,
          maxPartition: worst,
          partition,
          maxTotal: Math.max(total, known?.maxTotal ?? 0),
          atSeconds: sample.t,
          phase: sample.phase,
        });
      else if (total > known.maxTotal) maxima.set(projection, { ...known, maxTotal: total });
    }
  return [...maxima.values()].sort((a, b) => a.projection.localeCompare(b.projection));
}

/** What one metrics sample says of the interval since the one before it. */
function intervalOf(previous: MetricsSample | undefined, s: MetricsSample) {
  const seconds = previous ? s.t - previous.t : Number.NaN;
  const cores = (pick: (c: MetricsSample['cpu']) => number) =>
    previous ? Number(((pick(s.cpu) - pick(previous.cpu)) / seconds).toFixed(2)) : Number.NaN;
  const service = cores((c) => c.worker + c.ingress + c.redis + c.bench);
  const gc = (kind: string) =>
    previous ? Math.round(((s.gcSeconds.get(kind) ?? 0) - (previous.gcSeconds.get(kind) ?? 0)) * 1000) : 0;
  return {
    t: Number(s.t.toFixed(2)),
    phase: s.phase,
    lag: Object.fromEntries(
      [...s.lag].map(([projection, partitions]) => [projection, Math.max(0, ...partitions.values())]),
    ),
    passes: previous ? s.passCount - previous.passCount : 0,
    eventLoopMaxMs: Number((s.eventLoopMaxSeconds * 1000).toFixed(1)),
    ingressLoopMaxMs: Number((s.ingressEventLoopMaxSeconds * 1000).toFixed(1)),
    workerCores: cores((c) => c.worker),
    ingressCores: cores((c) => c.ingress),
    redisCores: cores((c) => c.redis),
    benchCores: cores((c) => c.bench),
    machineBusyCores: cores((c) => c.machineBusy),
    /** Busy CPU of processes that are not this run's (another job on the machine). */
    otherCores: Number((cores((c) => c.machineBusy) - service).toFixed(2)),
    stealCores: cores((c) => c.steal),
    workerGcMajorMs: gc('major'),
    workerGcMinorMs: gc('minor') + gc('incremental'),
    workerHeapMiB: Math.round(s.heapUsedBytes / 2 ** 20),
    workerRssMiB: Math.round(s.workerRssKiB / 1024),
  };
}

type Interval = ReturnType<typeof intervalOf>;

/**
 * Where the projector stood still: runs of intervals (at least 1 s together) with no pass while some
 * projection was behind, with what the worker and the machine did meanwhile.
 */
function stallsOf(timeline: readonly Interval[]) {
  const stalls: {
    fromT: number;
    toT: number;
    seconds: number;
    phases: string;
    maxLag: number;
    workerLoopMaxMs: number;
    ingressLoopMaxMs: number;
    workerCores: number;
    otherCores: number;
    stealCores: number;
    workerGcMajorMs: number;
  }[] = [];
  let run: Interval[] = [];
  const close = (endT: number) => {
    const first = run[0];
    if (first) {
      // The first interval began at the sample before it.
      const fromT = timeline[timeline.indexOf(first) - 1]?.t ?? first.t;
      const seconds = endT - fromT;
      const mean = (pick: (i: Interval) => number) => run.reduce((sum, i) => sum + pick(i), 0) / run.length;
      if (seconds >= 1)
        stalls.push({
          fromT: Number(fromT.toFixed(2)),
          toT: Number(endT.toFixed(2)),
          seconds: Number(seconds.toFixed(2)),
          phases: [...new Set(run.map((i) => i.phase))].join(','),
          maxLag: Math.max(...run.map((i) => Math.max(0, ...Object.values(i.lag)))),
          workerLoopMaxMs: Math.max(...run.map((i) => i.eventLoopMaxMs)),
          ingressLoopMaxMs: Math.max(...run.map((i) => i.ingressLoopMaxMs)),
          workerCores: Number(mean((i) => i.workerCores).toFixed(2)),
          otherCores: Number(mean((i) => i.otherCores).toFixed(2)),
          stealCores: Number(mean((i) => i.stealCores).toFixed(2)),
          workerGcMajorMs: run.reduce((sum, i) => sum + i.workerGcMajorMs, 0),
        });
    }
    run = [];
  };
  for (const interval of timeline) {
    const behind = Object.values(interval.lag).some((lag) => lag > 0);
    if (interval.passes === 0 && behind) run.push(interval);
    else close(run.at(-1)?.t ?? interval.t);
  }
  close(run.at(-1)?.t ?? 0);
  return stalls;
}

interface LogLine {
  readonly level: string;
  readonly message: string;
  readonly count: number;
  readonly first: string;
  readonly example: string;
}

/** The warn and error lines of a process's log, one entry per message with its count. */
function warnings(logFile: string): LogLine[] {
  const byMessage = new Map<string, LogLine>();
  let text = '';
  try {
    text = readFileSync(logFile, 'utf8');
  } catch {
    return [];
  }
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    let level = '';
    let message = line;
    let timestamp = '';
    try {
      const parsed = JSON.parse(line) as { level?: string; message?: string; timestamp?: string };
      level = parsed.level ?? '';
      message = parsed.message ?? line;
      timestamp = parsed.timestamp ?? '';
    } catch {
      level = /\b(warn|error)/i.exec(line)?.[1]?.toLowerCase() ?? '';
    }
    if (level !== 'warn' && level !== 'error') continue;
    const key = `${level} ${message}`;
    const known = byMessage.get(key);
    byMessage.set(
      key,
      known
        ? { ...known, count: known.count + 1 }
        : { level, message, count: 1, first: timestamp, example: line.slice(0, 500) },
    );
  }
  return [...byMessage.values()];
}

function fixed(value: number, digits = 1): string {
  return Number.isFinite(value) ? value.toFixed(digits) : '-';
}

function summarise(input: {
  mix: Mix;
  probe: readonly ProbeSample[];
  probeErrors: readonly string[];
  metrics: readonly MetricsSample[];
  metricsErrors: readonly string[];
  rounds: readonly { round: number; scenario: ScenarioName; startedAt: string; ms: number }[];
  mixSeconds: number;
  machine: Record<string, string>;
}) {
  const { mix, probe, metrics } = input;
  const timeline = metrics.map((s, i) => intervalOf(metrics[i - 1], s));
  const phases: Phase[] = ['setup', ...SCENARIOS, 'drain'];
  const byPhase = phases
    .map((phase) => {
      const samples = probe.filter((s) => s.phase === phase);
      // The metric deltas of the samples taken while this phase ran (each from the one before).
      let cpuWorker = 0;
      let seconds = 0;
      let passes = 0;
      let passSum = 0;
      const buckets = new Map<string, number>();
      let eventLoopMaxMs = 0;
      let ingressLoopMaxMs = 0;
      let lagMax = 0;
      metrics.forEach((sample, i) => {
        const previous = metrics[i - 1];
        if (sample.phase !== phase || !previous) return;
        cpuWorker += sample.cpu.worker - previous.cpu.worker;
        seconds += sample.t - previous.t;
        passes += sample.passCount - previous.passCount;
        passSum += sample.passSum - previous.passSum;
        for (const [le, count] of sample.passBuckets)
          buckets.set(le, (buckets.get(le) ?? 0) + count - (previous.passBuckets.get(le) ?? 0));
        eventLoopMaxMs = Math.max(eventLoopMaxMs, sample.eventLoopMaxSeconds * 1000);
        ingressLoopMaxMs = Math.max(ingressLoopMaxMs, sample.ingressEventLoopMaxSeconds * 1000);
        for (const partitions of sample.lag.values()) lagMax = Math.max(lagMax, ...partitions.values());
      });
      const over250 = passes - (buckets.get('0.25') ?? passes);
      return {
        phase,
        probe: probeStats(samples),
        workerCores: seconds > 0 ? cpuWorker / seconds : Number.NaN,
        seconds,
        passes,
        passMeanMs: passes > 0 ? (passSum / passes) * 1000 : Number.NaN,
        passesOver250Ms: over250,
        workerEventLoopMaxMs: eventLoopMaxMs,
        ingressEventLoopMaxMs: ingressLoopMaxMs,
        lagMaxOnePartition: lagMax,
      };
    })
    .filter((row) => row.probe.samples > 0 || row.seconds > 0);
  const mixed = metrics.filter((s) => s.phase !== 'setup' && s.phase !== 'drain');
  const firstMixed = metrics[metrics.indexOf(mixed[0] as MetricsSample) - 1] ?? mixed[0];
  const lastMixed = mixed.at(-1);
  const cpu = (pick: (s: MetricsSample) => number) => {
    const seconds = (lastMixed?.t ?? 0) - (firstMixed?.t ?? 0);
    const used = firstMixed && lastMixed ? pick(lastMixed) - pick(firstMixed) : Number.NaN;
    return { cpuSeconds: used, seconds, cores: used / seconds };
  };
  const duringMix = probe.filter((s) => s.phase !== 'setup' && s.phase !== 'drain');
  const roundsDone = new Set(input.rounds.filter((r) => r.scenario === 'event-stream').map((r) => r.round))
    .size;
  const sortedDeliveries = mix.deliveries.map((d) => d.ms);
  return {
    bench: 'mixed-soak',
    machine: input.machine,
    settings: {
      mixSeconds: input.mixSeconds,
      requestedMixSeconds: MIX_SECONDS,
      probeEveryMs: PROBE_EVERY_MS,
      usersPerRound: USERS_PER_ROUND,
      readWaitMs: READ_WAIT_MS,
      slowMs: SLOW_MS,
      roundsCompleted: roundsDone,
      roundsStarted: Math.max(0, ...input.rounds.map((r) => r.round)),
    },
    probe: {
      overall: probeStats(duringMix),
      includingSetupAndDrain: probeStats(probe),
      byPhase: Object.fromEntries(byPhase.map((row) => [row.phase, row.probe])),
      slowest: [...probe].sort((a, b) => b.ms - a.ms).slice(0, 10),
      commandErrors: input.probeErrors,
    },
    phases: byPhase,
    projector: {
      lagMax: lagMaxima(metrics),
      passDuring: passStats(firstMixed, lastMixed),
      passWhole: passStats(metrics[0], metrics.at(-1)),
      timeline,
      metricsErrors: input.metricsErrors,
    },
    cpu: {
      worker: cpu((s) => s.cpu.worker),
      ingress: cpu((s) => s.cpu.ingress),
      redis: cpu((s) => s.cpu.redis),
    },
    webhooks: {
      receiverRequests: mix.receiver.requests,
      eventsSeen: mix.receiver.failedFirstAttempts,
      eventsDelivered: mix.receiver.delivered.size,
      badSignatures: mix.receiver.badSignatures,
      linkUnlinkDeliveryP50Ms: percentile(sortedDeliveries, 50),
      linkUnlinkDeliveryMaxMs: sortedDeliveries.length ? Math.max(...sortedDeliveries) : Number.NaN,
    },
    ratingInputVisibleMs: mix.ratingVisibleMs.map((ms) => Math.round(ms)),
    slowestRequests: [...mix.latencies]
      .map(([what, times]) => ({
        what,
        count: times.length,
        p50Ms: Number(percentile(times, 50).toFixed(1)),
        maxMs: Number(Math.max(...times).toFixed(1)),
        firstMs: Number((times[0] ?? 0).toFixed(1)),
        lastMs: Number((times.at(-1) ?? 0).toFixed(1)),
      }))
      .sort((a, b) => b.maxMs - a.maxMs)
      .slice(0, 15),
    stalls: stallsOf(timeline),
    rounds: input.rounds,
    statuses: Object.fromEntries(
      [...mix.tallies].map(([phase, counts]) => [phase, Object.fromEntries(counts)]),
    ),
    logs: {
      worker: {
        file: (mix.service.workers[0] as ServerProcess).logFile,
        lines: warnings((mix.service.workers[0] as ServerProcess).logFile),
      },
      ingress: { file: mix.service.ingress.logFile, lines: warnings(mix.service.ingress.logFile) },
    },
  };
}

type Summary = ReturnType<typeof summarise>;

/** The columns of the report's table by scenario. */
const PHASE_COLUMNS = [
  'scenario',
  'samples',
  'p50 ms',
  'p99 ms',
  'max ms',
  'failures',
  'worker cores',
  'passes',
  'pass mean ms',
  'passes > 250 ms',
  'max lag (1 partition)',
  'worker loop max ms',
  'ingress loop max ms',
];

function printSummary(summary: Summary): string {
  const out: string[] = [];
  const { probe, settings } = summary;
  const o = probe.overall;
  out.push(
    '',
    `== Mixed soak (issue 43): ${fixed(settings.mixSeconds, 0)} s of scenarios (${settings.roundsCompleted} full rounds, ${settings.roundsStarted} started), probe every ${settings.probeEveryMs} ms, READ_WAIT_MS=${settings.readWaitMs}`,
    `   machine: ${summary.machine.cpus}, load before ${summary.machine['load average before the run (1/5/15 min)']}, commit ${summary.machine.commit}`,
    '',
    `Probe (LinkFantasyTeam answered -> GetFantasyTeam minVersion answered), during the mix: ${o.samples} samples, p50 ${fixed(o.p50Ms)} ms, p99 ${fixed(o.p99Ms)} ms, max ${fixed(o.maxMs)} ms; failures ${o.failures} (> ${SLOW_MS} ms: ${o.over2000Ms}, not 200: ${o.not200})`,
    '',
    'By the scenario running when the link was answered (worker figures from its /metrics and /proc over the same time):',
    '',
    markdownTable(
      PHASE_COLUMNS,
      summary.phases.map((row) => [
        row.phase,
        String(row.probe.samples),
        fixed(row.probe.p50Ms),
        fixed(row.probe.p99Ms),
        fixed(row.probe.maxMs),
        String(row.probe.failures),
        fixed(row.workerCores, 2),
        String(row.passes),
        fixed(row.passMeanMs),
        String(row.passesOver250Ms),
        String(row.lagMaxOnePartition),
        fixed(row.workerEventLoopMaxMs),
        fixed(row.ingressEventLoopMaxMs),
      ]),
      // Every column but the scenario's name is a number, aligned right.
      new Set(PHASE_COLUMNS.slice(1)),
    ),
    '',
    'The 10 slowest probe samples:',
    '',
    markdownTable(
      ['link answered at', 'read ms', 'status', 'scenario', 'round', 'link ms'],
      probe.slowest.map((s) => [
        s.at,
        fixed(s.ms),
        String(s.status),
        s.phase,
        String(s.round),
        fixed(s.linkMs),
      ]),
      new Set(['read ms', 'link ms']),
    ),
    '',
  );
  if (probe.commandErrors.length)
    out.push(
      `Probe commands that failed: ${probe.commandErrors.length}: ${probe.commandErrors.slice(0, 5).join('; ')}`,
      '',
    );
  out.push(
    'Projector lag over the run (fts_projector_lag_events, sampled every 500 ms), per projection:',
    '',
    markdownTable(
      ['projection', 'max in one partition', 'partition', 'max summed', 'when (s)', 'scenario'],
      summary.projector.lagMax.map((l) => [
        l.projection,
        String(l.maxPartition),
        l.partition,
        String(l.maxTotal),
        fixed(l.atSeconds),
        l.phase,
      ]),
      new Set(['max in one partition', 'max summed', 'when (s)']),
    ),
    '',
  );
  const pass = summary.projector.passDuring;
  out.push(
    `Projector passes during the mix (fts_projector_pass_duration_seconds): ${pass.passes}, mean ${fixed(pass.meanMs, 2)} ms, p50 <= ${fixed(pass.p50AtMostMs, 0)} ms, p99 <= ${fixed(pass.p99AtMostMs, 0)} ms, > 250 ms: ${pass.over250Ms}, > 1 s: ${pass.over1s}; per bucket (le s: passes) ${pass.buckets
      .map(([le, n]) => `${le}: ${n}`)
      .join(', ')}`,
    '',
    `CPU during the mix (/proc, user + system): worker ${fixed(summary.cpu.worker.cpuSeconds)} s over ${fixed(summary.cpu.worker.seconds)} s (${fixed(summary.cpu.worker.cores, 2)} cores), ingress ${fixed(summary.cpu.ingress.cores, 2)} cores, redis ${fixed(summary.cpu.redis.cores, 2)} cores`,
    `Webhooks: ${summary.webhooks.receiverRequests} requests received, ${summary.webhooks.eventsSeen} events, ${summary.webhooks.eventsDelivered} delivered (2nd attempt), ${summary.webhooks.badSignatures} bad signatures; link/unlink delivery p50 ${fixed(summary.webhooks.linkUnlinkDeliveryP50Ms)} ms, max ${fixed(summary.webhooks.linkUnlinkDeliveryMaxMs)} ms`,
    `Rating input showing a round's stats after its PlayerSeeding (ms, per round): ${summary.ratingInputVisibleMs.join(', ')}`,
    '',
    'Scenario timings (ms, per round): ' +
      SCENARIOS.map(
        (name) =>
          `${name} ${summary.rounds
            .filter((r) => r.scenario === name)
            .map((r) => Math.round(r.ms))
            .join('/')}`,
      ).join('; '),
    '',
  );
  out.push(
    'Projector stalls (>= 1 s without a pass while a projection was behind), with what the worker and the machine did:',
    '',
    summary.stalls.length === 0
      ? 'none'
      : markdownTable(
          [
            'from s',
            'to s',
            'seconds',
            'scenario',
            'max lag',
            'worker loop max ms',
            'worker cores',
            'other processes cores',
            'steal cores',
            'worker major GC ms',
          ],
          summary.stalls.map((st) => [
            fixed(st.fromT),
            fixed(st.toT),
            fixed(st.seconds, 2),
            st.phases,
            String(st.maxLag),
            fixed(st.workerLoopMaxMs),
            fixed(st.workerCores, 2),
            fixed(st.otherCores, 2),
            fixed(st.stealCores, 2),
            String(st.workerGcMajorMs),
          ]),
          new Set([
            'from s',
            'to s',
            'seconds',
            'max lag',
            'worker loop max ms',
            'worker cores',
            'other processes cores',
            'steal cores',
            'worker major GC ms',
          ]),
        ),
    '',
    'Slowest request kinds of the scenarios (by their slowest answer):',
    '',
    markdownTable(
      ['scenario: request', 'count', 'p50 ms', 'max ms', 'first ms', 'last ms'],
      summary.slowestRequests.map((r) => [
        r.what,
        String(r.count),
        fixed(r.p50Ms),
        fixed(r.maxMs),
        fixed(r.firstMs),
        fixed(r.lastMs),
      ]),
      new Set(['count', 'p50 ms', 'max ms', 'first ms', 'last ms']),
    ),
    '',
  );
  for (const name of ['worker', 'ingress'] as const) {
    const { file, lines } = summary.logs[name];
    out.push(`${name} log warn/error lines (${file}): ${lines.length === 0 ? 'none' : ''}`);
    for (const line of lines.slice(0, 20))
      out.push(`  ${line.count} x ${line.level} "${line.message}" (first ${line.first}): ${line.example}`);
  }
  out.push('', 'Statuses by scenario (request, status: count):');
  for (const [phase, counts] of Object.entries(summary.statuses))
    out.push(
      `  ${phase}: ${Object.entries(counts)
        .map(([what, count]) => `${what}: ${count}`)
        .join(', ')}`,
    );
  return out.join('\n');
}

// ---------------------------------------------------------------------------------------------

async function setUp(service: BenchService, receiver: Receiver, hookUrl: string): Promise<Mix> {
  const { ingress, credentials } = service;
  const token = `Bearer ${await issueToken(ingress, credentials)}`;
  const adminBasic = basicAuthorization(credentials);
  const svcEmail = `svc-${RUN_TAG}@example.com`;
  const svcPassword = password();
  const mix: Mix = {
    service,
    base: ingress.baseUrl,
    adminBasic,
    adminBearer: token,
    imports: new ImportClient(ingress, adminBasic),
    receiver,
    phase: 'setup',
    round: 0,
    tallies: new Map(),
    latencies: new Map(),
    serviceAccount: { email: svcEmail, basic: basic(svcEmail, svcPassword) },
    subscriptionId: randomUUID(),
    lastImportJobId: '',
    readTeam: randomUUID(),
    ratingTeam: randomUUID(),
    streamTeam: { id: randomUUID(), linked: false },
    webhookTeams: Array.from({ length: WEBHOOK_TEAMS }, () => ({ id: randomUUID(), linked: false })),
    ratingPlayers: [],
    nextLinkId: 1,
    nextPlayerId: 1,
    ratingVisibleMs: [],
    deliveries: [],
  };
  const ratingPlayers = newPlayers(mix, RATING_PLAYERS);
  mix.ratingPlayers.push(...ratingPlayers);
  await importAndWait(
    mix,
    'UserSeeding (the service account)',
    {
      importerType: 'UserSeeding',
      priority: 'High',
      importData: {
        users: [
          { email: svcEmail, userType: 'ServiceAccount', roles: ['ServiceAccount'], password: svcPassword },
        ],
      },
    },
    'Completed',
  );
  const subscription = await command(mix, token, 'CreateWebhookSubscription', {
    aggregateRootId: mix.subscriptionId,
    url: hookUrl,
    eventTypes: ['*'],
    description: 'mixed soak: every event, first attempt refused',
  });
  receiver.secret = String(subscription.body.signingSecret);
  const teams = [mix.readTeam, mix.ratingTeam, mix.streamTeam.id, ...mix.webhookTeams.map((t) => t.id)];
  for (const [i, id] of teams.entries())
    await commandOrThrow(ingress, token.slice('Bearer '.length), 'CreateFantasyTeam', {
      aggregateRootId: id,
      name: `Admin XI ${i}`,
    });
  await importAndWait(
    mix,
    'PlayerSeeding (the rating players)',
    {
      importerType: 'PlayerSeeding',
      priority: 'High',
      importData: { season: '2026', players: ratingPlayers.map((p, i) => playerRow(p, 5 + i, 500_000)) },
    },
    'Completed',
  );
  return mix;
}

async function main(): Promise<void> {
  stopAllOnInterrupt();
  ensureBuilt();
  const machine = machineInfo();
  const metricsPort = await freePort();
  const ingressMetricsPort = await freePort();
  const service = await startService('mixed-soak', {
    env: { WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' },
    ingressEnv: {
      READ_WAIT_MS: String(READ_WAIT_MS),
      // Each round signs in wrongly on purpose (an unknown account, a disabled one), all from loopback.
      AUTH_MAX_FAILURES_PER_ADDRESS: '100000',
      METRICS_PORT: String(ingressMetricsPort),
      METRICS_HOST: '127.0.0.1',
    },
    workerEnv: { METRICS_PORT: String(metricsPort), METRICS_HOST: '127.0.0.1' },
  });
  const worker = service.workers[0] as ServerProcess;
  log(
    `ingress ${service.ingress.baseUrl} (pid ${service.ingress.pid}, log ${service.ingress.logFile}), worker pid ${worker.pid} (log ${worker.logFile}), metrics :${metricsPort}`,
  );
  const receiver = new Receiver();
  const hookUrl = await receiver.start();
  const mix = await setUp(service, receiver, hookUrl);

  const probe: ProbeSample[] = [];
  const probeErrors: string[] = [];
  const metrics: MetricsSample[] = [];
  const metricsErrors: string[] = [];
  let probing = true;
  let sampling = true;
  const probeToken = `Bearer ${await issueToken(service.ingress, service.credentials)}`;
  const metricsDone = sampleMetrics(
    mix,
    {
      worker: `http://127.0.0.1:${metricsPort}/metrics`,
      ingress: `http://127.0.0.1:${ingressMetricsPort}/metrics`,
    },
    () => sampling,
    metrics,
    metricsErrors,
  );
  const probeDone = probeLoop(mix, probeToken, () => probing, probe, probeErrors);
  await sleep(2_000); // a few probe samples on the quiet service (phase setup)

  const rounds: { round: number; scenario: ScenarioName; startedAt: string; ms: number }[] = [];
  const mixStarted = performance.now();
  const endsAt = mixStarted + MIX_SECONDS * 1000;
  let failure: Error | undefined;
  try {
    // Whole scenarios until the time is up; the first round always runs to its end.
    for (mix.round = 1; performance.now() < endsAt; mix.round += 1) {
      for (const name of SCENARIOS) {
        if (mix.round > 1 && performance.now() >= endsAt) break;
        mix.phase = name;
        const at = new Date().toISOString();
        const began = performance.now();
        log(`round ${mix.round} ${name}: start`);
        try {
          await SCENARIO_RUNS[name](mix);
        } catch (error) {
          throw new Error(
            `scenario ${name} (round ${mix.round}) failed: ${error instanceof Error ? error.message : String(error)}`,
            { cause: error },
          );
        }
        const ms = performance.now() - began;
        rounds.push({ round: mix.round, scenario: name, startedAt: at, ms });
        log(`round ${mix.round} ${name}: done in ${Math.round(ms)} ms`);
      }
    }
  } catch (error) {
    failure = error instanceof Error ? error : new Error(String(error));
  }
  const mixSeconds = (performance.now() - mixStarted) / 1000;
  mix.phase = 'drain';
  probing = false;
  await probeDone;
  // Let the projector catch up while the sampler still runs, so the lag's end is on record.
  const drainUntil = performance.now() + 30_000;
  while (performance.now() < drainUntil) {
    const last = metrics.at(-1);
    if (last && [...last.lag.values()].every((partitions) => [...partitions.values()].every((v) => v === 0)))
      break;
    await sleep(500);
  }
  await sleep(METRICS_EVERY_MS * 2);
  sampling = false;
  await metricsDone;

  const summary = summarise({ mix, probe, probeErrors, metrics, metricsErrors, rounds, mixSeconds, machine });
  const jsonFile = path.join(
    scratchDir(),
    `mixed-soak-${new Date().toISOString().replace(/[:.]/g, '-')}.json`,
  );
  writeFileSync(
    jsonFile,
    `${JSON.stringify({ ...summary, failure: failure?.message ?? null, probeSamples: probe }, null, 2)}\n`,
  );
  process.stdout.write(`${printSummary(summary)}\n\nJSON: ${jsonFile}\n`);
  if (failure) throw failure;
}

main()
  .catch((error: unknown) => {
    process.stderr.write(
      `\n[mixed-soak] FAILED: ${error instanceof Error ? error.message : String(error)}\n`,
    );
    process.exitCode = 1;
  })
  .finally(() => stopAll());
