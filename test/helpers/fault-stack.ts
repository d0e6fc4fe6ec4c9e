import { createTestApp, type TestApp, uniquePrefix } from './app-fixture';
import { DurableRedis } from './durable-redis';
import {
  type IngressProcess,
  killAll,
  type ServiceProcess,
  startIngressProcess,
  startServiceProcess,
} from './processes';

/**
 * The whole service as a fault test runs it: a Redis of the test's own (AOF, fsync always), an
 * in-process app on it (to prepare accounts and read the write side afterwards), and a real ingress
 * and a real worker process.
 */
export interface FaultStack {
  readonly redis: DurableRedis;
  /** What every part was started with: the Redis, a fresh key prefix and the test's own settings. */
  readonly env: Record<string, string>;
  readonly inspector: TestApp;
  readonly ingress: IngressProcess;
  readonly worker: ServiceProcess;
}

/**
 * Starts fault stacks and tears down whatever was started, also when a start or a test failed half
 * way: call `stop()` in afterEach.
 */
export function faultStacks() {
  let started: Partial<FaultStack> = {};
  return {
    /** `prepare` runs on the inspector before the processes start (accounts they will sign in as). */
    async start(
      settings: Record<string, string>,
      prepare: (inspector: TestApp) => Promise<void> = () => Promise.resolve(),
    ): Promise<FaultStack> {
      const redis = await DurableRedis.start();
      started = { redis };
      const env = { REDIS_URL: redis.url, REDIS_KEY_PREFIX: uniquePrefix(), ...settings };
      const inspector = await createTestApp(env);
      started = { ...started, inspector };
      await prepare(inspector);
      const ingress = await startIngressProcess(env);
      started = { ...started, ingress };
      const worker = startServiceProcess('workers/main.ts', env);
      started = { ...started, worker };
      await worker.waitForOutput('worker ready', 30_000);
      return { redis, env, inspector, ingress, worker };
    },
    async stop(): Promise<void> {
      const { redis, inspector, ingress, worker } = started;
      started = {};
      await killAll(ingress?.process, worker);
      await inspector?.close();
      await redis?.destroy();
    },
  };
}
