import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';

import keySlot from 'cluster-key-slot';

import {
  SHALLOW_SKIP,
  type UserListingQuery,
  UsersReader,
} from '../ingress/readmodel/list-users/users.reader';
import { UserIds } from '../shared/accounts/user-ids';
import { ALL_DECIDERS } from '../shared/event-store/all-deciders';
import { EventStore } from '../shared/event-store/event-store';
import { CommandHandler } from '../shared/event-store/handle-command';
import { createLogger } from '../shared/logger';
import {
  closeConnections,
  createRedisConnection,
  type RedisClient,
  scanKeys,
} from '../shared/redis/connections';
import type { Keys } from '../shared/redis/keys';
import { LOG_PARTITIONS } from '../shared/redis/partitions';
import type { AssignableRole } from '../shared/roles';
import type { UserCommand } from '../shared/user/user.commands';
import { userDecider } from '../shared/user/user.decider';
import { usersProjection } from '../shared/user/users.projection';
import { userIdOfMember } from '../shared/user/users-index';
import { seededRandom } from '../test/helpers/seeded-random';
import { rebuildProjection } from '../workers/projector/rebuild';
import {
  type LoadResult,
  percentile,
  positiveNumberFromEnv,
  reportRun,
  settingsFromEnv,
  summarise,
  type Workload,
} from './lib/load';
import { CostMeter, cpuRow } from './lib/process-cost';
import { ensureBuilt, stopAll } from './lib/processes';
import { type BenchReport, compareWith, type ComparisonRow, machineInfo, problemsOf } from './lib/report';
import { runBenches } from './lib/runner';
import {
  forEachConcurrently,
  issueToken,
  JSON_HEADERS,
  postJson,
  sleep,
  startBareExpress,
  startRefRead,
  startService,
} from './lib/service';

/**
 * ListUsers through POST /api/readmodel over a table growing through several sizes (default 50,000,
 * 100,000 and 200,000 accounts), a page of 100: from the start, from the middle (skip half the
 * table, and the same page by the `after` cursor), and with a role + disabled filter and an e-mail
 * prefix; one request at a time at each size (the latency a caller sees, target p99 under 20 ms),
 * and under load at the largest (autocannon, against a bare Express 5 app measured in the same
 * run). Then how the users projection spreads over the partitions' slots (ADR 0032), how long its
 * rebuild takes, and the Redis memory it takes per account.
 *
 * The accounts are created in the bench process straight through the command handler (CreateUser
 * without a password: no argon2 hash; a tenth then DisableUser), and the worker's projector builds
 * the projection from the log, as in production.
 *
 * Settings: BENCH_CONNECTIONS, BENCH_WARMUP, BENCH_DURATION (seconds), BENCH_ROUNDS; BENCH_USERS
 * (the sizes, comma-separated, default 50000,100000,200000); BENCH_PROBE_SAMPLES (sequential requests per probe row and round, default 200).
 */

const NAME = 'list-users';
const PAGE = 100;
const P99_TARGET_MS = 20;
const SEED_CONCURRENCY = 64;
const PROBE_WARMUP_SAMPLES = 20;
const CATCH_UP_TIMEOUT_MS = 600_000;
const PROGRESS_EVERY = 20_000;
const MEMORY_SAMPLE_DOCUMENTS = 1_000;
/** Given names the e-mails start with: a prefix of one of them matches about 1/25 of the table. */
const NAMES = [
  'ada', 'alan', 'barbara', 'claude', 'donald', 'edsger', 'frances', 'grace', 'hedy', 'ivan',
  'john', 'katherine', 'leslie', 'margaret', 'niklaus', 'ole', 'peter', 'radia', 'shafi', 'tim',
  'ursula', 'vint', 'whitfield', 'xavier', 'yukihiro',
]; // prettier-ignore
const PREFIX_NAME = 'grace';

