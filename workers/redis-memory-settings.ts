import type { Logger } from '../shared/logger';
import type { RedisMemorySample } from '../shared/metrics/metrics';
import { keyHoldingNodes, type RedisClient } from '../shared/redis/connections';

/**
 * The Redis server settings this service is sized for (ADR 0020, docs/capacity.md). They are server
 * settings: the service never changes them (a managed Redis may not allow CONFIG SET); a worker
 * checks them at start and says which differ.
 */
export const RECOMMENDED_REDIS_MEMORY_SETTINGS = [
  {
    /**
     * Redis gives a stream's newest node min(4096, stream-node-max-bytes) bytes up front, and every
     * aggregate has a stream, so the default costs each a full node however few its events; 1536
     * still holds a team's first events in one node (ADR 0020 §3b).
     */
    name: 'stream-node-max-bytes',
    value: 1536,
    /** 0 means no limit (4096 up front). */
    fits: (actual: number) => actual > 0 && actual <= 1536,
  },
  {
    /**
     * An aggregate record's folded state is longer than Redis's default 64 bytes, which turns the
     * small hash into a larger dictionary of separately allocated fields; 512 keeps a record without
     * a roster one listpack (ADR 0020 §4b).
     */
    name: 'hash-max-listpack-value',
    value: 512,
    fits: (actual: number) => actual >= 512,
  },
] as const;

/** The redis-server arguments that apply them (docker-compose.yml spells the same). */
export const RECOMMENDED_REDIS_SERVER_ARGS: readonly string[] = RECOMMENDED_REDIS_MEMORY_SETTINGS.flatMap(
  ({ name, value }) => [`--${name}`, String(value)],
);

/** The warning a worker logs at start for each memory setting that differs. */
export const MEMORY_SETTING_WARNING = 'A Redis memory setting is not what this service is sized for';

/**
 * Reads the server's memory settings and warns about each that differs from the recommendation.
 * A server refusing CONFIG (a managed Redis) is noted, not an error.
 */
export async function checkRedisMemorySettings(redis: RedisClient, logger: Logger): Promise<void> {
  for (const setting of RECOMMENDED_REDIS_MEMORY_SETTINGS) {
    try {
      const reply = (await redis.config('GET', setting.name)) as string[];
      const value = Number(reply[1]);
      if (!setting.fits(value)) {
        logger.warn(MEMORY_SETTING_WARNING, {
          setting: setting.name,
          value,
          recommended: setting.value,
          see: 'docs/capacity.md',
        });
      }
    } catch (error) {
      logger.info('Redis memory setting not checked (CONFIG GET refused)', {
        setting: setting.name,
        error: error instanceof Error ? error.message : String(error),
        see: 'docs/capacity.md',
      });
    }
  }
}

/** A field of an INFO section (`used_memory:123`), as a number; 0 when absent. */
function infoNumber(info: string, field: string): number {
  const match = new RegExp(`^${field}:(\\d+)`, 'm').exec(info);
  return match ? Number(match[1]) : 0;
}

/**
 * Every server's memory use and limit (each master of a cluster: they fill separately), for the
 * `fts_redis_memory_*` gauges and the alert on memory near maxmemory. INFO memory works on a managed
 * Redis that refuses CONFIG.
 */
export async function readRedisMemory(redis: RedisClient): Promise<RedisMemorySample[]> {
  return Promise.all(
    keyHoldingNodes(redis).map(async (node) => {
      const info = await node.info('memory');
      return {
        node: `${node.options.host ?? 'localhost'}:${node.options.port ?? 6379}`,
        usedBytes: infoNumber(info, 'used_memory'),
        maxBytes: infoNumber(info, 'maxmemory'),
      };
    }),
  );
}
