import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';

import type autocannon from 'autocannon';
import Redis from 'ioredis';

import { fantasyTeamDecider } from '../shared/fantasy-team/fantasy-team.decider';
import { fantasyTeamProjection } from '../shared/fantasy-team/fantasy-team.projection';
import type { Keys } from '../shared/redis/keys';
import {
  type LoadResult,
  percentile,
  positiveNumberFromEnv,
  reportRun,
  settingsFromEnv,
  summarise,
  type Workload,
} from './lib/load';
import { runOpenLoop } from './lib/open-loop';
import { PausedWorker } from './lib/paused-worker';
import { CostMeter, cpuRow } from './lib/process-cost';
import { ensureBuilt, type ServerProcess, stopAll, track } from './lib/processes';
import { ReadYourWritesProbe } from './lib/read-your-writes';
import { type BenchReport, compareWith, type ComparisonRow, machineInfo, problemsOf } from './lib/report';
import { runBenches } from './lib/runner';
import {
  commandOrThrow,
  forEachConcurrently,
  issueToken,
  JSON_HEADERS,
  sleep,
  startBareExpress,
  startRefCommand,
  startService,
} from './lib/service';

/**
 * LinkFantasyTeam / UnlinkFantasyTeam through POST /api/command, spread over 1,000 teams, against
 * ref-command (bench/baselines/ref-command.cjs: ref-read plus the two Redis round trips of a locked,
 * fenced append) and a bare Express 5 app measured in the same run; and the projection lag (command
 * answered -> its fantasy-team projection document updated) under that load.
 *
 * Each measured run also reads the CPU per request of the ingress (or the reference), of
 * redis-server and of the worker (its projector) from /proc. The targets (issue 22): the ingress
 * and Redis at most 1.1x ref-command's, the worker at most 40 us per event.
 *
 * Settings: BENCH_CONNECTIONS, BENCH_WARMUP, BENCH_DURATION (seconds), BENCH_ROUNDS;
 * BENCH_LAG_SAMPLES (projection-lag samples per measured run, default 200);
 * BENCH_RYW_SAMPLES (read-your-writes pairs per round, default 200);
 * BENCH_PACED_RATE (req/s) forces the open-loop run at that rate, even above the closed-loop rate;
 * BENCH_CPU_PROF=1 writes a .cpuprofile of the ingress and the worker (when they stop).
 */

const NAME = 'commands';
const TEAM_COUNT = 1_000;
const TEAMS = TEAM_COUNT.toLocaleString('en-US');
/** The lag probe's own teams, so its commands never race the load's on one team. */
const PROBE_TEAM_COUNT = 20;
/**
 * The targets: the p99 at half the bare app's rate, the lag's p99 (the rate target itself, 0.5 of
 * the bare app's, is retired by issue 22: it measured Express), and on CPU per request: the
 * ingress and Redis over ref-command's, the worker's per event.
 */
const RATE_TARGET = 0.5;
const COMMAND_OVER_REF_COMMAND = 1.1;
const WORKER_MICROS_PER_EVENT = 40;
const P99_TARGET_MS = 20;
const LAG_P99_TARGET_MS = 50;
/** A projection not updated within this long counts as a failed sample, not as a huge lag. */
const LAG_GIVE_UP_MS = 5_000;
const PROBE_LANES = 4;

const TEAM_TYPE = fantasyTeamDecider.aggregateType;

interface Team {
  readonly id: string;
  linked: boolean;
  /** The aggregate's version as last answered: the projection shows this version once it has caught up. */
  version: number;
}

/**
 * Hands out teams with no command in flight, least recently used first, and sends the command that
 * is valid for each: Link when unlinked, Unlink when linked. So every command is accepted (a 4xx
 * means the alternation broke) and no two ever wait on one aggregate's lock.
 */
class TeamPool {
  private idle: Team[];
  private head = 0;
  private nextLinkId = 1;
  /** Answers other than 200 (0: no answer), by status, over the whole bench. */
  readonly failures = new Map<number, number>();

  constructor(
    readonly teams: readonly Team[],
    private readonly redis: Redis,
    private readonly keys: Keys,
  ) {
    this.idle = [...teams];
  }

