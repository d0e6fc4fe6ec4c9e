import { randomBytes, randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';

import { ImportClient, type ImportItem } from './lib/import-client';
import { median, percentile, positiveNumberFromEnv } from './lib/load';
import { markdownTable } from './lib/markdown-table';
import { cpuSeconds } from './lib/process-cost';
import { ensureBuilt, stopAll } from './lib/processes';
import { machineInfo } from './lib/report';
import {
  basicAuthorization,
  forEachConcurrently,
  issueToken,
  postJson,
  sleep,
  startService,
} from './lib/service';

/**
 * `npm run bench:worker-scaling` (issue 40, part 4): one ingress and 1, 2 and 4 worker processes on one
 * Redis. Each round imports BENCH_IMPORT_ROWS users (default 20,000, no passwords, so hashing does
 * not dominate) as BENCH_IMPORTS Normal imports (default 4: one import runs on one worker, so only
 * several imports can spread), while commands arrive at BENCH_COMMAND_RATE per second (default 100,
 * LinkFantasyTeam/UnlinkFantasyTeam over 200 teams) and a probe sends one command at a time and reads
 * it back with `minVersion`: the time that read waits is the projection's lag as a client sees it.
 * Reports rows/s, the probe's lag p50/p99/max, the commands' answers, and the CPU of each process
 * (from /proc) over the round; medians of BENCH_ROUNDS (default 3).
 */

const WORKER_COUNTS = (process.env.BENCH_WORKERS ?? '1,2,4').split(',').map(Number);
const ROWS = positiveNumberFromEnv('BENCH_IMPORT_ROWS', 20_000);
const IMPORTS = positiveNumberFromEnv('BENCH_IMPORTS', 4);
const COMMAND_RATE = positiveNumberFromEnv('BENCH_COMMAND_RATE', 100);
const ROUNDS = positiveNumberFromEnv('BENCH_ROUNDS', 3);
const TEAMS = 200;
const PROBE_TEAMS = 20;
const IMPORT_TIMEOUT_MS = 600_000;
const RUN_TAG = randomBytes(4).toString('hex');

interface Round {
  readonly rowsPerSecond: number;
  readonly lagMs: readonly number[];
  /** Probe reads that did not answer 200 (a 503 PROJECTION_BEHIND after the read's own wait). */
  readonly readsNot200: number;
  readonly commands: { readonly sent: number; readonly ok: number };
  /** CPU seconds per second of the round, per process (1.0 = one core all the time). */
  readonly cores: {
    readonly ingress: number;
    readonly workers: number;
    readonly redis: number;
    /** This process: the load, the probe and the polls. */
    readonly bench: number;
  };
}

let serial = 0;
function users(count: number): object[] {
  return Array.from({ length: count }, () => ({
    email: `scale-${RUN_TAG}-${++serial}@example.com`,
    userType: 'Human',
    roles: ['Member'],
  }));
}

/** Link and unlink in turn, per team: every command is accepted and appends one event. */
class Teams {
  private readonly linked = new Map<string, boolean>();
  private nextLink = 1;
  constructor(readonly ids: readonly string[]) {
    for (const id of ids) this.linked.set(id, false);
  }
  command(id: string): { commandType: string; command: object } {
    const linked = this.linked.get(id) ?? false;
    this.linked.set(id, !linked);
    return linked
      ? { commandType: 'UnlinkFantasyTeam', command: { aggregateRootId: id } }
      : {
          commandType: 'LinkFantasyTeam',
          command: {
            aggregateRootId: id,
            fantasyTeamExternalId: this.nextLink,
            fantasyUserId: this.nextLink++,
          },
        };
  }
}

async function measure(workers: number): Promise<Round[]> {
  const service = await startService('worker-scaling', { workers, workerEnv: { LOG_LEVEL: 'info' } });
  const { ingress } = service;
  const bearer = { authorization: `Bearer ${await issueToken(ingress, service.credentials)}` };
  const imports = new ImportClient(ingress, basicAuthorization(service.credentials));
  const teamIds = Array.from({ length: TEAMS + PROBE_TEAMS }, () => randomUUID());
  await forEachConcurrently(teamIds, 16, async (id, i) => {
    const answer = await postJson(
      `${ingress.baseUrl}/api/command`,
      { commandType: 'CreateFantasyTeam', command: { aggregateRootId: id, name: `Scale ${i}` } },
      bearer,
    );
    if (answer.status !== 200) throw new Error(`CreateFantasyTeam answered ${answer.status}`);
  });
  const load = new Teams(teamIds.slice(0, TEAMS));
  const probe = new Teams(teamIds.slice(TEAMS));
  const pids = {
    ingress: [ingress.pid],
    workers: service.workers.map((w) => w.pid),
    redis: [service.redisServer.pid],
  };
  const cpu = (list: number[]) => list.reduce((sum, pid) => sum + cpuSeconds(pid), 0);

  const finished = async (item: ImportItem) => {
    const deadline = performance.now() + IMPORT_TIMEOUT_MS;
    for (;;) {
      const result = await imports.result(item.importJobId);
      if (result.status === 'Completed') return;
      if (result.status === 'Failed') throw new Error(`import failed: ${result.message}`);
      if (performance.now() > deadline) throw new Error(`import still Pending after ${IMPORT_TIMEOUT_MS} ms`);
      await sleep(100);
    }
  };
  const runImports = async (rows: number) => {
    const submitted = await Promise.all(
      Array.from({ length: IMPORTS }, () =>
        imports.submit('UserSeeding', 'Normal', {
          enabled: true,
          skipIfUsersExist: false,
          users: users(rows / IMPORTS),
        }),
      ),
    );
    await Promise.all(submitted.map(finished));
  };
  await runImports(IMPORTS * 50); // warm-up: every worker's code paths and connections

  const rounds: Round[] = [];
  for (let round = 1; round <= ROUNDS; round++) {
    let done = false;
    const commands = { sent: 0, ok: 0 };
    const sender = (async () => {
      const everyMs = 1_000 / COMMAND_RATE;
      const started = performance.now();
      while (!done) {
        const id = load.ids[commands.sent % load.ids.length]!;
        commands.sent++;
        void postJson(`${ingress.baseUrl}/api/command`, load.command(id), bearer).then(
          (answer) => void (answer.status === 200 && commands.ok++),
          () => undefined,
        );
        await sleep(Math.max(0, started + commands.sent * everyMs - performance.now()));
      }
    })();
    const lagMs: number[] = [];
    let readsNot200 = 0;
    const prober = (async () => {
      for (let i = 0; !done; i++) {
        const id = probe.ids[i % probe.ids.length]!;
        const answer = await postJson(`${ingress.baseUrl}/api/command`, probe.command(id), bearer);
        if (answer.status !== 200) continue;
        const { version } = answer.body as { version: number };
        const readStarted = performance.now();
        const read = await postJson(
          `${ingress.baseUrl}/api/readmodel`,
          { query: { queryType: 'GetFantasyTeam', id, minVersion: version } },
          bearer,
        );
        if (read.status === 200) lagMs.push(performance.now() - readStarted);
        else readsNot200++;
        await sleep(50);
      }
    })();
    const benchCpu = () => {
      const usage = process.cpuUsage();
      return (usage.user + usage.system) / 1e6;
    };
    const before = {
      ingress: cpu(pids.ingress),
      workers: cpu(pids.workers),
      redis: cpu(pids.redis),
      bench: benchCpu(),
    };
    const started = performance.now();
    await runImports(ROWS);
    const seconds = (performance.now() - started) / 1_000;
    const after = {
      ingress: cpu(pids.ingress),
      workers: cpu(pids.workers),
      redis: cpu(pids.redis),
      bench: benchCpu(),
    };
    done = true;
    await Promise.all([sender, prober]);
    const result: Round = {
      rowsPerSecond: ROWS / seconds,
      lagMs,
      readsNot200,
      commands,
      cores: {
        ingress: (after.ingress - before.ingress) / seconds,
        workers: (after.workers - before.workers) / seconds,
        redis: (after.redis - before.redis) / seconds,
        bench: (after.bench - before.bench) / seconds,
      },
    };
    process.stderr.write(
      `[worker-scaling] ${workers} worker(s), round ${round}: ${Math.round(result.rowsPerSecond)} rows/s, lag p99 ${percentile(lagMs, 99).toFixed(1)} ms, cores ${JSON.stringify(result.cores)}\n`,
    );
    rounds.push(result);
  }
  await stopAll();
  return rounds;
}

const HEADER = [
  'workers',
  'rows/s, median (range)',
  'lag p50, ms',
  'lag p99, ms',
  'lag max, ms',
  'probe reads not 200',
  'commands 200/sent',
  'ingress cores',
  'workers cores',
  'redis cores',
  'bench cores',
];

async function main(): Promise<void> {
  ensureBuilt();
  const rows: string[][] = [];
  for (const workers of WORKER_COUNTS) {
    const rounds = await measure(workers);
    const med = (pick: (round: Round) => number) => median(rounds.map(pick));
    const range = (pick: (round: Round) => number) =>
      `${Math.round(Math.min(...rounds.map(pick)))}-${Math.round(Math.max(...rounds.map(pick)))}`;
    const lags = rounds.flatMap((round) => round.lagMs);
    rows.push([
      String(workers),
      `${Math.round(med((r) => r.rowsPerSecond))} (${range((r) => r.rowsPerSecond)})`,
      percentile(lags, 50).toFixed(1),
      percentile(lags, 99).toFixed(1),
      Math.max(...lags).toFixed(1),
      String(rounds.reduce((sum, r) => sum + r.readsNot200, 0)),
      `${rounds.reduce((sum, r) => sum + r.commands.ok, 0)}/${rounds.reduce((sum, r) => sum + r.commands.sent, 0)}`,
      med((r) => r.cores.ingress).toFixed(2),
      med((r) => r.cores.workers).toFixed(2),
      med((r) => r.cores.redis).toFixed(2),
      med((r) => r.cores.bench).toFixed(2),
    ]);
  }
  process.stdout.write(
    `${markdownTable(HEADER, rows, new Set(HEADER.slice(1)))}\n\nMachine: ${JSON.stringify(machineInfo())}; ${ROUNDS} rounds of ${ROWS} rows in ${IMPORTS} imports, ${COMMAND_RATE} commands/s.\n`,
  );
}

main().catch(async (error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
  await stopAll();
  process.exit(1);
});
