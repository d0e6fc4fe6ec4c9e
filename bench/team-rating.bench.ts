import { randomBytes, randomUUID } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';

import type autocannon from 'autocannon';

import type { SeedPlayerRow } from '../shared/importers/player-seeding/player-seeding.importer';
import { playerPlatformId, seedPlayer } from '../test/helpers/seed-players';
import { seededRandom } from '../test/helpers/seeded-random';
import { ImportClient, type ImportItem } from './lib/import-client';
import {
  type LoadResult,
  median,
  percentile,
  positiveNumberFromEnv,
  settingsFromEnv,
  summarise,
  type Workload,
} from './lib/load';
import { CostMeter, cpuRow } from './lib/process-cost';
import { ensureBuilt, type ServerProcess, stopAll } from './lib/processes';
import { type BenchReport, compareWith, type ComparisonRow, machineInfo, problemsOf } from './lib/report';
import { runBenches } from './lib/runner';
import {
  basicAuthorization,
  commandOrThrow,
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
 * GetTeamRatingInputByTeamId through POST /api/readmodel, by Bearer, spread over 1,000 teams of 25
 * players drawn from 5,000, against a bare Express 5 app measured in the same run; then
 * GetMappedPlayers (the whole table, streamed) for 50,000 players: time per fetch and the ingress's
 * peak resident memory.
 *
 * Settings: BENCH_CONNECTIONS, BENCH_WARMUP, BENCH_DURATION (seconds), BENCH_ROUNDS;
 * BENCH_PLAYERS (the players rosters are drawn from, default 5000); BENCH_MAPPED_PLAYERS (players
 * GetMappedPlayers lists, default 50000, at least BENCH_PLAYERS); BENCH_MAPPED_FETCHES (measured
 * fetches of the whole table, default 5); BENCH_CPU_PROF=1 writes a .cpuprofile of the ingress and
 * of each worker (when they stop).
 */

const NAME = 'team-rating';
const TEAM_COUNT = 1_000;
const ROSTER_SIZE = 25;
/** The target: the rating query's rate as a share of the baseline's. */
const RATE_TARGET = 0.6;
const SEASON = '2026';
const ROUND = 5;
const FINAL_ROUND = 30;
/** Rows one import may carry (IMPORT_MAX_ROWS, its default, set explicitly). */
const IMPORT_MAX_ROWS = 10_000;
const WORKER_COUNT = 2;
const TEAM_SETUP_CONCURRENCY = 16;
const IMPORT_POLL_MS = 500;
const PROGRESS_EVERY_MS = 10_000;
/** Seeding runs 3 commands per player on a small machine: a generous allowance per player. */
const IMPORT_TIMEOUT_BASE_MS = 120_000;
const IMPORT_TIMEOUT_PER_PLAYER_MS = 30;
const CATCH_UP_TIMEOUT_MS = 300_000;
const MEMORY_SAMPLE_MS = 10;
const MAPPED_WARMUP_FETCHES = 1;

const SERVICE_ACCOUNT_EMAIL = 'bench-service-account@example.com';
/** Fresh per run, like the Admin's. */
const SERVICE_ACCOUNT_PASSWORD = randomBytes(24).toString('base64url');
const MAPPED_BODY = JSON.stringify({ query: { queryType: 'GetMappedPlayers' } });

/** Player n's feed id (its key in a rating answer). */
function feedIdOf(n: number): number {
  return 100_000 + n;
}

/** Player n (from 1): unique feed and fantasy ids; this season's stats with 3 rounds of breakdown. */
function player(n: number): SeedPlayerRow {
  return seedPlayer(n, {
    feedId: feedIdOf(n),
    fantasyId: 500_000 + n,
    platformFullName: `Platform Player ${n}`,
    stats: {
      rating: 40 + (n % 600) / 10,
      price: 100_000 + (n % 97) * 5_000,
      fantasyPositions: [n % 5, (n + 2) % 5],
      breakdown: Object.fromEntries(
        [ROUND, ROUND + 1, ROUND + 2].map((round) => [
          String(round),
          { projectedPoints: ((n + round) % 40) / 2, priceDelta: ((n * round) % 21) - 10 },
        ]),
      ),
    },
  });
}

interface RosterSlot {
  readonly participantId: string;
  readonly selectionStatus: number;
}

interface Team {
  readonly id: string;
  readonly roster: readonly RosterSlot[];
  /** The feed id each roster slot answers under, with its selection status. */
  readonly expected: ReadonlyMap<string, number>;
}

/** `count` teams of ROSTER_SIZE distinct players from 1..players: one Captain, one ViceCaptain, the rest 2-4. */
function teams(count: number, players: number): Team[] {
  const random = seededRandom(2026);
  return Array.from({ length: count }, () => {
    const picked = new Set<number>();
    while (picked.size < ROSTER_SIZE) picked.add(1 + Math.floor(random() * players));
    const roster = [...picked].map((n, slot) => ({
      participantId: playerPlatformId(n),
      selectionStatus: slot === 0 ? 0 : slot === 1 ? 1 : 2 + (slot % 3),
    }));
    const expected = new Map(
      [...picked].map((n, slot) => [String(feedIdOf(n)), roster[slot]?.selectionStatus ?? -1]),
    );
    return { id: randomUUID(), roster, expected };
  });
}

function note(message: string): void {
  process.stderr.write(`[bench] ${message}\n`);
}

function count(value: number): string {
  return value.toLocaleString('en-US');
}

/** Imports, and a poll for many imports' end that shows their progress. */
class PolledImports extends ImportClient {
  /**
   * Polls every IMPORT_POLL_MS until every import is no longer Pending, printing their progress now
   * and then; throws when one Failed (or did not run every row), or after `timeoutMs`.
   */
  async allCompleted(submitted: readonly ImportItem[], rows: number, timeoutMs: number): Promise<void> {
    const startedAt = performance.now();
    let reportedAt = startedAt;
    let rowsCompleted = 0;
    const pending = new Map(submitted.map((item) => [item.importJobId, item]));
    for (;;) {
      for (const importJobId of [...pending.keys()]) {
        const item = await this.result(importJobId);
        pending.set(importJobId, item);
        if (item.status === 'Pending') continue;
        if (item.status !== 'Completed')
          throw new Error(`import ${importJobId} ${item.status}: ${item.message} ${JSON.stringify(item)}`);
        rowsCompleted += item.progress?.total ?? 0;
        pending.delete(importJobId);
      }
      const elapsed = performance.now() - startedAt;
      if (pending.size === 0) return;
      if (elapsed > timeoutMs)
        throw new Error(`${pending.size} import(s) still Pending after ${(timeoutMs / 1000).toFixed(0)} s`);
      if (performance.now() - reportedAt >= PROGRESS_EVERY_MS) {
        reportedAt = performance.now();
        const done = [...pending.values()].reduce(
          (sum, item) => sum + (item.progress?.done ?? 0),
          rowsCompleted,
        );
        note(
          `  ... ${count(done)} of ${count(rows)} rows done, ${pending.size} import(s) pending (${(elapsed / 1000).toFixed(0)} s)`,
        );
      }
      await sleep(IMPORT_POLL_MS);
    }
  }
}

/**
 * Seeds players from..to (inclusive) for SEASON with Normal PlayerSeeding imports (the workers run
 * them), at least WORKER_COUNT imports of at most IMPORT_MAX_ROWS, submitted at once. Its seconds.
 */
async function seedPlayers(client: PolledImports, from: number, to: number): Promise<number> {
  const total = to - from + 1;
  const parts = Math.max(WORKER_COUNT, Math.ceil(total / IMPORT_MAX_ROWS));
  const size = Math.ceil(total / parts);
  note(`seeding players ${count(from)}-${count(to)}: ${parts} PlayerSeeding imports of up to ${count(size)}`);
  const startedAt = performance.now();
  const submitted: ImportItem[] = [];
  for (let start = from; start <= to; start += size) {
    const players = Array.from({ length: Math.min(size, to - start + 1) }, (_, i) => player(start + i));
    submitted.push(
      await client.submit('PlayerSeeding', 'Normal', {
        season: SEASON,
        round: ROUND,
        finalRound: FINAL_ROUND,
        players,
      }),
    );
  }
  await client.allCompleted(submitted, total, IMPORT_TIMEOUT_BASE_MS + total * IMPORT_TIMEOUT_PER_PLAYER_MS);
  const seconds = (performance.now() - startedAt) / 1000;
  note(
    `seeded ${count(total)} players in ${seconds.toFixed(1)} s (${(total / seconds).toFixed(0)} players/s)`,
  );
  return seconds;
}

async function createTeams(ingress: ServerProcess, token: string, all: readonly Team[]): Promise<void> {
  await forEachConcurrently(all, TEAM_SETUP_CONCURRENCY, async (team, index) => {
    await commandOrThrow(ingress, token, 'CreateFantasyTeam', {
      aggregateRootId: team.id,
      name: `Bench team ${index}`,
    });
    await commandOrThrow(ingress, token, 'SetFantasyTeamRoster', {
      aggregateRootId: team.id,
      players: team.roster,
    });
  });
}

function ratingBody(teamId: string): string {
  return JSON.stringify({
    query: { queryType: 'GetTeamRatingInputByTeamId', id: teamId },
    dataType: 'TeamRatingInput',
  });
}

interface RatingAnswer {
  readonly status: number;
  readonly text: string;
  readonly item?: {
    team?: Record<string, { selectionStatus?: number }>;
    round?: unknown;
    finalRound?: unknown;
  };
}

async function askRating(url: string, token: string, teamId: string): Promise<RatingAnswer> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { ...JSON_HEADERS, authorization: `Bearer ${token}` },
    body: ratingBody(teamId),
  });
  const text = await response.text();
  const item = response.ok
    ? (JSON.parse(text) as { results?: RatingAnswer['item'][] }).results?.[0]
    : undefined;
  return { status: response.status, text, ...(item ? { item } : {}) };
}

