import keySlot from 'cluster-key-slot';
import { Cluster, type ClusterOptions, Redis, type RedisOptions } from 'ioredis';

import { ConfigError, type RedisTarget } from '../config';
import type { Logger } from '../logger';

/**
 * A connection to one Redis server or to a Redis Cluster. Every module takes this type, never
 * `Redis` alone, so the same code runs on both (REDIS_URL or REDIS_CLUSTER_NODES). What makes that
 * safe is the key layout (keys.ts): every command and script touches the keys of one hash slot.
 */
export type RedisClient = Redis | Cluster;

/**
 * Why a connection exists decides how it behaves while Redis is away:
 * - `request`: serves HTTP: no offline queue and a short timeout, so a request fails fast (503).
 *   An unanswered command is not re-sent on reconnect (a re-sent append would meet its own version
 *   fence and claim "nothing written"): it fails as an unknown outcome (AppendOutcomeUnknownError).
 * - `queue`: BullMQ's, which blocks and must retry forever (`maxRetriesPerRequest: null`).
 * - `background`: a loop of its own (the projector): waits out an outage like `queue`, and
 *   auto-pipelines like `request`, so the reads of one pass leave in one socket write.
 */
export type ConnectionPurpose = 'request' | 'queue' | 'background';

const MAX_RECONNECT_DELAY_MS = 2_000;
const COMMAND_TIMEOUT_MS = 2_000;

/** Reconnect forever with a capped backoff: an outage never needs a process restart. */
const reconnectDelay = (attempt: number) => Math.min(50 * 2 ** Math.min(attempt, 6), MAX_RECONNECT_DELAY_MS);

function optionsFor(purpose: ConnectionPurpose): RedisOptions {
  const common: RedisOptions = {
    retryStrategy: reconnectDelay,
    connectTimeout: 2_000,
    lazyConnect: false,
  };
  if (purpose === 'queue') return { ...common, maxRetriesPerRequest: null, enableReadyCheck: false };
  if (purpose === 'background') return { ...common, maxRetriesPerRequest: null, enableAutoPipelining: true };
  // Auto-pipelining sends the commands of concurrent requests in one socket write: under load the
  // write syscalls, not Redis, were the client's largest cost.
  return {
    ...common,
    enableOfflineQueue: false,
    autoResendUnfulfilledCommands: false,
    maxRetriesPerRequest: 1,
    commandTimeout: COMMAND_TIMEOUT_MS,
    enableAutoPipelining: true,
  };
}

/**
 * Auto-pipelining on a cluster: ioredis groups the commands of a batch by the slot of their first
 * key (a script's EVALSHA by the first key after its key count, scripts.ts).
 */
const CLUSTER_AUTO_PIPELINING: Pick<ClusterOptions, 'enableAutoPipelining'> = {
  enableAutoPipelining: true,
};

/**
 * The same purposes on a cluster. Per-node settings go to `redisOptions`; the offline queue, the
 * reconnect strategy and auto-pipelining (which ioredis groups by slot) belong to the cluster.
 */
function clusterOptionsFor(
  purpose: ConnectionPurpose,
  connectionName: string,
  password: string | undefined,
): ClusterOptions {
  const options = clusterPurposeOptions(purpose, connectionName);
  // Every node connection (the ones found through the slot map too) authenticates with it.
  return password === undefined
    ? options
    : { ...options, redisOptions: { ...options.redisOptions, password } };
}

function clusterPurposeOptions(purpose: ConnectionPurpose, connectionName: string): ClusterOptions {
  const common: ClusterOptions = {
    clusterRetryStrategy: reconnectDelay,
    lazyConnect: false,
    // A failover takes the cluster a few seconds (cluster-node-timeout plus an election): commands
    // to the moving slots are retried meanwhile rather than failed at once.
    retryDelayOnFailover: 200,
    retryDelayOnClusterDown: 200,
    slotsRefreshTimeout: 2_000,
    // The slot map is read again every 2 s, so one gone stale in a failover heals by itself: the
    // client follows a MOVED (and refreshes the map) only when every command of an auto-pipeline got
    // the same one; otherwise the MOVED reaches the caller (a 503) and nothing else refreshes it.
    slotsRefreshInterval: 2_000,
    // Replicas lag: a read right after a command must see it, so every command goes to a master.
    scaleReads: 'master',
  };
  if (purpose === 'queue') {
    return {
      ...common,
      redisOptions: { connectTimeout: 2_000, maxRetriesPerRequest: null, connectionName },
    };
  }
  if (purpose === 'background') {
    return {
      ...common,
      ...CLUSTER_AUTO_PIPELINING,
      redisOptions: { connectTimeout: 2_000, maxRetriesPerRequest: null, connectionName },
    };
  }
  return {
    ...common,
    enableOfflineQueue: false,
    // Every command here is auto-pipelined, and the cluster client re-sends a batch whose commands
    // all failed with one error ("Connection is closed" included: ioredis's Pipeline.exec), appends
    // too, after retryDelayOnFailover (which a node just connecting needs: not 0). A re-sent append
    // whose first run did reach Redis finds its own events and answers with their version
    // (append-events-6.lua), so a re-send never writes twice nor reports "nothing written".
    ...CLUSTER_AUTO_PIPELINING,
    redisOptions: {
      connectTimeout: 2_000,
      maxRetriesPerRequest: 1,
      commandTimeout: COMMAND_TIMEOUT_MS,
      autoResendUnfulfilledCommands: false,
      connectionName,
    },
  };
}

