import { readFileSync } from 'node:fs';

import { Redis } from 'ioredis';

import {
  type LoadResult,
  type LoadSettings,
  type Measured,
  measureInterleaved,
  median,
  reportWorkloadRun,
  type Workload,
} from './load';
import { markdownTable } from './markdown-table';

/**
 * The processes a request-path workload runs on, by role: `ingress` is the HTTP server that
 * answers it (the service's ingress, or a reference app in bench/baselines/), `redis` the
 * redis-server, `worker` the worker process (its projector). A workload names only those it has.
 */
export const PROCESS_ROLES = ['ingress', 'redis', 'worker'] as const;
export type ProcessRole = (typeof PROCESS_ROLES)[number];
export type ProcessPids = Partial<Record<ProcessRole, number>>;
export type CpuMicros = Partial<Record<ProcessRole, number>>;

/** Linux's USER_HZ: /proc/<pid>/stat counts CPU time in these ticks (100 a second on every arch Node runs on). */
const TICKS_PER_SECOND = 100;

/** CPU seconds (user + system, every thread) a process has used so far; NaN where /proc cannot tell. */
export function cpuSeconds(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) may hold spaces and parentheses: count fields after its last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // utime and stime are fields 14 and 15 of the whole line, 12 and 13 after the name.
    return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND;
  } catch {
    return Number.NaN;
  }
}

/** CPU seconds so far of each process, by role. */
function cpuOf(pids: ProcessPids): CpuMicros {
  return Object.fromEntries(Object.entries(pids).map(([role, pid]) => [role, cpuSeconds(pid)]));
}

/** Calls per command so far (INFO commandstats), without the INFO calls the meter itself makes. */
async function commandCalls(redis: Redis): Promise<Map<string, number>> {
  const info = await redis.info('commandstats');
  const calls = new Map<string, number>();
  for (const match of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) {
    const [, command, count] = match;
    if (command && command !== 'info') calls.set(command, Number(count));
  }
  return calls;
}

interface Snapshot {
  readonly cpu: CpuMicros;
  readonly calls: Map<string, number>;
}

/** What one measured run cost, per response. */
export interface RunCost {
  /** CPU microseconds per response, by the role of each measured process. */
  readonly cpuMicros: CpuMicros;
  /** Redis commands per response, all commands and by command. */
  readonly redisCommands: number;
  readonly byCommand: ReadonlyMap<string, number>;
}

/**
 * Measures what each response of a workload costs the processes serving it: CPU time from /proc
 * (robust on a shared machine, where the rate also moves with the neighbours' load) and Redis
 * commands from INFO commandstats (a round trip the request made, or did not). Snapshots are taken
 * when the measured run starts (the workload's `alongside`) and when it has ended (`finish`, from
 * measureInterleaved's onRun), so warm-ups are left out.
 *
 * The Redis figure counts every client of the server: run one workload at a time (as
 * measureInterleaved does), and read it next to an idle process's background, which this meter
 * does not subtract.
 */
export class CostMeter {
  private readonly started = new Map<string, Snapshot>();
  private readonly costs = new Map<string, RunCost[]>();

  private constructor(
    private readonly redis: Redis,
    /** The processes whose CPU is counted, by role: the server answering the workload, redis-server, the worker. */
    private readonly pidsOf: (workload: Workload) => ProcessPids,
  ) {}

  static open(redisUrl: string, pidsOf: (workload: Workload) => ProcessPids): CostMeter {
    return new CostMeter(new Redis(redisUrl, { lazyConnect: false, maxRetriesPerRequest: 1 }), pidsOf);
  }

  /** `workload`, with a snapshot taken as each of its measured runs starts. */
  track(workload: Workload): Workload {
    return {
      ...workload,
      alongside: async (durationSeconds) => {
        const cpu = cpuOf(this.pidsOf(workload));
        this.started.set(workload.name, { cpu, calls: await commandCalls(this.redis) });
        await workload.alongside?.(durationSeconds);
      },
    };
  }

  /**
   * measureInterleaved over `workloads`, each run reported on stderr and its cost recorded, then
   * `afterRun` (e.g. a step that must not count in the next run's cost).
   */
  measure(
    workloads: readonly Workload[],
    settings: LoadSettings & { rounds: number },
    afterRun?: (workload: Workload, round: number, result: LoadResult) => Promise<void>,
  ): Promise<Measured[]> {
    return measureInterleaved(
      workloads.map((workload) => this.track(workload)),
      settings,
      async (workload, round, result) => {
        reportWorkloadRun(workload, round, result);
        await this.finish(workload, result);
        await afterRun?.(workload, round, result);
      },
    );
  }