/** What is wrong with a rating answer for `team`, or undefined when it is the full roster. */
function ratingProblem(team: Team, answer: RatingAnswer): string | undefined {
  const entries = Object.entries(answer.item?.team ?? {});
  if (answer.status !== 200) return `answered ${answer.status}`;
  if (entries.length !== ROSTER_SIZE) return `${entries.length} of ${ROSTER_SIZE} players`;
  for (const [feedId, input] of entries) {
    if (team.expected.get(feedId) !== input.selectionStatus)
      return `feed id ${feedId} with selection status ${String(input.selectionStatus)}`;
  }
  if (answer.item?.round !== ROUND || answer.item.finalRound !== FINAL_ROUND)
    return `round ${String(answer.item?.round)} of ${String(answer.item?.finalRound)}`;
  return undefined;
}

/**
 * Waits until the projections have caught up: the last team's answer holds its whole roster, then
 * every team's does (each answer checked in full: 200, 25 players under the expected feed ids and
 * selection statuses, the season's rounds), so the load measures full answers, never a 404.
 */
async function rostersReady(url: string, token: string, all: readonly Team[]): Promise<void> {
  const deadline = performance.now() + CATCH_UP_TIMEOUT_MS;
  const ready = async (team: Team) => {
    for (;;) {
      const answer = await askRating(url, token, team.id);
      const problem = ratingProblem(team, answer);
      if (problem === undefined) return;
      if (performance.now() > deadline)
        throw new Error(`GetTeamRatingInputByTeamId for team ${team.id}: ${problem}: ${answer.text}`);
      await sleep(100);
    }
  };
  const last = all.at(-1);
  if (last) await ready(last);
  await forEachConcurrently(all, TEAM_SETUP_CONCURRENCY, ready);
}