interface SeedAccount {
  readonly email: string;
  readonly roles: readonly AssignableRole[];
  readonly userType: 'Human' | 'ServiceAccount';
  readonly disabled: boolean;
}

/**
 * `count` accounts, fixed by a seed: e-mail `<name>.<n>@<domain>`; roles 80% Member, 8%
 * ServiceAccount (a ServiceAccount user), 7% Member + UserManager, 5% Admin; 10% disabled.
 */
function accounts(count: number): SeedAccount[] {
  const random = seededRandom(19);
  return Array.from({ length: count }, (_, n) => {
    const name = NAMES[Math.floor(random() * NAMES.length)] ?? 'ada';
    const draw = random();
    const roles: AssignableRole[] =
      draw < 0.8
        ? ['Member']
        : draw < 0.88
          ? ['ServiceAccount']
          : draw < 0.95
            ? ['Member', 'UserManager']
            : ['Admin'];
    return {
      email: `${name}.${n}@example${n % 7}.com`,
      roles,
      userType: roles[0] === 'ServiceAccount' ? 'ServiceAccount' : 'Human',
      disabled: random() < 0.1,
    };
  });
}

function note(message: string): void {
  process.stderr.write(`[bench] ${message}\n`);
}

function count(value: number): string {
  return value.toLocaleString('en-US');
}

/** Creates (and disables) the accounts through the real command path; its seconds. */
async function seedAccounts(redis: RedisClient, keys: Keys, all: readonly SeedAccount[]): Promise<number> {
  const store = new EventStore(redis, keys, ALL_DECIDERS);
  const commands = new CommandHandler(store, { ttlMs: 5_000, waitMs: 10_000 });
  const actorUserId = randomUUID();
  const userIds = new UserIds(redis, keys, store);
  const run = async (userId: string, command: UserCommand) => {
    const outcome = await commands.handle(userDecider, {
      aggregateId: userId,
      command,
      context: { now: new Date(), actorUserId, actorRoles: ['Admin'] },
      metadata: { actorUserId, requestId: null, correlationId: 'bench-list-users' },
    });
    if (!outcome.accepted) throw new Error(`${command.type} refused: ${outcome.message}`);
  };
  const startedAt = performance.now();
  let done = 0;
  await forEachConcurrently(all, SEED_CONCURRENCY, async (account) => {
    const userId = await userIds.newIdFor(account.email);
    await run(userId, {
      type: 'CreateUser',
      data: {
        userId,
        email: account.email,
        userName: account.email,
        userType: account.userType,
        roles: account.roles,
        firstName: 'Bench',
        lastName: `User ${userId.slice(0, 8)}`,
        emailVerified: true,
        securityStamp: randomUUID(),
      },
    });
    if (account.disabled)
      await run(userId, { type: 'DisableUser', data: { reason: null, securityStamp: randomUUID() } });
    done += 1;
    if (done % PROGRESS_EVERY === 0) note(`  ... ${count(done)} of ${count(all.length)} accounts created`);
  });
  return (performance.now() - startedAt) / 1000;
}

/** Waits until ListUsers counts `expected` accounts (the projector has caught up); its seconds. */
async function projected(url: string, authorization: string, expected: number): Promise<number> {
  const startedAt = performance.now();
  for (;;) {
    const answer = await postJson(url, { query: { queryType: 'ListUsers' }, take: 1 }, { authorization });
    const totalCount = (answer.body as { totalCount?: unknown } | null)?.totalCount;
    if (answer.status === 200 && totalCount === expected) return (performance.now() - startedAt) / 1000;
    if (performance.now() - startedAt > CATCH_UP_TIMEOUT_MS)
      throw new Error(`ListUsers: ${answer.status}, totalCount ${String(totalCount)} of ${expected}`);
    await sleep(250);
  }
}

/** One kind of ListUsers request: its body, and what a right answer holds. */
interface Listing {
  readonly name: string;
  readonly body: string;
  readonly expectedTotal: number;
  readonly expectedFirst: string;
}