  take(): Team | undefined {
    if (this.head >= this.idle.length) return undefined;
    const team = this.idle[this.head++];
    if (this.head > 4_096 && this.head * 2 > this.idle.length) {
      this.idle = this.idle.slice(this.head);
      this.head = 0;
    }
    return team;
  }

  /** Gives back a team taken but not used. */
  release(team: Team): void {
    this.idle.push(team);
  }

  /** A team whose command was not answered 200 stays out until `reconcile` reads its real state. */
  answered(team: Team, status: number | null): void {
    if (status === 200) {
      team.linked = !team.linked;
      team.version += 1;
      this.idle.push(team);
      return;
    }
    this.failures.set(status ?? 0, (this.failures.get(status ?? 0) ?? 0) + 1);
  }

  bodyFor(team: Team): string {
    if (team.linked)
      return JSON.stringify({ commandType: 'UnlinkFantasyTeam', command: { aggregateRootId: team.id } });
    const id = this.nextLinkId++;
    return JSON.stringify({
      commandType: 'LinkFantasyTeam',
      command: { aggregateRootId: team.id, fantasyTeamExternalId: id, fantasyUserId: 1_000_000 + id },
    });
  }

  /**
   * Reads every team's state and version from its aggregate record and makes them all idle: a run
   * ends with requests in flight whose answers the load generator drops, so only Redis knows.
   */
  async reconcile(): Promise<void> {
    await sleep(250); // let the server finish what the load generator cut off
    const pipeline = this.redis.pipeline();
    for (const team of this.teams)
      pipeline.hmget(this.keys.aggregateRecord(TEAM_TYPE, team.id), 'version', 'state');
    const results = (await pipeline.exec()) ?? [];
    this.teams.forEach((team, index) => {
      const [error, fields] = results[index] ?? [new Error('no reply'), null];
      const [version, state] = (fields ?? []) as (string | null)[];
      if (error || !version || !state) throw new Error(`team ${team.id} has no record: ${String(error)}`);
      team.version = Number(version);
      team.linked = (JSON.parse(state) as { fantasyTeamExternalId: number }).fantasyTeamExternalId > 0;
    });
    this.idle = [...this.teams];
    this.head = 0;
  }
}

/** The load's commands as autocannon requests: each send takes an idle team, each answer returns it. */
function autocannonRequests(pool: TeamPool): autocannon.Request[] {
  return [
    {
      method: 'POST',
      path: '/api/command',
      setupRequest: (request, context) => {
        const team = pool.take();
        if (!team) throw new Error('no idle team: more connections than teams can keep busy');
        (context as { team?: Team }).team = team;
        return { ...request, body: pool.bodyFor(team) };
      },
      onResponse: (status, _body, context) => {
        const { team } = context as { team?: Team };
        if (team) pool.answered(team, status);
      },
    },
  ];
}

/**
 * Samples the projection lag: sends a command on one of its own teams at a modest, even pace, notes
 * when the 200 arrived, then polls the team's projection document (its own Redis connection, about
 * every millisecond) until it shows the command's version. Stops at the end of the run it samples.
 */
class LagProbe {
  constructor(
    private readonly commandUrl: string,
    private readonly token: string,
    private readonly pool: TeamPool,
    private readonly redis: Redis,
    private readonly keys: Keys,
    private readonly samples: number,
  ) {}

