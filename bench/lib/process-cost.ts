import { readFileSync } from 'node:fs';

import { Redis } from 'ioredis';

import type { LoadResult, Workload } from './load';
import { median } from './load';

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
  readonly cpu: readonly number[];
  readonly calls: Map<string, number>;
}

/** What one measured run cost, per response. */
export interface RunCost {
  /** CPU microseconds per response, one per measured process, in the order given to the meter. */
  readonly cpuMicros: readonly number[];
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
    /** The processes whose CPU is counted: e.g. [the ingress serving the workload, redis-server]. */
    private readonly pidsOf: (workload: Workload) => readonly number[],
  ) {}

  static open(redisUrl: string, pidsOf: (workload: Workload) => readonly number[]): CostMeter {
    return new CostMeter(new Redis(redisUrl, { lazyConnect: false, maxRetriesPerRequest: 1 }), pidsOf);
  }

  /** `workload`, with a snapshot taken as each of its measured runs starts. */
  track(workload: Workload): Workload {
    return {
      ...workload,
      alongside: async (durationSeconds) => {
        const cpu = this.pidsOf(workload).map(cpuSeconds);
        this.started.set(workload.name, { cpu, calls: await commandCalls(this.redis) });
        await workload.alongside?.(durationSeconds);
      },
    };
  }

  /** Ends the measured run `result` of `workload`: call from measureInterleaved's onRun. */
  async finish(workload: Workload, result: LoadResult): Promise<void> {
    const start = this.started.get(workload.name);
    if (!start) return;
    this.started.delete(workload.name);
    const cpu = this.pidsOf(workload).map(cpuSeconds);
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
      cpuMicros: cpu.map((seconds, i) => ((seconds - (start.cpu[i] ?? Number.NaN)) * 1e6) / responses),
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
      cpuMicros: (runs[0]?.cpuMicros ?? []).map((_, i) => median(runs.map((run) => run.cpuMicros[i] ?? NaN))),
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