/** Waits until GetMappedPlayers counts `expected` players (the players projection has caught up). */
async function mappedPlayersReady(url: string, authorization: string, expected: number): Promise<void> {
  const deadline = performance.now() + CATCH_UP_TIMEOUT_MS;
  for (;;) {
    const answer = await postJson(
      url,
      { query: { queryType: 'GetMappedPlayers' }, take: 1 },
      { authorization },
    );
    const totalCount = (answer.body as { totalCount?: unknown } | null)?.totalCount;
    if (answer.status === 200 && totalCount === expected) return;
    if (performance.now() > deadline)
      throw new Error(`GetMappedPlayers: ${answer.status}, totalCount ${String(totalCount)} of ${expected}`);
    await sleep(250);
  }
}

/** VmRSS and VmHWM of a process, in bytes, from /proc/<pid>/status. */
function memoryOf(pid: number): { rss: number; hwm: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN);
  return { rss: kib('VmRSS') * 1024, hwm: kib('VmHWM') * 1024 };
}

/** Resets a process's VmHWM to its current RSS (Linux: `5` to /proc/<pid>/clear_refs); false if refused. */
function resetPeak(pid: number): boolean {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
    return true;
  } catch {
    return false;
  }
}

function mib(bytes: number): string {
  return `${(bytes / 1024 ** 2).toFixed(1)} MiB`;
}