  /** Ends the measured run `result` of `workload`: call from measureInterleaved's onRun. */
  async finish(workload: Workload, result: LoadResult): Promise<void> {
    const start = this.started.get(workload.name);
    if (!start) return;
    this.started.delete(workload.name);
    const cpu = cpuOf(this.pidsOf(workload));
    const calls = await commandCalls(this.redis);
    const responses = Math.max(1, result.responses);
    const byCommand = new Map<string, number>();
    let total = 0;
    for (const [command, count] of calls) {
      const delta = count - (start.calls.get(command) ?? 0);
      if (delta <= 0) continue;
      byCommand.set(command, delta / responses);
      total += delta;
    }
    const run: RunCost = {
      cpuMicros: Object.fromEntries(
        Object.entries(cpu).map(([role, seconds]) => [
          role,
          ((seconds - (start.cpu[role as ProcessRole] ?? Number.NaN)) * 1e6) / responses,
        ]),
      ),
      redisCommands: total / responses,
      byCommand,
    };
    this.costs.set(workload.name, [...(this.costs.get(workload.name) ?? []), run]);
  }

  /** Medians over the workload's runs; undefined when none was measured. */
  summary(workloadName: string): RunCost | undefined {
    const runs = this.costs.get(workloadName);
    if (!runs?.length) return undefined;
    const commands = new Set(runs.flatMap((run) => [...run.byCommand.keys()]));
    return {
      cpuMicros: Object.fromEntries(
        Object.keys(runs[0]?.cpuMicros ?? {}).map((role) => [
          role,
          median(runs.map((run) => run.cpuMicros[role as ProcessRole] ?? NaN)),
        ]),
      ),
      redisCommands: median(runs.map((run) => run.redisCommands)),
      byCommand: new Map(
        [...commands].map((command) => [command, median(runs.map((run) => run.byCommand.get(command) ?? 0))]),
      ),
    };
  }

  /** Redis commands a second while no load runs: the background the per-response figures include. */
  async background(seconds: number): Promise<{ perSecond: number; byCommand: ReadonlyMap<string, number> }> {
    const before = await commandCalls(this.redis);
    await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
    const after = await commandCalls(this.redis);
    const byCommand = new Map<string, number>();
    let total = 0;
    for (const [command, count] of after) {
      const delta = count - (before.get(command) ?? 0);
      if (delta <= 0) continue;
      byCommand.set(command, delta / seconds);
      total += delta;
    }
    return { perSecond: total / seconds, byCommand };
  }

  /** Every run of the workload, for a per-round column. */
  runs(workloadName: string): readonly RunCost[] {
    return this.costs.get(workloadName) ?? [];
  }

  async close(): Promise<void> {
    await this.redis.quit().catch(() => this.redis.disconnect());
  }
}

/** A ceiling on one process's CPU per request: a ratio to the reference's, or microseconds. */
export type CpuTarget =
  | { readonly role: ProcessRole; readonly atMostRatio: number }
  | { readonly role: ProcessRole; readonly atMostMicros: number };

/** One line of the CPU table: a workload's median cost per request, against its reference. */
export interface CpuRow {
  readonly workload: string;
  readonly cost: RunCost | undefined;
  readonly runs: readonly RunCost[];
  /** The workload it is compared with, measured in the same rounds (e.g. ref-read). */
  readonly reference?: {
    readonly workload: string;
    readonly cost: RunCost | undefined;
    readonly runs: readonly RunCost[];
  };
  readonly targets?: readonly CpuTarget[];
}

/** The row of `workload` from `meter`'s medians, against `reference` when named. */
export function cpuRow(
  meter: CostMeter,
  workload: string,
  options: { readonly reference?: string; readonly targets?: readonly CpuTarget[] } = {},
): CpuRow {
  return {
    workload,
    cost: meter.summary(workload),
    runs: meter.runs(workload),
    ...(options.reference === undefined
      ? {}
      : {
          reference: {
            workload: options.reference,
            cost: meter.summary(options.reference),
            runs: meter.runs(options.reference),
          },
        }),
    ...(options.targets ? { targets: options.targets } : {}),
  };
}

/**
 * The row's CPU per request of `role` over its reference's: the median of the rounds' own ratios
 * (each run over the reference's run of the same round, minutes apart at most), which cancels what
 * the machine's load did to both in that round; the ratio of the medians when the run counts
 * differ. NaN without both.
 */