  async run(durationSeconds: number): Promise<LoadResult & { missed: number }> {
    const lags: number[] = [];
    let non2xx = 0;
    let errors = 0;
    let missed = 0;
    const startAt = performance.now() + durationSeconds * 50; // 5 % in: the load is up to speed
    const deadline = performance.now() + durationSeconds * 1000;
    const intervalMs = (durationSeconds * 900) / this.samples;
    await forEachConcurrently(
      Array.from({ length: this.samples }, (_, i) => i),
      PROBE_LANES,
      async (i) => {
        const scheduled = startAt + i * intervalMs;
        await sleep(Math.max(0, scheduled - performance.now()));
        const team = this.pool.take();
        if (performance.now() > deadline || !team) {
          missed += 1;
          if (team) this.pool.release(team);
          return;
        }
        let status: number;
        try {
          const response = await fetch(this.commandUrl, {
            method: 'POST',
            headers: { ...JSON_HEADERS, authorization: `Bearer ${this.token}` },
            body: this.pool.bodyFor(team),
            signal: AbortSignal.timeout(LAG_GIVE_UP_MS),
          });
          await response.arrayBuffer();
          status = response.status;
        } catch {
          errors += 1;
          this.pool.answered(team, null);
          return;
        }
        const answeredAt = performance.now();
        const expected = team.version + 1;
        this.pool.answered(team, status);
        if (status !== 200) {
          non2xx += 1;
          return;
        }
        const key = this.keys.projectionDocument(fantasyTeamProjection.name, team.id);
        for (;;) {
          const doc = await this.redis.get(key);
          const seenAt = performance.now();
          if (doc !== null && (JSON.parse(doc) as { version: number }).version >= expected) {
            lags.push(seenAt - answeredAt);
            return;
          }
          if (seenAt - answeredAt > LAG_GIVE_UP_MS) {
            errors += 1;
            return;
          }
          await sleep(1);
        }
      },
    );
    return {
      requestsPerSecond: Number.NaN,
      p50Ms: percentile(lags, 50),
      p99Ms: percentile(lags, 99),
      responses: lags.length,
      non2xx,
      errors,
      warmupFailures: 0,
      missed,
    };
  }
}

/** ref-command's requests: LinkFantasyTeam bodies over the teams' ids in turn (it keeps no state to alternate). */
function refCommandRequests(teams: readonly Team[]): autocannon.Request[] {
  let next = 0;
  return [
    {
      method: 'POST',
      path: '/api/command',
      setupRequest: (request) => {
        const team = teams[next++ % teams.length];
        return {
          ...request,
          body: JSON.stringify({
            commandType: 'LinkFantasyTeam',
            command: {
              aggregateRootId: team?.id,
              fantasyTeamExternalId: next,
              fantasyUserId: 1_000_000 + next,
            },
          }),
        };
      },
    },
  ];
}

/** ref-command appends for the Admin's token: 200 and a version, or the workload measures a refusal. */
async function checkRefCommand(workload: Workload, teamId: string): Promise<void> {
  const response = await fetch(workload.url, {
    method: 'POST',
    headers: { ...workload.headers },
    body: JSON.stringify({
      commandType: 'LinkFantasyTeam',
      command: { aggregateRootId: teamId, fantasyTeamExternalId: 1, fantasyUserId: 1_000_001 },
    }),
  });
  const text = await response.text();
  if (response.status !== 200 || !(Number((JSON.parse(text) as { version?: unknown }).version) > 0))
    throw new Error(`${workload.name}: expected an append, got ${response.status} ${text}`);
}

async function createTeams(ingress: ServerProcess, token: string, count: number): Promise<Team[]> {
  const teams: Team[] = Array.from({ length: count }, () => ({
    id: randomUUID(),
    linked: false,
    version: 0,
  }));
  await forEachConcurrently(teams, 16, (team, index) =>
    commandOrThrow(ingress, token, 'CreateFantasyTeam', {
      aggregateRootId: team.id,
      name: `Bench team ${index}`,
    }),
  );
  return teams;
}