/** Sends the listing once and checks it answers the expected page (a full page, the expected count and first e-mail). */
async function checkListing(
  url: string,
  authorization: string,
  listing: Listing,
): Promise<string | undefined> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { ...JSON_HEADERS, authorization },
    body: listing.body,
  });
  const text = await response.text();
  if (response.status !== 200) return `${listing.name}: ${response.status} ${text.slice(0, 300)}`;
  const answer = JSON.parse(text) as { results: { email: string }[]; totalCount: number };
  if (
    answer.totalCount !== listing.expectedTotal ||
    answer.results.length !== PAGE ||
    answer.results[0]?.email !== listing.expectedFirst
  ) {
    return `${listing.name}: totalCount ${answer.totalCount} (expected ${listing.expectedTotal}), ${answer.results.length} results, first ${answer.results[0]?.email} (expected ${listing.expectedFirst})`;
  }
  return undefined;
}

/** `samples` requests one after another (after a few discarded): each one's round trip. */
async function probe(
  url: string,
  authorization: string,
  listing: Listing,
  samples: number,
): Promise<LoadResult> {
  const latencies: number[] = [];
  let failures = 0;
  for (let i = 0; i < PROBE_WARMUP_SAMPLES + samples; i += 1) {
    const sentAt = performance.now();
    const response = await fetch(url, {
      method: 'POST',
      headers: { ...JSON_HEADERS, authorization },
      body: listing.body,
    });
    await response.arrayBuffer();
    const elapsed = performance.now() - sentAt;
    if (i < PROBE_WARMUP_SAMPLES) continue;
    if (response.status !== 200) failures += 1;
    else latencies.push(elapsed);
  }
  return {
    requestsPerSecond: Number.NaN,
    p50Ms: percentile(latencies, 50),
    p99Ms: percentile(latencies, 99),
    responses: latencies.length,
    non2xx: failures,
    errors: 0,
    warmupFailures: 0,
  };
}

/**
 * `samples` reads of the listing's page straight from UsersReader in the bench process (after a few
 * discarded): what the page costs in Redis round trips and the merge, without HTTP or sign-in.
 */
async function readerProbe(reader: UsersReader, listing: Listing, samples: number): Promise<LoadResult> {
  const body = JSON.parse(listing.body) as {
    query: UserListingQuery & { queryType: string };
    skip?: number;
    take: number;
    after?: string;
  };
  const { queryType: _queryType, ...query } = body.query;
  const page = { skip: body.skip ?? 0, take: body.take, after: body.after };
  const latencies: number[] = [];
  for (let i = 0; i < PROBE_WARMUP_SAMPLES + samples; i += 1) {
    const startedAt = performance.now();
    const { items } = await reader.list(query, page);
    const elapsed = performance.now() - startedAt;
    if (items.length !== PAGE) throw new Error(`${listing.name}: ${items.length} items from the reader`);
    if (i >= PROBE_WARMUP_SAMPLES) latencies.push(elapsed);
  }
  return {
    requestsPerSecond: Number.NaN,
    p50Ms: percentile(latencies, 50),
    p99Ms: percentile(latencies, 99),
    responses: latencies.length,
    non2xx: 0,
    errors: 0,
    warmupFailures: 0,
  };
}

interface ProjectionMemory {
  /** MEMORY USAGE (SAMPLES 0: every element) of every index key. */
  readonly indexBytes: number;
  readonly indexKeys: number;
  /** MEMORY USAGE of a sample of documents, times the number of documents. */
  readonly documentBytes: number;
  /** used_memory before minus after deleting every key of the projection (DEL, not UNLINK). */
  readonly freedBytes: number;
}

function usedMemory(info: string): number {
  return Number(/^used_memory:(\d+)/m.exec(info)?.[1] ?? NaN);
}

