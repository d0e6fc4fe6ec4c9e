import type { Redis } from 'ioredis';

import type { Keys } from '../../shared/redis/keys';
import { LOG_PARTITIONS } from '../../shared/redis/partitions';
import { median } from './load';
import { cpuSeconds } from './process-cost';

/** The worker counts as caught up once it used less than this CPU over one poll. */
const IDLE_CPU_SECONDS = 0.02;
const POLL_MS = 250;
const CATCH_UP_TIMEOUT_MS = 120_000;

/** What one catch-up cost, per log entry the worker found waiting. */
export interface CatchUpCost {
  readonly events: number;
  readonly workerMicrosPerEvent: number;
  readonly redisMicrosPerEvent: number;
}

/**
 * Stops a worker process (SIGSTOP) while a command load runs, so the ingress's and Redis's CPU of
 * that run are the command path's alone (no projector work interleaved), then resumes it (SIGCONT)
 * and waits until it has caught up with the log, measuring what the catch-up cost the worker and
 * Redis per event: the projector's cost when it applies events in large batches.
 */
export class PausedWorker {
  private pausedAt: { readonly logEntries: number } | undefined;
  private readonly catchUps: CatchUpCost[] = [];

  constructor(
    private readonly workerPid: number,
    private readonly redisPid: number,
    private readonly redis: Redis,
    private readonly keys: Keys,
  ) {}

  /** Stops the worker, if it is not stopped already (a workload's beforeRun runs twice a round). */
  async pause(): Promise<void> {
    if (this.pausedAt) return;
    this.pausedAt = { logEntries: await this.logEntries() };
    process.kill(this.workerPid, 'SIGSTOP');
  }

  /** Resumes the worker and waits until it is idle again; records the catch-up's cost. */
  async resumeAndCatchUp(): Promise<CatchUpCost | undefined> {
    const pausedAt = this.pausedAt;
    if (!pausedAt) return undefined;
    this.pausedAt = undefined;
    const events = (await this.logEntries()) - pausedAt.logEntries;
    const worker = cpuSeconds(this.workerPid);
    const redis = cpuSeconds(this.redisPid);
    process.kill(this.workerPid, 'SIGCONT');
    const deadline = Date.now() + CATCH_UP_TIMEOUT_MS;
    let last = worker;
    for (;;) {
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
      const now = cpuSeconds(this.workerPid);
      if (now - last < IDLE_CPU_SECONDS || Date.now() > deadline) break;
      last = now;
    }
    // The last poll was idle: what it used is the worker's background, not the catch-up.
    const cost: CatchUpCost = {
      events,
      workerMicrosPerEvent: ((last - worker) * 1e6) / Math.max(1, events),
      redisMicrosPerEvent: ((cpuSeconds(this.redisPid) - redis) * 1e6) / Math.max(1, events),
    };
    this.catchUps.push(cost);
    return cost;
  }

  /** Medians over every catch-up so far; undefined when none ran. */
  summary(): CatchUpCost | undefined {
    if (this.catchUps.length === 0) return undefined;
    return {
      events: median(this.catchUps.map((cost) => cost.events)),
      workerMicrosPerEvent: median(this.catchUps.map((cost) => cost.workerMicrosPerEvent)),
      redisMicrosPerEvent: median(this.catchUps.map((cost) => cost.redisMicrosPerEvent)),
    };
  }

  /** Entries in every log partition: the events appended since the worker stopped are the difference. */
  private async logEntries(): Promise<number> {
    const pipeline = this.redis.pipeline();
    for (let partition = 0; partition < LOG_PARTITIONS; partition += 1)
      pipeline.xlen(this.keys.logPartition(partition));
    const results = (await pipeline.exec()) ?? [];
    return results.reduce((sum, [, length]) => sum + Number(length ?? 0), 0);
  }
}
