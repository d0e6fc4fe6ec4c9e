import { Redis, type RedisOptions } from 'ioredis';

import type { Logger } from '../logger';

/**
 * Why a connection exists decides how it behaves while Redis is away:
 * - `request`: serves HTTP requests. No offline queue and a short command timeout, so a request
 *   fails fast with a 503 instead of hanging until Redis returns.
 * - `queue`: handed to BullMQ, which blocks on Redis and must retry forever
 *   (`maxRetriesPerRequest: null` is BullMQ's requirement for workers).
 */
export type ConnectionPurpose = 'request' | 'queue';

const MAX_RECONNECT_DELAY_MS = 2_000;

function optionsFor(purpose: ConnectionPurpose): RedisOptions {
  const common: RedisOptions = {
    // Reconnect forever with a capped backoff: an outage never needs a process restart.
    retryStrategy: (attempt) => Math.min(50 * 2 ** Math.min(attempt, 6), MAX_RECONNECT_DELAY_MS),
    connectTimeout: 2_000,
    lazyConnect: false,
  };
  if (purpose === 'queue') return { ...common, maxRetriesPerRequest: null, enableReadyCheck: false };
  // Auto-pipelining sends the commands of concurrent requests in one socket write: under load the
  // write syscalls, not Redis, were the client's largest cost.
  return {
    ...common,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    commandTimeout: 2_000,
    enableAutoPipelining: true,
  };
}

/** Opens a connection whose state changes are logged once each (not once per retry). */
export function createRedisConnection(
  url: string,
  purpose: ConnectionPurpose,
  logger: Logger,
  name = purpose,
): Redis {
  const redis = new Redis(url, { ...optionsFor(purpose), connectionName: `fts-${name}` });
  // undefined until the first outcome, so a Redis that is down from the start is reported too.
  let healthy: boolean | undefined;
  redis.on('ready', () => {
    if (healthy !== true) logger.info('redis connection ready', { connection: name });
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
 * Resolves once Redis answers, retrying with the connection's own backoff. Start-up waits here
 * instead of crashing, so a process started before Redis simply becomes ready after it.
 */
export async function waitForRedis(redis: Redis, logger: Logger): Promise<void> {
  let delayMs = 100;
  for (;;) {
    try {
      await redis.ping();
      return;
    } catch {
      logger.debug('waiting for redis', { retryInMs: delayMs });
      await new Promise((resolve) => setTimeout(resolve, delayMs));
      delayMs = Math.min(delayMs * 2, MAX_RECONNECT_DELAY_MS);
    }
  }
}

/** True when an error means "Redis is unreachable right now", which callers answer with a 503. */
export function isRedisUnavailable(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  return (
    error.name === 'MaxRetriesPerRequestError' ||
    /Stream isn't writeable|Connection is closed|Command timed out|ECONNREFUSED|ECONNRESET|connect ETIMEDOUT|LOADING/.test(
      error.message,
    )
  );
}

/** Closes connections without throwing when one is already gone. */
export async function closeConnections(...connections: Redis[]): Promise<void> {
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