/** Starts Redis, the baseline, one ingress and one worker; measures; stops everything. */
export async function run(): Promise<BenchReport> {
  const machine = machineInfo();
  const settings = settingsFromEnv({ connections: 32, warmupSeconds: 2, durationSeconds: 8, rounds: 5 });
  const lagSamples = Math.round(positiveNumberFromEnv('BENCH_LAG_SAMPLES', 200));
  const forcedRate = process.env.BENCH_PACED_RATE ? positiveNumberFromEnv('BENCH_PACED_RATE', 1) : undefined;
  if (TEAM_COUNT < settings.connections * 4) throw new Error(`at most ${TEAM_COUNT / 4} connections`);
  ensureBuilt();
  let meter: CostMeter | undefined;
  try {
    const baselineServer = await startBareExpress();
    const { redisServer, keys, credentials, ingress, workers } = await startService(NAME);
    const refCommandServer = await startRefCommand(credentials, redisServer.url);
    const redis = new Redis(redisServer.url, { maxRetriesPerRequest: 1 });
    track({ stop: async () => void (await redis.quit().catch(() => undefined)) });

    const token = await issueToken(ingress, credentials);
    const commandUrl = `${ingress.baseUrl}/api/command`;
    const authorized = { ...JSON_HEADERS, authorization: `Bearer ${token}` };
    process.stderr.write(`[bench] creating ${TEAM_COUNT} + ${PROBE_TEAM_COUNT} teams\n`);
    const pool = new TeamPool(await createTeams(ingress, token, TEAM_COUNT), redis, keys);
    const probePool = new TeamPool(await createTeams(ingress, token, PROBE_TEAM_COUNT), redis, keys);
    await pool.reconcile();
    await probePool.reconcile();
    const probe = new LagProbe(commandUrl, token, probePool, redis, keys, lagSamples);
    const lagUnderClosedLoop: (LoadResult & { missed: number })[] = [];

    const baseline: Workload = {
      name: 'bare Express 5 + express.json() (baseline)',
      url: `${baselineServer.baseUrl}/api/readmodel`,
      method: 'POST',
      headers: JSON_HEADERS,
      body: JSON.stringify({
        commandType: 'LinkFantasyTeam',
        command: { aggregateRootId: randomUUID(), fantasyTeamExternalId: 1, fantasyUserId: 1_000_001 },
      }),
    };
    const closedLoop: Workload = {
      name: `Link/Unlink over ${TEAMS} teams (closed loop, ${settings.connections} connections)`,
      url: commandUrl,
      method: 'POST',
      headers: authorized,
      requests: () => autocannonRequests(pool),
      beforeRun: () => pool.reconcile(),
      alongside: async (seconds) => {
        const result = await probe.run(seconds);
        lagUnderClosedLoop.push(result);
        reportRun('projection lag (closed loop)', lagUnderClosedLoop.length, result);
        await probePool.reconcile();
      },
    };

    const worker = workers[0]?.pid ?? 0;
    const pausedWorker = new PausedWorker(worker, redisServer.pid, redis, keys);
    // The command path alone: the same load with the projector stopped, caught up after each run.
    const pausedLoop: Workload = {
      name: `Link/Unlink over ${TEAMS} teams, worker stopped (the command path alone)`,
      url: commandUrl,
      method: 'POST',
      headers: authorized,
      requests: () => autocannonRequests(pool),
      beforeRun: async () => {
        await pool.reconcile();
        await pausedWorker.pause();
      },
    };

    const refCommand: Workload = {
      name: 'ref-command: ref-read + lock-and-load + append-and-unlock (reference)',
      url: `${refCommandServer.baseUrl}/api/command`,
      method: 'POST',
      headers: authorized,
      requests: () => refCommandRequests(pool.teams),
    };
    await checkRefCommand(refCommand, pool.teams[0]?.id ?? randomUUID());

    const servers = new Map([
      [baseline.name, baselineServer.pid],
      [refCommand.name, refCommandServer.pid],
      [closedLoop.name, ingress.pid],
      [pausedLoop.name, ingress.pid],
    ]);
    meter = CostMeter.open(redisServer.url, (workload) => ({
      ingress: servers.get(workload.name) ?? 0,
      redis: redisServer.pid,
      worker,
    }));
    const costs = meter;
    const measured = await costs.measure(
      [baseline, refCommand, closedLoop, pausedLoop],
      settings,
      async (_workload, round) => {
        const catchUp = await pausedWorker.resumeAndCatchUp();
        if (catchUp)
          process.stderr.write(
            `[bench] round ${round}: projector catch-up of ${catchUp.events} events: worker ${catchUp.workerMicrosPerEvent.toFixed(1)} us, Redis ${catchUp.redisMicrosPerEvent.toFixed(1)} us per event\n`,
          );
      },
    );
    const [base, ref, closed, paused] = measured;
    if (!base || !ref || !closed || !paused) throw new Error('a workload is missing');
    const catchUp = pausedWorker.summary();

    // The p99 target is "at that rate": an open-loop run at the target rate itself, if the closed loop reached it.
    const targetRate = forcedRate ?? Math.round(RATE_TARGET * base.requestsPerSecond);
    const pacedRuns: LoadResult[] = [];
    const lagUnderPacedLoad: (LoadResult & { missed: number })[] = [];
    const pacedRan = forcedRate !== undefined || closed.requestsPerSecond >= targetRate;
    const openLoop = (seconds: number) =>
      runOpenLoop({
        url: commandUrl,
        headers: authorized,
        ratePerSecond: targetRate,
        durationSeconds: seconds,
        next: () => {
          const team = pool.take();
          return team && { body: pool.bodyFor(team), onAnswer: (status) => pool.answered(team, status) };
        },
      });
    for (let round = 1; pacedRan && round <= settings.rounds; round += 1) {
      await pool.reconcile();
      const warmup = settings.warmupSeconds > 0 ? await openLoop(settings.warmupSeconds) : undefined;
      await pool.reconcile();
      const [result, lag] = await Promise.all([
        openLoop(settings.durationSeconds),
        probe.run(settings.durationSeconds),
      ]);
      await probePool.reconcile();
      pacedRuns.push({ ...result, warmupFailures: warmup ? warmup.non2xx + warmup.errors : 0 });
      lagUnderPacedLoad.push(lag);
      reportRun(`open loop at ${targetRate} req/s`, round, result);
      reportRun('projection lag (open loop)', round, lag);
    }

    // Read your own writes (ADR 0019), one request at a time on the service left idle by the load.
    const rywSamples = Math.round(positiveNumberFromEnv('BENCH_RYW_SAMPLES', 200));
    const ryw = new ReadYourWritesProbe(
      ingress.baseUrl,
      token,
      await createTeams(ingress, token, PROBE_TEAM_COUNT),
      rywSamples,
    );
    for (let round = 1; round <= settings.rounds; round += 1) await ryw.round(round);
    const rywRows = ryw.rows();

    const pacedName = pacedRan
      ? `Link/Unlink, open loop at ${targetRate} req/s (${forcedRate ? 'BENCH_PACED_RATE' : `${RATE_TARGET} x baseline`})`
      : `Link/Unlink, open loop at ${targetRate} req/s (${RATE_TARGET} x baseline): not run, above the closed-loop rate`;
    const paced = summarise(pacedName, pacedRuns);
    const lagRow = (name: string, runs: readonly LoadResult[], judged: boolean): ComparisonRow => ({
      ...summarise(name, runs),
      ratio: null,
      target: null,
      standalone: true,
      ...(judged ? { p99BelowMs: LAG_P99_TARGET_MS } : {}),
    });
    const lagRows = [
      lagRow(
        `projection lag under the closed loop (${lagSamples} samples/run)`,
        lagUnderClosedLoop,
        !pacedRan,
      ),
      ...(pacedRan
        ? [lagRow(`projection lag under the open loop at ${targetRate} req/s`, lagUnderPacedLoad, true)]
        : []),
    ];
    const rows: ComparisonRow[] = [
      ...compareWith(base, [ref, closed, paused], null),
      {
        ...paced,
        ratio: paced.requestsPerSecond / base.requestsPerSecond,
        target: null,
        p99BelowMs: P99_TARGET_MS,
      },
      ...lagRows,
      ...rywRows,
    ];
    const missed = [...lagUnderClosedLoop, ...lagUnderPacedLoad].reduce((sum, run) => sum + run.missed, 0);
    const failures = [...pool.failures, ...probePool.failures]
      .map(([status, count]) => `${count} x ${status === 0 ? 'no answer' : status}`)
      .join(', ');

    return {
      name: NAME,
      title:
        'LinkFantasyTeam / UnlinkFantasyTeam (POST /api/command): CPU per request vs ref-command, and projection lag',
      settings,
      machine,
      rows,
      cpu: [
        cpuRow(costs, base.workload),
        cpuRow(costs, ref.workload),
        cpuRow(costs, closed.workload, {
          reference: ref.workload,
          targets: [
            { role: 'ingress', atMostRatio: COMMAND_OVER_REF_COMMAND },
            { role: 'redis', atMostRatio: COMMAND_OVER_REF_COMMAND },
            { role: 'worker', atMostMicros: WORKER_MICROS_PER_EVENT },
          ],
        }),
        cpuRow(costs, paused.workload, {
          reference: ref.workload,
          targets: [
            { role: 'ingress', atMostRatio: COMMAND_OVER_REF_COMMAND },
            { role: 'redis', atMostRatio: COMMAND_OVER_REF_COMMAND },
          ],
        }),
      ],
      notes: [
        `Setup (not measured): the bootstrap Admin creates ${TEAMS} teams for the load and ${PROBE_TEAM_COUNT} for the lag probe; every command is sent with its Bearer token (POST /api/auth/token).`,
        `Each request takes the least recently used team with no command in flight and sends the command valid for it (LinkFantasyTeam when unlinked, with fresh positive ids; UnlinkFantasyTeam when linked), so each team alternates Link, Unlink, ... and every answer should be 200. Before each run the teams' states are re-read from their aggregate records (a run ends with answers the load generator drops).`,
        'The service runs compiled (`npm run build`): one `node dist/ingress/main.js` (NODE_ENV=production, LOG_LEVEL=warn) and one `node dist/workers/main.js` (its projector keeps the fantasy-team documents), on a private redis-server on loopback.',
        `The baseline (bench/baselines/bare-express.cjs) gets a LinkFantasyTeam envelope of the same shape without an Authorization header; "vs baseline" is the ratio of the medians; each round runs every closed-loop workload once, in rotated order. The rate target (${RATE_TARGET} of the baseline's rate) is retired (issue 22): a bare app measures Express, not the work a command must do.`,
        `The reference (bench/baselines/ref-command.cjs, ref-command) gets the same Link bodies over the same ${TEAMS} team ids (its own keys) with the Admin's Bearer token: an HS256 verify, one Lua script that takes the lock and loads the record, one that checks the version, appends the envelope to the stream and the log partition, writes the record and releases the lock. Targets, on CPU per request (the CPU table): the ingress and redis-server at most ${COMMAND_OVER_REF_COMMAND}x ref-command's, the worker (one event per command: the projector's cost per event) at most ${WORKER_MICROS_PER_EVENT} us. The ingress's and Redis's figures of the service row include the lag probe's ${lagSamples} commands (and its polling) per run, under 1% of the run's requests.`,
        `The closed loop's latency is set by its connection count at saturation (Little's law), so "p99 under ${P99_TARGET_MS} ms at that rate" is judged on an open-loop run at the target rate itself (${RATE_TARGET} x the baseline's median, after the closed-loop rounds): requests start on a fixed schedule whatever the answers, latency from each scheduled start. ${pacedRan ? '' : 'It is not run when the closed loop fell short of that rate: above its capacity an open loop measures only a growing queue; BENCH_PACED_RATE forces it.'}`,
        `Projection lag: a probe in the bench process sends ${lagSamples} commands per measured run (${PROBE_LANES} at a time, evenly over the run, on its own teams) beside the load, notes when each 200 arrived, and polls the team's projection document (a dedicated Redis connection, about every 1 ms) until it shows the command's version. Target: p99 under ${LAG_P99_TARGET_MS} ms at the target rate${pacedRan ? ' (the open-loop row)' : '; judged under the closed loop, the highest rate this service reached'}. The "p99 per round" column shows it per run.`,
        `The worker-stopped row runs the same load with the worker process stopped (SIGSTOP before its warm-up, SIGCONT after its measured run), so the ingress's and Redis's CPU are the command path's alone, comparable with ref-command's (which has no projector); its worker column is 0. After each such run the worker catches up with the log while nothing else runs${catchUp ? `: median over the rounds, ${catchUp.events} events caught up per run, ${catchUp.workerMicrosPerEvent.toFixed(1)} us of worker CPU and ${catchUp.redisMicrosPerEvent.toFixed(1)} us of Redis CPU per event (the projector applying events in large batches; under the live load above it applies them as they come)` : ''}.`,
        `Read your own writes: after the load, on the idle service, ${rywSamples} pairs per round, one request at a time on ${PROBE_TEAM_COUNT} teams of their own, alternating a command alone (Link or Unlink) and the same command followed at once by GetFantasyTeam with minVersion = the answer's version (it waits for the projector's announcement when the projection is behind). The total and the read alone are of the paired samples; a read that did not answer 200 at that version counts as an error.`,
        ...(missed > 0
          ? [
              `The probe skipped ${missed} sample(s) scheduled after its run ended (its own commands were slow).`,
            ]
          : []),
        ...(failures ? [`Answers other than 200: ${failures}.`] : []),
      ],
      problems: [...problemsOf(measured), ...problemsOf([paced, ...lagRows, ...rywRows])],
    };
  } finally {
    await meter?.close();
    await stopAll();
  }
}

if (require.main === module) void runBenches([{ name: NAME, load: () => Promise.resolve({ run }) }]);