/** What the users projection takes in Redis; deletes the projection at the end (measured last). */
async function projectionMemory(
  redis: RedisClient,
  keys: Keys,
  documents: number,
): Promise<ProjectionMemory> {
  const [indexPattern, documentPattern] = [
    `${keys.prefix}{p*}:users:by-email:*`,
    `${keys.prefix}{p*}:users:user:*`,
  ];
  let indexBytes = 0;
  let indexKeys = 0;
  for await (const found of scanKeys(redis, indexPattern)) {
    for (const key of found) {
      indexBytes += Number(await redis.memory('USAGE', key, 'SAMPLES', 0));
      indexKeys += 1;
    }
  }
  const sample: string[] = [];
  for await (const found of scanKeys(redis, documentPattern)) {
    sample.push(...found.slice(0, MEMORY_SAMPLE_DOCUMENTS - sample.length));
    if (sample.length >= MEMORY_SAMPLE_DOCUMENTS) break;
  }
  let sampleBytes = 0;
  for (const key of sample) sampleBytes += Number(await redis.memory('USAGE', key));
  const documentBytes = (sampleBytes / Math.max(1, sample.length)) * documents;

  const before = usedMemory(await redis.info('memory'));
  for (const pattern of usersProjection.keyPatterns(keys)) {
    for await (const found of scanKeys(redis, pattern)) if (found.length) await redis.del(...found);
  }
  const after = usedMemory(await redis.info('memory'));
  return { indexBytes, indexKeys, documentBytes, freedBytes: before - after };
}

/** The table sizes measured in turn (BENCH_USERS, a comma list), smallest first. */
function sizesFromEnv(): number[] {
  const text = process.env.BENCH_USERS ?? '50000,100000,200000';
  const sizes = text.split(',').map((size) => Math.round(Number(size)));
  if (sizes.some((size) => !Number.isFinite(size) || size <= 0)) {
    throw new Error('BENCH_USERS must be positive numbers, separated by commas');
  }
  return [...new Set(sizes)].sort((a, b) => a - b);
}

/** The four listings of a table of the first `size` accounts (and the bootstrap Admin), with what each must answer. */
function listingsOf(all: readonly SeedAccount[], adminEmail: string): Listing[] {
  const total = all.length + 1;
  // Byte order, as ListUsers answers (the seeded e-mails are ASCII: code-unit order is byte order).
  const emails = [...all.map((account) => account.email), adminEmail].sort();
  const middle = Math.floor(total / 2);
  const filtered = all
    .filter(
      (account) =>
        account.email.startsWith(`${PREFIX_NAME}.`) && account.roles.includes('Member') && !account.disabled,
    )
    .map((account) => account.email)
    .sort();
  return [
    {
      name: `ListUsers, page of ${PAGE} at skip 0`,
      body: JSON.stringify({ query: { queryType: 'ListUsers' }, skip: 0, take: PAGE }),
      expectedTotal: total,
      expectedFirst: emails[0] ?? '',
    },
    {
      name: `ListUsers, page of ${PAGE} at skip ${count(middle)}`,
      body: JSON.stringify({ query: { queryType: 'ListUsers' }, skip: middle, take: PAGE }),
      expectedTotal: total,
      expectedFirst: emails[middle] ?? '',
    },
    {
      name: `ListUsers, page of ${PAGE} after the ${count(middle)}th e-mail (cursor)`,
      body: JSON.stringify({ query: { queryType: 'ListUsers' }, after: emails[middle - 1], take: PAGE }),
      expectedTotal: total,
      expectedFirst: emails[middle] ?? '',
    },
    {
      name: `ListUsers, page of ${PAGE}, role Member + disabled false + emailPrefix "${PREFIX_NAME}."`,
      body: JSON.stringify({
        query: { queryType: 'ListUsers', role: 'Member', disabled: false, emailPrefix: `${PREFIX_NAME}.` },
        skip: 0,
        take: PAGE,
      }),
      expectedTotal: filtered.length,
      expectedFirst: filtered[0] ?? '',
    },
  ];
}