interface MappedFetch {
  readonly ms: number;
  readonly bytes: number;
  readonly status: number;
  readonly totalCount: unknown;
  readonly results: number;
}

/** The whole table, once: the time from sending to the last byte read, and what came back. */
async function fetchMappedPlayers(url: string, authorization: string): Promise<MappedFetch> {
  const sentAt = performance.now();
  const response = await fetch(url, {
    method: 'POST',
    headers: { ...JSON_HEADERS, authorization },
    body: MAPPED_BODY,
  });
  const body = Buffer.from(await response.arrayBuffer());
  const ms = performance.now() - sentAt;
  let totalCount: unknown;
  let results = 0;
  try {
    const parsed = JSON.parse(body.toString('utf8')) as { results?: unknown[]; totalCount?: unknown };
    totalCount = parsed.totalCount;
    results = parsed.results?.length ?? 0;
  } catch {
    // Not JSON (a truncated stream): counted as a failure below.
  }
  return { ms, bytes: body.length, status: response.status, totalCount, results };
}

/** Starts Redis, the baseline, one ingress and two workers; seeds; measures; stops everything. */
export async function run(): Promise<BenchReport> {
  const machine = machineInfo();
  const settings = settingsFromEnv({ connections: 50, warmupSeconds: 2, durationSeconds: 8, rounds: 3 });
  const players = Math.round(positiveNumberFromEnv('BENCH_PLAYERS', 5_000));
  const mappedPlayers = Math.round(positiveNumberFromEnv('BENCH_MAPPED_PLAYERS', 50_000));
  const mappedFetches = Math.round(positiveNumberFromEnv('BENCH_MAPPED_FETCHES', 5));
  if (players < ROSTER_SIZE) throw new Error(`BENCH_PLAYERS must be at least ${ROSTER_SIZE}`);
  if (mappedPlayers < players) throw new Error('BENCH_MAPPED_PLAYERS must be at least BENCH_PLAYERS');
  ensureBuilt();
  const problems: string[] = [];
  let meter: CostMeter | undefined;
  try {
    const baselineServer = await startBareExpress();
    const { credentials, ingress, redisServer } = await startService(NAME, {
      env: { IMPORT_MAX_ROWS: String(IMPORT_MAX_ROWS), MODULES: 'sport-core' },
      // Basic verifications (the Admin polling imports, the service account) stay cached: one hash each.
      ingressEnv: { AUTH_CACHE_TTL_SECONDS: '3600' },
      workers: WORKER_COUNT,
    });

    const readmodelUrl = `${ingress.baseUrl}/api/readmodel`;
    const imports = new PolledImports(ingress, basicAuthorization(credentials));

    // 1. Players, then teams whose rosters draw on them, then wait for the projections.
    const seedSeconds = await seedPlayers(imports, 1, players);
    const token = await issueToken(ingress, credentials);
    const all = teams(TEAM_COUNT, players);
    note(
      `creating ${count(TEAM_COUNT)} teams of ${ROSTER_SIZE} players (CreateFantasyTeam, SetFantasyTeamRoster)`,
    );
    await createTeams(ingress, token, all);
    note('waiting for every roster to show in GetTeamRatingInputByTeamId');
    await rostersReady(readmodelUrl, token, all);

    // 2. The rating query against the baseline, each request on the next team.
    const bodies = all.map((team) => ratingBody(team.id));
    const baseline: Workload = {
      name: 'bare Express 5 + express.json() (baseline)',
      url: `${baselineServer.baseUrl}/api/readmodel`,
      method: 'POST',
      headers: JSON_HEADERS,
      body: bodies[0] ?? '',
    };
    const rating: Workload = {
      name: `GetTeamRatingInputByTeamId by Bearer over ${count(TEAM_COUNT)} teams of ${ROSTER_SIZE}`,
      url: readmodelUrl,
      method: 'POST',
      headers: { ...JSON_HEADERS, authorization: `Bearer ${token}` },
      body: bodies[0] ?? '',
      requests: (): autocannon.Request[] => {
        let next = 0;
        return [
          {
            method: 'POST',
            path: '/api/readmodel',
            setupRequest: (request) => ({ ...request, body: bodies[next++ % bodies.length] ?? '' }),
          },
        ];
      },
    };
    const refReadServer = await startRefRead(credentials);
    const refRead: Workload = {
      name: 'ref-read: Express 5 + express.json() + HS256 verify (reference)',
      url: `${refReadServer.baseUrl}/api/readmodel`,
      method: 'POST',
      headers: { ...JSON_HEADERS, authorization: `Bearer ${token}` },
      body: bodies[0] ?? '',
    };
    const servers = new Map([
      [baseline.name, baselineServer.pid],
      [refRead.name, refReadServer.pid],
      [rating.name, ingress.pid],
    ]);
    meter = CostMeter.open(redisServer.url, (workload) => ({
      ingress: servers.get(workload.name) ?? 0,
      redis: redisServer.pid,
    }));
    const costs = meter;
    const measured = await costs.measure([baseline, refRead, rating], settings);
    const [base, ref, rated] = measured;
    if (!base || !ref || !rated) throw new Error('a workload is missing');
    const cpu = [
      cpuRow(costs, base.workload),
      cpuRow(costs, ref.workload),
      cpuRow(costs, rated.workload, { reference: ref.workload }),
    ];

    // 3. GetMappedPlayers over the whole table, as a service account by Basic.
    const moreSeedSeconds =
      mappedPlayers > players ? await seedPlayers(imports, players + 1, mappedPlayers) : 0;
    const user = await imports.submit('UserSeeding', 'High', {
      enabled: true,
      skipIfUsersExist: false,
      users: [
        {
          email: SERVICE_ACCOUNT_EMAIL,
          userType: 'ServiceAccount',
          roles: ['ServiceAccount'],
          password: SERVICE_ACCOUNT_PASSWORD,
        },
      ],
    });
    await imports.allCompleted([user], 1, IMPORT_TIMEOUT_BASE_MS);
    const machineAuthorization = `Basic ${Buffer.from(`${SERVICE_ACCOUNT_EMAIL}:${SERVICE_ACCOUNT_PASSWORD}`).toString('base64')}`;
    note(`waiting for GetMappedPlayers to count ${count(mappedPlayers)} players`);
    await mappedPlayersReady(readmodelUrl, machineAuthorization, mappedPlayers);

    const before = memoryOf(ingress.pid);
    const peakReset = resetPeak(ingress.pid);
    let sampledPeak = memoryOf(ingress.pid).rss;
    const sampler = setInterval(() => {
      try {
        sampledPeak = Math.max(sampledPeak, memoryOf(ingress.pid).rss);
      } catch {
        // The ingress is gone: the fetch fails and says so.
      }
    }, MEMORY_SAMPLE_MS);
    const fetches: MappedFetch[] = [];
    try {
      for (let i = 0; i < MAPPED_WARMUP_FETCHES + mappedFetches; i += 1) {
        const fetched = await fetchMappedPlayers(readmodelUrl, machineAuthorization);
        const label = i < MAPPED_WARMUP_FETCHES ? 'warm-up' : `${i + 1 - MAPPED_WARMUP_FETCHES}`;
        note(
          `GetMappedPlayers fetch ${label}: ${fetched.status}, ${fetched.ms.toFixed(0)} ms, ${mib(fetched.bytes)}, ` +
            `${count(fetched.results)} results, totalCount ${String(fetched.totalCount)}`,
        );
        if (
          fetched.status !== 200 ||
          fetched.totalCount !== mappedPlayers ||
          fetched.results !== mappedPlayers
        ) {
          problems.push(
            `GetMappedPlayers fetch ${label}: ${fetched.status}, totalCount ${String(fetched.totalCount)}, ${fetched.results} results (expected ${mappedPlayers})`,
          );
        }
        if (i >= MAPPED_WARMUP_FETCHES) fetches.push(fetched);
      }
    } finally {
      clearInterval(sampler);
    }
    const after = memoryOf(ingress.pid);
    const peak = Math.max(sampledPeak, peakReset ? after.hwm : after.rss);
    const times = fetches.map((fetched) => fetched.ms);
    const answerBytes = median(fetches.map((fetched) => fetched.bytes));
    note(
      `ingress memory: VmRSS ${mib(before.rss)} before (VmHWM ${mib(before.hwm)} over the run so far), ` +
        `peak ${mib(peak)} during the fetches, VmRSS ${mib(after.rss)} after; answer ${mib(answerBytes)}`,
    );

    const fetchRuns: LoadResult[] = fetches.map((fetched) => ({
      requestsPerSecond: Number.NaN,
      p50Ms: fetched.ms,
      p99Ms: fetched.ms,
      responses: 1,
      non2xx: fetched.status === 200 ? 0 : 1,
      errors: 0,
      warmupFailures: 0,
    }));
    const mappedRow: ComparisonRow = {
      ...summarise(
        `GetMappedPlayers, all ${count(mappedPlayers)} players streamed, by Basic (time per fetch, ${mappedFetches} fetches)`,
        fetchRuns,
      ),
      p99Ms: percentile(times, 99),
      ratio: null,
      target: null,
      standalone: true,
    };
    const rows: ComparisonRow[] = [...compareWith(base, [ref, rated], null), mappedRow];
    const seededMore = mappedPlayers - players;

    return {
      name: NAME,
      title:
        'GetTeamRatingInputByTeamId: CPU per request beside ref-read, and GetMappedPlayers over the whole table',
      settings,
      machine,
      rows,
      cpu,
      notes: [
        `Setup (not measured): ${count(players)} players seeded for season ${SEASON} (round ${ROUND} of ${FINAL_ROUND}) by Normal PlayerSeeding imports of at most ${count(IMPORT_MAX_ROWS)} rows (IMPORT_MAX_ROWS), at least ${WORKER_COUNT} at once, sent by the bootstrap Admin by Basic and run by ${WORKER_COUNT} worker processes (${seedSeconds.toFixed(1)} s, ${(players / seedSeconds).toFixed(0)} players/s, GetImportJobResult polled every ${IMPORT_POLL_MS} ms until Completed). Each player: unique feed, fantasy and platform ids, rounds ${ROUND}-${ROUND + 2} in its breakdown. A ${count(IMPORT_MAX_ROWS)}-row PlayerSeeding body is about 5 MB, within the default IMPORT_BODY_LIMIT (16mb).`,
        `Then the Admin creates ${count(TEAM_COUNT)} teams (CreateFantasyTeam, SetFantasyTeamRoster; ${TEAM_SETUP_CONCURRENCY} at once, by Bearer), each with ${ROSTER_SIZE} distinct players drawn pseudo-randomly (fixed seed) from the ${count(players)}: one Captain, one ViceCaptain, the rest Selected, Reserve or Bench. Before any load every team's answer is checked in full (200, its ${ROSTER_SIZE} players under the expected feed ids and selection statuses, round ${ROUND} of ${FINAL_ROUND}).`,
        `Load: POST /api/readmodel \`{"query":{"queryType":"GetTeamRatingInputByTeamId","id":"<team>"},"dataType":"TeamRatingInput"}\` with the Admin's Bearer token (POST /api/auth/token); each request names the next of the ${count(TEAM_COUNT)} teams in turn. The baseline (bench/baselines/bare-express.cjs, Express 5 with express.json() and one POST route answering JSON) gets the same body without an Authorization header.`,
        'The service runs compiled (`npm run build`): one `node dist/ingress/main.js` (NODE_ENV=production, LOG_LEVEL=warn, AUTH_CACHE_TTL_SECONDS=3600) and two `node dist/workers/main.js` (idle during the load but for their projectors), on a private redis-server on loopback.',
        `"vs baseline" is the ratio of the medians; each round runs every workload once, in rotated order. The rate target (${RATE_TARGET} of the baseline's rate) is retired (issue 22): a bare app measures Express, not the work a read must do. The reference (bench/baselines/ref-read.cjs, ref-read: Express 5, express.json(), an HS256 verify of the same token, an answer from its claims) gets the same bodies; the CPU table sets the rating read's CPU per request beside it (no target: the read also loads 25 players from Redis, which ref-read does not).`,
        `GetMappedPlayers: after the rating rounds, ${count(seededMore)} more players are seeded the same way (${moreSeedSeconds.toFixed(1)} s${seededMore > 0 ? `, ${(seededMore / moreSeedSeconds).toFixed(0)} players/s` : ''}; ${count(mappedPlayers)} in all) and a ServiceAccount user is imported (UserSeeding). It then sends \`${MAPPED_BODY}\` (no skip/take: the whole table, streamed a page at a time) by Basic, ${MAPPED_WARMUP_FETCHES} discarded then ${mappedFetches} measured, one at a time; time = from sending to the last byte read by fetch in the bench process. Every answer: 200, totalCount ${count(mappedPlayers)}, ${count(mappedPlayers)} results. Per fetch (ms): ${times.map((ms) => ms.toFixed(0)).join(' / ')}; median ${median(times).toFixed(0)} ms, max ${Math.max(...times).toFixed(0)} ms (the p99 column; the "per round" column shows each fetch). Answer: ${count(answerBytes)} bytes (${mib(answerBytes)}).`,
        `Ingress memory (from /proc/<pid>/status): VmRSS ${mib(before.rss)} just before the fetches (VmHWM ${mib(before.hwm)}, the peak over the whole run so far, rating load included); peak during the fetches ${mib(peak)} (${peakReset ? 'the larger of VmHWM, reset just before the first fetch by writing 5 to /proc/<pid>/clear_refs, and' : 'VmHWM could not be reset: the largest'} VmRSS sampled every ${MEMORY_SAMPLE_MS} ms), i.e. ${mib(peak - before.rss)} above the RSS before, against an answer of ${mib(answerBytes)}; VmRSS ${mib(after.rss)} after (VmHWM ${mib(after.hwm)}).`,
      ],
      problems: [...problems, ...problemsOf(measured), ...problemsOf([mappedRow])],
    };
  } finally {
    await meter?.close();
    await stopAll();
  }
}

if (require.main === module) void runBenches([{ name: NAME, load: () => Promise.resolve({ run }) }]);