/**
 * Opens a connection to `target` (one server, or a cluster through its listed nodes) whose state
 * changes are logged once each (not once per retry).
 */
export function createRedisConnection(
  target: RedisTarget,
  purpose: ConnectionPurpose,
  logger: Logger,
  name: string = purpose,
): RedisClient {
  const connectionName = `fts-${name}`;
  const redis: RedisClient =
    target.kind === 'cluster'
      ? new Cluster(
          target.nodes.map(({ host, port }) => ({ host, port })),
          clusterOptionsFor(purpose, connectionName, target.password),
        )
      : new Redis(target.url, {
          ...optionsFor(purpose),
          connectionName,
          ...(target.password === undefined ? {} : { password: target.password }),
        });
  return watchConnection(redis, logger, name, describeRedisTarget(target));
}

/**
 * Where `target` points, for logs: the URL without its credentials or query
 * (`redis://***@host:6379/0`), or the cluster's nodes. A password never reaches a log line.
 */
export function describeRedisTarget(target: RedisTarget): string {
  if (target.kind === 'cluster') return target.nodes.map(({ host, port }) => `${host}:${port}`).join(',');
  try {
    const url = new URL(target.url);
    const hadCredentials = url.username !== '' || url.password !== '';
    // ioredis reads any option from the query too (`?password=`), so none of it is shown.
    const hadQuery = url.search !== '';
    url.username = '';
    url.password = '';
    url.search = '';
    const shown = hadCredentials ? url.href.replace('//', '//***@') : url.href;
    return hadQuery ? `${shown}?***` : shown;
  } catch {
    return '(an unparsable REDIS_URL)';
  }
}

/** Each connection's described target, so a duplicate logs the same one. */
const targets = new WeakMap<RedisClient, string>();

/** Logs the connection's state changes once each (not once per reconnect attempt). */
function watchConnection(redis: RedisClient, logger: Logger, name: string, target?: string): RedisClient {
  if (target !== undefined) targets.set(redis, target);
  const mode = redis instanceof Cluster ? 'cluster' : 'standalone';
  // undefined until the first outcome, so a Redis that is down from the start is reported too.
  let healthy: boolean | undefined;
  redis.on('ready', () => {
    if (healthy !== true)
      logger.info('redis connection ready', { connection: name, mode, ...(target ? { target } : {}) });
    healthy = true;
  });
  redis.on('error', (error: Error) => {
    if (healthy !== false)
      logger.warn('redis connection unavailable', { connection: name, error: error.message });
    healthy = false;
  });
  return redis;
}

/**
 * A second connection like `client` (same server or cluster, same purpose), for what must not
 * share one: a subscriber (a subscribed connection can run nothing else). The offline queue is on,
 * so a SUBSCRIBE sent while connecting waits for the connection instead of failing. ioredis copies
 * options, not listeners: without its own 'error' listener, every failed reconnect while Redis is
 * away was printed to stderr as an unhandled error event.
 */
export function duplicateConnection(client: RedisClient, logger: Logger, name: string): RedisClient {
  const copy =
    client instanceof Cluster
      ? client.duplicate([], { enableOfflineQueue: true })
      : client.duplicate({ enableOfflineQueue: true, connectionName: `fts-${name}` });
  return watchConnection(copy, logger, name, targets.get(client));
}

/**
 * The servers that hold keys: the one server, or every master of a cluster. Commands without a key
 * (SCAN, INFO) reach one random node on a cluster, so whatever must see every key runs on each.
 */
export function keyHoldingNodes(client: RedisClient): Redis[] {
  if (!(client instanceof Cluster)) return [client];
  const masters = client.nodes('master');
  // Before the slot map arrives there are none: seeing no keys then would be a silent lie.
  if (masters.length === 0) throw new Error("Cluster isn't ready: no master is known yet");
  return masters;
}

/**
 * The connection to the server that holds `key` as its master: the one server, or the cluster
 * master that the client's slot map gives the key's slot to (the node it sends that slot's commands
 * to, so a command sent here after one on `key` runs on the same server connection). Throws when the
 * slot map names no master this client is connected to (the cluster is moving the slot).
 */
export function masterHolding(client: RedisClient, key: string): Redis {
  if (!(client instanceof Cluster)) return client;
  const slot = keySlot(key);
  const nodeKey = client.slots[slot]?.[0];
  const master = client
    .nodes('master')
    .find(({ options }) => nodeKey !== undefined && `${options.host}:${options.port}` === nodeKey);
  if (!master) throw new Error(`Cluster isn't ready: no known master serves slot ${slot}`);
  return master;
}