export function cpuRatio(row: CpuRow, role: ProcessRole): number {
  const referenceRuns = row.reference?.runs ?? [];
  if (row.runs.length > 0 && referenceRuns.length === row.runs.length) {
    return median(
      row.runs.map(
        (run, round) =>
          (run.cpuMicros[role] ?? Number.NaN) / (referenceRuns[round]?.cpuMicros[role] ?? Number.NaN),
      ),
    );
  }
  const own = row.cost?.cpuMicros[role];
  const reference = row.reference?.cost?.cpuMicros[role];
  return own !== undefined && reference !== undefined ? own / reference : Number.NaN;
}

function targetText(target: CpuTarget): string {
  return 'atMostRatio' in target
    ? `${target.role} <= ${target.atMostRatio.toFixed(2)}x`
    : `${target.role} <= ${target.atMostMicros} us`;
}

/** Whether the row's medians meet the target. */
export function meetsCpuTarget(row: CpuRow, target: CpuTarget): boolean {
  if ('atMostRatio' in target) return cpuRatio(row, target.role) <= target.atMostRatio;
  return (row.cost?.cpuMicros[target.role] ?? Number.NaN) <= target.atMostMicros;
}

function micros(value: number | undefined): string {
  return value !== undefined && Number.isFinite(value) ? value.toFixed(1) : '-';
}

/**
 * The CPU table (Markdown, padded for a terminal): per request and process, medians over the
 * rounds, the ratios to each row's reference, its targets, and the ingress's figure by round.
 */
export function cpuTable(rows: readonly CpuRow[]): string {
  const roles = PROCESS_ROLES.filter((role) => rows.some((row) => row.cost?.cpuMicros[role] !== undefined));
  const header = [
    'Workload (CPU us per request)',
    ...roles,
    'Redis cmds/req',
    'vs',
    `ratio (${roles.join(' / ')})`,
    'target',
    'met?',
    'ingress by round',
  ];
  const numeric = new Set([...roles, 'Redis cmds/req']);
  const body = rows.map((row) => [
    row.workload,
    ...roles.map((role) => micros(row.cost?.cpuMicros[role])),
    row.cost ? row.cost.redisCommands.toFixed(2) : '-',
    row.reference?.workload ?? '',
    row.reference
      ? roles
          .map((role) => {
            const ratio = cpuRatio(row, role);
            return Number.isFinite(ratio) && (row.reference?.cost?.cpuMicros[role] ?? 0) >= 1
              ? ratio.toFixed(2)
              : '-';
          })
          .join(' / ')
      : '',
    (row.targets ?? []).map(targetText).join(', '),
    row.targets?.length ? (row.targets.every((target) => meetsCpuTarget(row, target)) ? 'yes' : 'NO') : '',
    row.runs.map((run) => micros(run.cpuMicros.ingress)).join(' / '),
  ]);
  return markdownTable(header, body, numeric);
}

/** How the CPU table was measured: one note for every bench that reports one. */
export const CPU_TABLE_NOTE =
  "CPU table: CPU time per response of each process serving the workload (ingress: the HTTP server answering it, the service or a reference in bench/baselines/; redis: redis-server; worker: the worker process, its projector), read from /proc/<pid>/stat (utime + stime, every thread, 10 ms ticks) when each measured run starts and after it ends, divided by the responses of the run; medians over the rounds. The ratio is the median over the rounds of each process's CPU per request over the reference's in the same round (each round runs every workload once, so both ran minutes apart at most, under much the same load from the machine's other work) (- where the reference uses less than 1 us of that process). Redis cmds/req from INFO commandstats (every client of the server counts). req/s and latency above are for information: on a shared machine they move with the neighbours' load far more than CPU per request.";

/**
 * One note per distinct workload of the CPU table: its Redis commands per request by command
 * (commands a script runs count too, as INFO commandstats counts them) and each process's CPU by
 * round.
 */
export function cpuRowNotes(rows: readonly CpuRow[]): string[] {
  const seen = new Set<string>();
  return rows.flatMap((row) => {
    if (seen.has(row.workload) || !row.cost) return [];
    seen.add(row.workload);
    const commands = [...row.cost.byCommand]
      .filter(([, perRequest]) => perRequest >= 0.005)
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([command, perRequest]) => `${command} ${perRequest.toFixed(2)}`)
      .join(', ');
    const byRound = PROCESS_ROLES.filter((role) => row.cost?.cpuMicros[role] !== undefined)
      .map((role) => `${role} ${row.runs.map((run) => micros(run.cpuMicros[role])).join(' / ')}`)
      .join('; ');
    return [
      `${row.workload}: Redis commands per request ${row.cost.redisCommands.toFixed(2)}${commands ? ` (${commands})` : ''}; CPU us per request by round: ${byRound}.`,
    ];
  });
}
