import { once } from 'node:events';

import { Cluster, type Redis } from 'ioredis';

import type { WriteDurabilityMode } from '../config';
import { masterHolding, type RedisClient } from '../redis/connections';
import type { Keys } from '../redis/keys';
import { registerScripts } from '../redis/scripts';
import { AppendOutcomeUnknownError } from './errors';
import { EVENT_STORE_SCRIPTS } from './event-store.scripts';

/**
 * What a command's success promises about its events (WRITE_DURABILITY, ADR 0021). The command
 * handler begins a durable write before its append, sends the append over the write's connection,
 * and answers success only once `confirm` resolves; a retry that finds the events an earlier
 * attempt appended asks `confirmEarlier` before it is answered.
 */
export interface WriteDurability {
  /** A write of the aggregate's events: the connection to send it over, and its confirmation. */
  begin(aggregateType: string, aggregateId: string): Promise<DurableWrite>;
  /**
   * Confirms events an earlier attempt appended, while the caller holds the aggregate's lock with
   * `lockToken` (for `ttlMs`). AppendOutcomeUnknownError when they are not confirmed.
   */
  confirmEarlier(aggregateType: string, aggregateId: string, lockToken: string, ttlMs: number): Promise<void>;
  /** Closes the connections of its own (none for `local`). */
  close(): Promise<void>;
}

/** One append's way to durability (WriteDurability.begin). */
export interface DurableWrite {
  /** The connection the append must go over; undefined: the event store's own. */
  readonly connection: RedisClient | undefined;
  /** Resolves once the append is as durable as asked; AppendOutcomeUnknownError otherwise. */
  confirm(): Promise<void>;
  /** Gives the connection back; called once, confirmed or not. */
  release(): void;
}

const LOCAL_WRITE: DurableWrite = {
  connection: undefined,
  confirm: () => Promise.resolve(),
  release: () => undefined,
};

/** `local`: the aggregate's master has the events; a failover may lose what its replica lacked. */
export const LOCAL_DURABILITY: WriteDurability = {
  begin: () => Promise.resolve(LOCAL_WRITE),
  confirmEarlier: () => Promise.resolve(),
  close: () => Promise.resolve(),
};

/**
 * Connections kept per master for `replicated` writes. WAIT blocks its connection until a replica
 * answers or the timeout passes, and counts only that connection's writes, so each append and its
 * WAIT take a pooled connection for themselves. With no replica every WAIT lasts the timeout, and
 * more connections would only queue more commands bound for a 503; a command that finds all busy
 * for the timeout is answered 503 before its append is sent (nothing written). Sizing: ADR 0021.
 */
export const REPLICATED_WRITE_CONNECTIONS_PER_MASTER = 16;

/** Someone waiting for a connection of a full pool; undefined when the pool closed meanwhile. */
type Waiter = (connection: Redis | undefined) => void;

/** The connections to one master for replicated writes, each lent to one command at a time. */
class MasterConnections {
  private readonly idle: Redis[] = [];
  private readonly waiters: Waiter[] = [];
  /** Every connection not ended, lent or idle. */
  private readonly all = new Set<Redis>();
  /** Set by close(): nothing is lent or opened after it. */
  private closed = false;

  constructor(
    private readonly connect: () => Redis,
    private readonly max: number,
  ) {}

  /** A connection ready for commands within `timeoutMs`; else an error saying none was (nothing sent). */
  async acquire(timeoutMs: number): Promise<Redis> {
    const deadline = performance.now() + timeoutMs;
    const connection = this.take() ?? (await this.wait(timeoutMs));
    return ready(connection, Math.max(Math.ceil(deadline - performance.now()), 1), () =>
      this.release(connection),
    );
  }

  /** Gives a connection back: to the longest waiter, else to the idle ones. */
  release(connection: Redis): void {
    const usable = connection.status === 'end' ? undefined : connection;
    const waiter = this.waiters.shift();
    if (!waiter) {
      if (usable) this.idle.push(usable);
      return;
    }
    // A connection that ended is replaced for the waiter (its 'end' freed its place).
    const handed = usable ?? this.take();
    if (handed) waiter(handed);
    else this.waiters.unshift(waiter);
  }

  async close(): Promise<void> {
    this.closed = true;
    // Those waiting are refused at once (a 503, nothing sent) rather than left to time out.
    for (const waiter of this.waiters.splice(0)) waiter(undefined);
    this.idle.length = 0;
    await Promise.all([...this.all].map((connection) => connection.quit().catch(() => undefined)));
  }

  /** An idle connection that has not ended, or a new one while the pool has room. */
  private take(): Redis | undefined {
    if (this.closed) return undefined;
    for (let idle = this.idle.pop(); idle; idle = this.idle.pop()) if (idle.status !== 'end') return idle;
    if (this.all.size >= this.max) return undefined;
    const connection = this.connect();
    this.all.add(connection);
    connection.once('end', () => this.all.delete(connection));
    return connection;
  }

  private wait(timeoutMs: number): Promise<Redis> {
    if (this.closed) return Promise.reject(notReady('the service is closing'));
    return new Promise<Redis>((resolve, reject) => {
      const waiter: Waiter = (connection) => {
        clearTimeout(timer);
        if (connection) resolve(connection);
        else reject(notReady('the service is closing'));
      };
      const timer = setTimeout(() => {
        this.waiters.splice(this.waiters.indexOf(waiter), 1);
        reject(notReady(`no connection for a replicated write was free within ${timeoutMs} ms`));
      }, timeoutMs);
      this.waiters.push(waiter);
    });
  }
}