/**
 * Every key matching `pattern`, in batches (SCAN on each server that holds keys). Keys written
 * while it runs may or may not be seen, as SCAN promises.
 */
export async function* scanKeys(
  client: RedisClient,
  pattern: string,
  count = 1000,
): AsyncGenerator<string[]> {
  for (const node of keyHoldingNodes(client)) {
    let cursor = '0';
    do {
      const [next, found] = await node.scan(cursor, 'MATCH', pattern, 'COUNT', count);
      if (found.length) yield found;
      cursor = next;
    } while (cursor !== '0');
  }
}

/**
 * True when Redis refused the connection's credentials: no password sent to a server that wants
 * one (NOAUTH), or a wrong one (WRONGPASS). On a cluster, the error of the last node tried.
 */
export function isRedisAuthError(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  if (/\b(NOAUTH|WRONGPASS)\b|invalid password/.test(error.message)) return true;
  const lastNodeError = (error as Error & { lastNodeError?: unknown }).lastNodeError;
  return lastNodeError !== undefined && lastNodeError !== error && isRedisAuthError(lastNodeError);
}

/**
 * Resolves once Redis answers, retrying with the connection's own backoff. Start-up waits here
 * instead of crashing, so a process started before Redis simply becomes ready after it. A Redis
 * that answers but refuses the credentials is a setting to fix, not an outage to wait out: that
 * rejects with a ConfigError (the process exits 78 with one line, as for a bad variable).
 */
export async function waitForRedis(redis: RedisClient, logger: Logger): Promise<void> {
  let delayMs = 100;
  // ioredis reports the refusal as a connection error; commands then fail as "not writeable".
  let refusal: Error | undefined;
  const onError = (error: Error) => {
    if (isRedisAuthError(error)) refusal = error;
  };
  redis.on('error', onError);
  try {
    for (;;) {
      try {
        await redis.ping();
        return;
      } catch (error) {
        const refused = isRedisAuthError(error) ? (error as Error) : refusal;
        if (refused) {
          throw new ConfigError(
            `Redis refused the credentials (${authErrorText(refused)}): set REDIS_PASSWORD, or the password in REDIS_URL (redis://:<password>@host:6379)`,
          );
        }
        logger.debug('waiting for redis', { retryInMs: delayMs });
        await new Promise((resolve) => setTimeout(resolve, delayMs));
        delayMs = Math.min(delayMs * 2, MAX_RECONNECT_DELAY_MS);
      }
    }
  } finally {
    redis.off('error', onError);
  }
}

/** Redis's own words for the refusal (`NOAUTH Authentication required.`), never a password. */
function authErrorText(error: Error): string {
  const lastNodeError = (error as Error & { lastNodeError?: unknown }).lastNodeError;
  const own = /\b(NOAUTH|WRONGPASS)\b.*$/.exec(error.message)?.[0];
  if (own) return own;
  return lastNodeError instanceof Error && lastNodeError !== error ? authErrorText(lastNodeError) : 'NOAUTH';
}

/**
 * True when Redis refused a write for want of memory (`maxmemory` reached under `noeviction`,
 * which the service requires). Reads still work; writes fail until memory is freed or the limit
 * raised. A MULTI whose queued command was refused fails as a whole with EXECABORT.
 */
export function isRedisOutOfMemory(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  if (/\bOOM command not allowed\b/.test(error.message)) return true;
  const previousErrors = (error as Error & { previousErrors?: unknown }).previousErrors;
  return Array.isArray(previousErrors) && previousErrors.some((inner) => isRedisOutOfMemory(inner));
}

/**
 * True when an error means "Redis is unreachable right now", which callers answer with a 503.
 * The cluster's own words for it: not ready yet, no node answers, a failover in progress, a slot
 * that moved (MOVED, ASK: a redirect the client did not follow by itself, see slotsRefreshInterval).
 * And rate-limiter-flexible's own refusal (`rejectIfRedisNotReady`).
 */
export function isRedisUnavailable(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  return (
    error.name === 'MaxRetriesPerRequestError' ||
    error.name === 'ClusterAllFailedError' ||
    /Stream isn't writeable|Connection is closed|Command timed out|ECONNREFUSED|ECONNRESET|EPIPE|connect ETIMEDOUT|LOADING|Cluster isn't ready|None of startup nodes is available|Failed to refresh slots cache|CLUSTERDOWN|TRYAGAIN|MASTERDOWN|Too many Cluster redirections|Redis connection is not ready|^(MOVED|ASK) \d+ /.test(
      error.message,
    )
  );
}

/** Closes connections without throwing when one is already gone. */
export async function closeConnections(...connections: RedisClient[]): Promise<void> {
  await Promise.all(
    connections.map(async (connection) => {
      try {
        await connection.quit();
      } catch {
        connection.disconnect();
      }
    }),
  );
}
