import { constants } from 'node:os';

import { type LocalRedis, startLocalRedis } from '../../scripts/lib/redis-server';
import { descendantsOf, onRunStopped, signalEach } from '../../scripts/lib/run-stop';

declare global {
  var __TEST_REDIS__: LocalRedis | undefined;
}

/**
 * Starts one private redis-server (no persistence, free loopback port) for the whole run, unless
 * REDIS_TEST_URL points at one already or REDIS_TEST_CLUSTER_NODES at a cluster (`npm run
 * test:cluster`). Tests isolate themselves by key prefix, never by flushing.
 *
 * A run that is stopped (Ctrl-C, SIGTERM, its parent gone) never reaches the global teardown, and
 * jest stops nothing of what its tests started: this process then stops every process below it
 * (that Redis, which runs in its own process group; the workers; the services tests spawned) and
 * exits as the signal would have ended it.
 */
export default async function globalSetup(): Promise<void> {
  onRunStopped((signal) => {
    signalEach(descendantsOf(process.pid), 'SIGTERM');
    process.exit(128 + constants.signals[signal]);
  });
  if (process.env.REDIS_TEST_URL || process.env.REDIS_TEST_CLUSTER_NODES) return;
  const redis = await startLocalRedis();
  globalThis.__TEST_REDIS__ = redis;
  process.env.REDIS_TEST_URL = redis.url;
}
