import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { type LocalRedis, startLocalRedis } from '../../scripts/lib/redis-server';

/**
 * A redis-server of one fault test's own, with AOF fsynced on every write in a temporary directory,
 * that can be stopped and started again on the same port and directory: what the service sees
 * when its Redis restarts. Fault tests never stop the shared test Redis, which other suites use.
 */
export class DurableRedis {
  private constructor(
    readonly dataDir: string,
    readonly port: number,
    private current: LocalRedis | undefined,
  ) {}

  static async start(): Promise<DurableRedis> {
    const dataDir = mkdtempSync(path.join(os.tmpdir(), 'fts-fault-redis-'));
    try {
      const redis = await startLocalRedis({ dataDir, appendfsync: 'always' });
      return new DurableRedis(dataDir, redis.port, redis);
    } catch (error) {
      rmSync(dataDir, { recursive: true, force: true });
      throw error;
    }
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  get running(): boolean {
    return this.current !== undefined;
  }

  /** SIGKILL keeps only what was fsynced (everything acknowledged, with `appendfsync always`). */
  async stop(signal: 'SIGTERM' | 'SIGKILL' = 'SIGTERM'): Promise<void> {
    const stopping = this.current;
    this.current = undefined;
    await stopping?.stop(signal);
  }

  /** Starts it again on the same port and directory; it reloads its AOF before answering PING. */
  async resume(): Promise<void> {
    if (this.current) return;
    this.current = await startLocalRedis({ port: this.port, dataDir: this.dataDir, appendfsync: 'always' });
  }

  async restart(signal: 'SIGTERM' | 'SIGKILL' = 'SIGTERM'): Promise<void> {
    await this.stop(signal);
    await this.resume();
  }

  /** Stops it (if running) and deletes its data directory. */
  async destroy(): Promise<void> {
    await this.stop('SIGKILL');
    rmSync(this.dataDir, { recursive: true, force: true });
  }
}
