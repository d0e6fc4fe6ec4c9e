import type { Logger } from '../logger';
import type { RedisClient } from './connections';

/**
 * The `stream-node-max-bytes` this service is sized for (ADR 0020, docs/capacity.md). Redis gives a
 * stream's newest node min(4096, stream-node-max-bytes) bytes up front, so with the default (4096)
 * every aggregate stream costs 4 KB however few its events; 2048 holds a typical aggregate's first
 * events (five compact envelopes) in one node and halves that floor.
 */
export const RECOMMENDED_STREAM_NODE_MAX_BYTES = 2048;

/**
 * Reads the server's stream-node-max-bytes and warns when it is above the recommendation (it is a
 * server setting: the service never changes it). A server refusing CONFIG (a managed Redis) is
 * noted, not an error.
 */
export async function checkStreamNodeSize(redis: RedisClient, logger: Logger): Promise<void> {
  try {
    const reply = (await redis.config('GET', 'stream-node-max-bytes')) as string[];
    const value = Number(reply[1]);
    if (value === 0 || value > RECOMMENDED_STREAM_NODE_MAX_BYTES) {
      logger.warn('Redis stream-node-max-bytes is above what this service is sized for', {
        streamNodeMaxBytes: value,
        recommended: RECOMMENDED_STREAM_NODE_MAX_BYTES,
        see: 'docs/capacity.md',
      });
    }
  } catch (error) {
    logger.info('Redis stream-node-max-bytes not checked (CONFIG GET refused)', {
      error: error instanceof Error ? error.message : String(error),
      see: 'docs/capacity.md',
    });
  }
}