/** How many entries the log partitions hold: every event appended (LOG_RETENTION keeps them all here). */
async function userEventCount(redis: RedisClient, keys: Keys): Promise<number> {
  const lengths = await Promise.all(
    Array.from({ length: LOG_PARTITIONS }, (_, partition) => redis.xlen(keys.logPartition(partition))),
  );
  return lengths.reduce((sum, length) => sum + length, 0);
}

/** How the projection's keys spread over the partitions (each its own hash tag, so its own slot). */
interface Spread {
  /** Entries of the every-account index per partition. */
  readonly accounts: readonly number[];
  /** MEMORY USAGE (SAMPLES 0) of each partition's index keys, plus its documents (sampled size x count). */
  readonly bytes: readonly number[];
  /** The slot of each partition's keys (the slot function ioredis routes by, as CLUSTER KEYSLOT). */
  readonly slots: readonly number[];
}

async function projectionSpread(redis: RedisClient, keys: Keys): Promise<Spread> {
  const accounts: number[] = [];
  const bytes: number[] = [];
  const slots: number[] = [];
  for (let partition = 0; partition < LOG_PARTITIONS; partition++) {
    const index = keys.users.byEmail(partition, 'all', 'all', 'all');
    const members = await redis.zcard(index);
    let partitionBytes = 0;
    for await (const found of scanKeys(redis, keys.users.byEmail(partition, '*', '*', '*'))) {
      for (const key of found) partitionBytes += Number(await redis.memory('USAGE', key, 'SAMPLES', 0));
    }
    const sample = await redis.zrange(index, 0, 99);
    let sampleBytes = 0;
    for (const member of sample)
      sampleBytes += Number(await redis.memory('USAGE', keys.users.user(userIdOfMember(member))));
    partitionBytes += (sampleBytes / Math.max(1, sample.length)) * members;
    accounts.push(members);
    bytes.push(partitionBytes);
    slots.push(keySlot(index));
  }
  return { accounts, bytes, slots };
}