/**
 * An error the command path reads as Redis unavailable, before the append was sent: a 503, and
 * nothing written (its message is one of REFUSED_UNSENT's, handle-command.ts).
 */
function notReady(why: string): Error {
  return new Error(`Redis connection is not ready: ${why}`);
}

/** `connection` once it is ready, within `timeoutMs`; given back (`giveBack`) when it is not. */
async function ready(connection: Redis, timeoutMs: number, giveBack: () => void): Promise<Redis> {
  if (connection.status === 'ready') return connection;
  const timeout = AbortSignal.timeout(timeoutMs);
  try {
    await once(connection, 'ready', { signal: timeout });
    return connection;
  } catch {
    giveBack();
    throw notReady(`a connection for a replicated write did not connect within ${timeoutMs} ms`);
  }
}

/**
 * `replicated`: a replica of the aggregate's master has the events. The append and a
 * `WAIT 1 <timeoutMs>` run on a pooled connection of their own to that master, since WAIT counts
 * only its own connection's writes. No replica in time, or no answer, leaves the outcome unknown:
 * a 503 naming the requestId to retry with; the retry finds the events by that id and confirms them
 * the same way, or decides and appends again if a failover lost them. On a cluster the master is
 * the slot map's for the aggregate's slot; a slot that moved refuses the append with MOVED, nothing
 * written (ADR 0021).
 */
export class ReplicaConfirmation implements WriteDurability {
  private readonly masters = new Map<string, MasterConnections>();
  /** Set by close(): no pool is made, no connection opened, after it. */
  private closed = false;

  constructor(
    private readonly redis: RedisClient,
    private readonly keys: Keys,
    private readonly timeoutMs: number,
    private readonly connectionsPerMaster = REPLICATED_WRITE_CONNECTIONS_PER_MASTER,
  ) {}

  async begin(aggregateType: string, aggregateId: string): Promise<DurableWrite> {
    const { pool, connection } = await this.connectionTo(aggregateType, aggregateId);
    let released = false;
    return {
      connection,
      confirm: () => this.confirm(connection, aggregateId),
      release: () => {
        if (released) return;
        released = true;
        pool.release(connection);
      },
    };
  }

  async confirmEarlier(
    aggregateType: string,
    aggregateId: string,
    lockToken: string,
    ttlMs: number,
  ): Promise<void> {
    const { pool, connection } = await this.connectionTo(aggregateType, aggregateId);
    try {
      // A write of this connection's own after the events (appended before this lock was taken):
      // without one, WAIT would count no write and answer at once.
      let renewed: number;
      try {
        const lockKey = this.keys.aggregateLock(aggregateType, aggregateId);
        renewed = await connection.renewLock(lockKey, lockToken, ttlMs);
      } catch (error) {
        throw new AppendOutcomeUnknownError(aggregateId, error);
      }
      if (renewed !== 1) {
        const cause = new Error('the lock expired before the confirmation: no write to WAIT for');
        throw new AppendOutcomeUnknownError(aggregateId, cause, 'unreplicated');
      }
      await this.confirm(connection, aggregateId);
    } finally {
      pool.release(connection);
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    await Promise.all([...this.masters.values()].map((pool) => pool.close()));
    this.masters.clear();
  }

  private async confirm(connection: Redis, aggregateId: string): Promise<void> {
    let replicas: number;
    try {
      replicas = await connection.wait(1, this.timeoutMs);
    } catch (error) {
      throw new AppendOutcomeUnknownError(aggregateId, error);
    }
    if (replicas < 1) {
      const cause = new Error(`WAIT 1 ${this.timeoutMs}: no replica acknowledged the append`);
      throw new AppendOutcomeUnknownError(aggregateId, cause, 'unreplicated');
    }
  }

  /** A connection of the pool of the aggregate's master, ready for its append, and that pool. */
  private async connectionTo(
    aggregateType: string,
    aggregateId: string,
  ): Promise<{ pool: MasterConnections; connection: Redis }> {
    if (this.closed) throw notReady('the service is closing');
    const master = masterHolding(this.redis, this.keys.aggregateStream(aggregateType, aggregateId));
    const address = `${master.options.host}:${master.options.port}`;
    let pool = this.masters.get(address);
    if (!pool) {
      pool = new MasterConnections(() => this.openTo(master), this.connectionsPerMaster);
      this.masters.set(address, pool);
    }
    return { pool, connection: await pool.acquire(this.timeoutMs) };
  }

  /**
   * A connection to `master` like the request connection (its password, timeouts, no offline
   * queue), with the scripts of an append; not auto-pipelined, as it carries one command at a time.
   * A cluster's node connection does not reconnect (the cluster opens new ones): neither does this
   * one, and the pool opens another when it is gone.
   */
  private openTo(master: Redis): Redis {
    const connection = master.duplicate({
      lazyConnect: false,
      enableOfflineQueue: false,
      enableAutoPipelining: false,
      connectionName: 'fts-replicated-writes',
      ...(this.redis instanceof Cluster ? { retryStrategy: () => null } : {}),
    });
    // Its errors reach the command that uses it (a 503); a listener keeps them off stderr.
    connection.on('error', () => undefined);
    return registerScripts(connection, EVENT_STORE_SCRIPTS);
  }
}

/** The durability the settings ask for, on the connection commands are handled with. */
export function writeDurability(
  settings: { readonly mode: WriteDurabilityMode; readonly timeoutMs: number },
  redis: RedisClient,
  keys: Keys,
): WriteDurability {
  return settings.mode === 'replicated'
    ? new ReplicaConfirmation(redis, keys, settings.timeoutMs)
    : LOCAL_DURABILITY;
}
