import { type LocalRedis, startLocalRedis } from '../../scripts/lib/redis-server';

declare global {
  var __TEST_REDIS__: LocalRedis | undefined;
}

/**
 * Starts one private redis-server (no persistence, free loopback port) for the whole run, unless
 * REDIS_TEST_URL points at one already or REDIS_TEST_CLUSTER_NODES at a cluster (`npm run
 * test:cluster`). Tests isolate themselves by key prefix, never by flushing.
 */
export default async function globalSetup(): Promise<void> {
  if (process.env.REDIS_TEST_URL || process.env.REDIS_TEST_CLUSTER_NODES) return;
  const redis = await startLocalRedis();
  globalThis.__TEST_REDIS__ = redis;
  process.env.REDIS_TEST_URL = redis.url;
}