/** Starts Redis, the baseline, one ingress and one worker; seeds; measures; stops everything. */
export async function run(): Promise<BenchReport> {
  const machine = machineInfo();
  const settings = settingsFromEnv({ connections: 10, warmupSeconds: 2, durationSeconds: 8, rounds: 3 });
  const sizes = sizesFromEnv();
  const userCount = sizes.at(-1) ?? 0;
  const probeSamples = Math.round(positiveNumberFromEnv('BENCH_PROBE_SAMPLES', 200));
  ensureBuilt();
  const logger = createLogger({ level: 'warn', processRole: 'bench' });
  let redis: RedisClient | undefined;
  let readerRedis: RedisClient | undefined;
  let meter: CostMeter | undefined;
  try {
    const baselineServer = await startBareExpress();
    const { redisServer, keys, credentials, ingress } = await startService(NAME, {
      ingressEnv: { AUTH_CACHE_TTL_SECONDS: '3600' },
      workers: 1,
    });
    redis = createRedisConnection({ kind: 'standalone', url: redisServer.url }, 'request', logger);
    readerRedis = createRedisConnection({ kind: 'standalone', url: redisServer.url }, 'request', logger);
    const reader = new UsersReader(readerRedis, keys);
    const url = `${ingress.baseUrl}/api/readmodel`;
    const token = await issueToken(ingress, credentials);
    const authorization = `Bearer ${token}`;

    // 1. The table grows through each size: the accounts up to it are created, projected by the
    //    worker, and the four listings checked and probed one request at a time.
    const all = accounts(userCount);
    const memoryBeforeSeed = usedMemory(await redis.info('memory'));
    let seedSeconds = 0;
    let catchUpSeconds = 0;
    const probeRows: ComparisonRow[] = [];
    const growth: string[] = [];
    let seeded = 0;
    let listings: Listing[] = [];
    for (const size of sizes) {
      note(
        `creating accounts ${count(seeded)} to ${count(size)} through the command handler (${SEED_CONCURRENCY} at once)`,
      );
      seedSeconds += await seedAccounts(redis, keys, all.slice(seeded, size));
      seeded = size;
      catchUpSeconds = await projected(url, authorization, size + 1);
      note(`${count(size)} accounts projected ${catchUpSeconds.toFixed(1)} s after the last command`);
      listings = listingsOf(all.slice(0, size), credentials.adminEmail);
      const problems: string[] = [];
      for (const listing of listings) {
        const problem = await checkListing(url, authorization, listing);
        if (problem) problems.push(problem);
      }
      if (problems.length > 0) throw new Error(problems.join('; '));
      const probeRuns = listings.map((): LoadResult[] => []);
      const readerRuns = listings.map((): LoadResult[] => []);
      for (let round = 1; round <= settings.rounds; round += 1) {
        for (const [index, listing] of listings.entries()) {
          const result = await probe(url, authorization, listing, probeSamples);
          probeRuns[index]?.push(result);
          reportRun(`${count(size)} accounts: ${listing.name}, one at a time`, round, result);
          const read = await readerProbe(reader, listing, probeSamples);
          readerRuns[index]?.push(read);
          reportRun(`${count(size)} accounts: ${listing.name}, the reader in process`, round, read);
        }
      }
      for (const [index, listing] of listings.entries()) {
        const row = summarise(
          `${count(size + 1)} accounts: ${listing.name}, one at a time (${probeSamples} requests)`,
          probeRuns[index] ?? [],
        );
        probeRows.push({ ...row, ratio: null, target: null, standalone: true, p99BelowMs: P99_TARGET_MS });
        const read = summarise(
          `${count(size + 1)} accounts: ${listing.name}, UsersReader in process (${probeSamples} reads)`,
          readerRuns[index] ?? [],
        );
        probeRows.push({ ...read, ratio: null, target: null, standalone: true });
        growth.push(
          `${count(size + 1)}: ${listing.name.replace('ListUsers, ', '')} p99 ${row.p99Ms.toFixed(1)} ms`,
        );
      }
    }
    const total = userCount + 1; // the bootstrap Admin
    const memoryAfterSeed = usedMemory(await redis.info('memory'));

    // 3. Under load, against the baseline.
    const baseline: Workload = {
      name: 'bare Express 5 + express.json() (baseline)',
      url: `${baselineServer.baseUrl}/api/readmodel`,
      method: 'POST',
      headers: JSON_HEADERS,
      body: listings[0]?.body ?? '',
    };
    const loaded: Workload[] = listings.map((listing) => ({
      name: `${listing.name}, ${settings.connections} connections`,
      url,
      method: 'POST',
      headers: { ...JSON_HEADERS, authorization },
      body: listing.body,
    }));
    const refReadServer = await startRefRead(credentials);
    const refRead: Workload = {
      name: 'ref-read: Express 5 + express.json() + HS256 verify (reference)',
      url: `${refReadServer.baseUrl}/api/readmodel`,
      method: 'POST',
      headers: { ...JSON_HEADERS, authorization },
      body: listings[0]?.body ?? '',
    };
    const servers = new Map([
      [baseline.name, baselineServer.pid],
      [refRead.name, refReadServer.pid],
      ...loaded.map((workload) => [workload.name, ingress.pid] as const),
    ]);
    meter = CostMeter.open(redisServer.url, (workload) => ({
      ingress: servers.get(workload.name) ?? 0,
      redis: redisServer.pid,
    }));
    const costs = meter;
    const measured = await costs.measure([baseline, refRead, ...loaded], settings);
    const [base, ref, ...rest] = measured;
    if (!base || !ref) throw new Error('the baseline or the reference is missing');
    const cpu = [
      cpuRow(costs, base.workload),
      cpuRow(costs, ref.workload),
      ...rest.map((row) => cpuRow(costs, row.workload, { reference: ref.workload })),
    ];

    const rows: ComparisonRow[] = [...compareWith(base, [ref, ...rest], null), ...probeRows];

    // 4. How the projection spreads over the partitions' slots.
    const spread = await projectionSpread(redis, keys);
    const share = (values: readonly number[]) =>
      Math.max(...values) /
      Math.max(
        1,
        values.reduce((sum, value) => sum + value, 0),
      );
    if (spread.accounts.reduce((sum, value) => sum + value, 0) !== total)
      throw new Error(`the partitions' indexes hold ${spread.accounts.join('+')} accounts, not ${total}`);

    // 5. A rebuild of the users projection (what an upgrade from the {users} layout runs), timed.
    const eventsBefore = await userEventCount(redis, keys);
    const rebuildStartedAt = performance.now();
    const replayed = await rebuildProjection(redis, keys, usersProjection);
    const rebuildSeconds = (performance.now() - rebuildStartedAt) / 1000;
    await projected(url, authorization, total);
    const rebuildCheck = await checkListing(url, authorization, listings[1] ?? listings[0]!);
    if (rebuildCheck) throw new Error(`after the rebuild: ${rebuildCheck}`);
    note(
      `rebuilt from ${count(eventsBefore)} events (${count(replayed)} applied) in ${rebuildSeconds.toFixed(1)} s`,
    );

    // 6. Memory, last: it deletes the projection.
    const memory = await projectionMemory(redis, keys, userCount + 1);
    const perUser = (bytes: number) => (bytes / total).toFixed(0);
    note(
      `projection memory: indexes ${count(memory.indexBytes)} B in ${memory.indexKeys} keys, documents ~${count(Math.round(memory.documentBytes))} B; ` +
        `freed by deleting it ${count(memory.freedBytes)} B (${perUser(memory.freedBytes)} B per account)`,
    );
    // (1 + roles) x 2 userType sets x 2 state sets per account; the Admin's 2 x 2 x 2.
    const indexEntries = all.reduce((sum, account) => sum + (1 + account.roles.length) * 4, 8);
    const redisVersion = /^redis_version:(\S+)/m.exec(await redis.info('server'))?.[1] ?? 'unknown';

    return {
      name: NAME,
      title: `ListUsers over ${sizes.map(count).join(', ')} accounts (POST /api/readmodel), the users projection's spread, rebuild and memory`,
      settings,
      machine,
      rows,
      cpu,
      notes: [
        `Setup (not measured): ${count(userCount)} accounts created in the bench process through the command handler (CreateUser without a password, so no argon2 hash; ${SEED_CONCURRENCY} at once; ${all.filter((account) => account.disabled).length.toLocaleString('en-US')} then DisableUser) in ${seedSeconds.toFixed(1)} s, ${(userCount / seedSeconds).toFixed(0)} accounts/s; the worker's projector had them all in ListUsers ${catchUpSeconds.toFixed(1)} s after the last command. E-mails \`<name>.<n>@example<n mod 7>.com\` over ${NAMES.length} names; roles 80% [Member], 8% [ServiceAccount] (userType ServiceAccount), 7% [Member, UserManager], 5% [Admin]; 10% disabled; plus the bootstrap Admin (${count(total)} accounts).`,
        `Requests: POST /api/readmodel by the Admin's Bearer token (AUTH_CACHE_TTL_SECONDS=3600), \`take\` ${PAGE}, at each size (${sizes.map(count).join(', ')} accounts, plus the Admin): \`${listings[0]?.body ?? ''}\`, the same at skip half the table, \`after\` the e-mail before the middle one (the same page by the cursor; at the largest size \`${listings[2]?.body ?? ''}\`), and \`${listings[3]?.body ?? ''}\`. Each answer was checked once per size (200, ${PAGE} results, the expected totalCount and first e-mail). The users projection is spread over the ${LOG_PARTITIONS} partitions (ADR 0032): a page is the merge of ${LOG_PARTITIONS} ranges (skip up to ${SHALLOW_SKIP}: one script per partition answering its counts and first skip + take members; deeper: where the page starts is searched first).`,
        `Under load (at ${count(total)} accounts): autocannon, ${settings.connections} connections, against the bare Express 5 baseline (bench/baselines/bare-express.cjs, the same body, no Authorization header) and ref-read (bench/baselines/ref-read.cjs: the same body and token, an HS256 verify and an answer from its claims; the CPU table sets each listing's CPU per request beside it, no target: a listing also reads its page from Redis); "vs baseline" is the ratio of the medians. One at a time: ${probeSamples} sequential requests per round by fetch in the bench process (after ${PROBE_WARMUP_SAMPLES} discarded), the round trip to the last byte; target p99 under ${P99_TARGET_MS} ms; the "per round" column of these rows shows the p99 per round.`,
        `Growth of the one-at-a-time p99 (median of the rounds) with the table: ${growth.join('; ')}.`,
        `Spread over the slots at ${count(total)} accounts: each partition's keys share its tag \`{pN}\` (slots ${spread.slots.join(', ')}, one per partition, by the slot function ioredis routes by); accounts per partition ${spread.accounts.map(count).join(' / ')}: the largest holds ${(100 * share(spread.accounts)).toFixed(2)} % of the accounts and ${(100 * share(spread.bytes)).toFixed(2)} % of the projection's bytes (its index keys by MEMORY USAGE ... SAMPLES 0, its documents as 100 sampled x its count), against 1/8 = 12.5 % allowed and 1/16 = 6.25 % for an even spread.`,
        `Rebuild of the users projection (\`rebuildProjection\`, what \`npm run projections:rebuild -- users\` and an upgrade from the \`{users}\` layout run; the service up and idle, the worker's projector running): ${count(eventsBefore)} events in the log, ${count(replayed)} applied (the streams folded, then the log's rest) in ${rebuildSeconds.toFixed(1)} s: ${(replayed / rebuildSeconds).toFixed(0)} events/s, ${((1_000_000 * rebuildSeconds) / Math.max(1, replayed)).toFixed(0)} s per million events.`,
        `The service runs compiled (\`npm run build\`): one \`node dist/ingress/main.js\` (NODE_ENV=production, LOG_LEVEL=warn) and one \`node dist/workers/main.js\`, on a private redis-server on loopback.`,
        `Memory of the users projection (Redis ${redisVersion}): its ${memory.indexKeys} e-mail index keys take ${count(memory.indexBytes)} bytes (MEMORY USAGE ... SAMPLES 0, every element counted; ${count(indexEntries)} index entries), its ${count(total)} documents about ${count(Math.round(memory.documentBytes))} bytes (MEMORY USAGE of ${MEMORY_SAMPLE_DOCUMENTS} documents, scaled), ${perUser(memory.indexBytes + memory.documentBytes)} bytes per account in all. Deleting every key of the projection at the end freed ${count(memory.freedBytes)} bytes of used_memory (${perUser(memory.freedBytes)} bytes per account). For scale: used_memory grew by ${count(memoryAfterSeed - memoryBeforeSeed)} bytes (${perUser(memoryAfterSeed - memoryBeforeSeed)} per account) while the accounts were created and projected: their streams, log entries and records as well as the projection.`,
      ],
      problems: problemsOf(rows),
    };
  } finally {
    if (redis) await closeConnections(redis);
    if (readerRedis) await closeConnections(readerRedis);
    await meter?.close();
    logger.close();
    await stopAll();
  }
}

if (require.main === module) void runBenches([{ name: NAME, load: () => Promise.resolve({ run }) }]);
