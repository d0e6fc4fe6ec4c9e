import { randomUUID } from 'node:crypto';
import { PassThrough } from 'node:stream';

import type { Express } from 'express';

import { buildApp, type BuildAppOptions } from '../../ingress/app';
import { createIngressServices, type IngressServices } from '../../ingress/composition-root';
import { SYSTEM_ACTOR } from '../../shared/accounts/account';
import type { NewUser } from '../../shared/accounts/account.service';
import { type Config, loadConfig } from '../../shared/config';
import type { CommandHandlerHooks } from '../../shared/event-store/handle-command';
import { createLogger, type Logger } from '../../shared/logger';
import { Metrics } from '../../shared/metrics/metrics';
import {
  closeConnections,
  type ConnectionPurpose,
  createRedisConnection,
  type RedisClient,
  waitForRedis,
} from '../../shared/redis/connections';
import { responseContract } from './openapi-contract';
import { seedTestUserIdKey } from './user-ids';

/**
 * True when the suite runs on a Redis Cluster (`npm run test:cluster` sets REDIS_TEST_CLUSTER_NODES
 * to its nodes), false on the one redis-server of jest's global setup (REDIS_TEST_URL).
 */
export function onTestCluster(): boolean {
  return Boolean(process.env.REDIS_TEST_CLUSTER_NODES);
}

/**
 * The test run's Redis as the service's environment: what loadConfig and spawned service
 * processes read. The other variable is blanked (empty means unset), so a REDIS_CLUSTER_NODES or
 * REDIS_URL of the caller's shell can never point a test at another Redis.
 */
export function testRedisEnv(): Record<'REDIS_URL' | 'REDIS_CLUSTER_NODES', string> {
  const clusterNodes = process.env.REDIS_TEST_CLUSTER_NODES;
  if (clusterNodes) return { REDIS_CLUSTER_NODES: clusterNodes, REDIS_URL: '' };
  const url = process.env.REDIS_TEST_URL;
  if (!url) throw new Error('REDIS_TEST_URL is not set: run tests through jest (global setup starts Redis)');
  return { REDIS_URL: url, REDIS_CLUSTER_NODES: '' };
}

/**
 * A connection of a test's own to the test run's Redis (a cluster client on a cluster run). The
 * only way tests open one: close it with closeConnections().
 */
export function openTestRedis(logger: Logger, purpose: ConnectionPurpose = 'request'): RedisClient {
  return createRedisConnection(loadConfig(testRedisEnv()).redis, purpose, logger);
}

/** A key prefix no other test uses, so tests share one Redis without seeing each other's data. */
export function uniquePrefix(): string {
  return `test:${randomUUID().slice(0, 8)}:`;
}

/** Log lines written by the app under test, parsed, so a test can assert on them. */
export class CapturedLogs {
  readonly stream = new PassThrough();
  private buffer = '';
  readonly lines: Record<string, unknown>[] = [];

  constructor() {
    this.stream.on('data', (chunk: Buffer) => {
      this.buffer += chunk.toString();
      let newline: number;
      while ((newline = this.buffer.indexOf('\n')) >= 0) {
        const line = this.buffer.slice(0, newline);
        this.buffer = this.buffer.slice(newline + 1);
        if (line.trim()) this.lines.push(JSON.parse(line) as Record<string, unknown>);
      }
    });
  }

  get text(): string {
    return this.lines.map((line) => JSON.stringify(line)).join('\n');
  }
}

export interface TestApp {
  readonly app: Express;
  readonly config: Config;
  readonly redis: RedisClient;
  readonly logger: Logger;
  readonly logs: CapturedLogs;
  readonly services: IngressServices;
  /** The app's own registry, as the ingress process has one. */
  readonly metrics: Metrics;
  /** Creates an account directly (as the system), returning its id. */
  createUser(user: Partial<NewUser> & { email: string; password?: string }): Promise<string>;
  close(): Promise<void>;
}

/**
 * Builds the real app against the test Redis with a fresh key prefix and captured logs; `hooks`
 * reach its command handler (a test pausing a holder, or stopping Redis, at a chosen step).
 */
export async function createTestApp(
  env: Record<string, string> = {},
  options: BuildAppOptions = {},
  hooks: CommandHandlerHooks = {},
): Promise<TestApp> {
  const config = loadConfig(
    {
      NODE_ENV: 'test',
      ...testRedisEnv(),
      REDIS_KEY_PREFIX: uniquePrefix(),
      LOG_LEVEL: 'info',
      ...env,
    },
    'ingress',
  );
  const logs = new CapturedLogs();
  const logger = createLogger({ level: config.logLevel, processRole: 'test', stream: logs.stream });
  const redis = createRedisConnection(config.redis, 'request', logger);
  const metrics = new Metrics(logger);
  metrics.watchConnection('request', redis);
  await waitForRedis(redis, logger);
  await seedTestUserIdKey(redis, config.redisKeyPrefix);
  const services = await createIngressServices(
    config,
    redis,
    logger,
    { ...metrics.commandHandlerHooks(), ...hooks },
    metrics,
  );
  const app = buildApp({ config, logger, redis, services, metrics }, options);
  // A test's own query types answer what the test wants, not what the contract says.
  responseContract().ignoreQueryTypes((options.extraQueries ?? []).map((query) => query.queryType));
  return {
    app,
    config,
    redis,
    logger,
    logs,
    services,
    metrics,
    async createUser(user) {
      const result = await services.accounts.createUser(
        SYSTEM_ACTOR,
        { userType: 'Human', roles: ['Member'], ...user },
        { requestId: null, correlationId: 'test' },
      );
      if (result.status !== 'created') throw new Error(`test user not created: ${result.status}`);
      return result.userId;
    },
    async close() {
      await services.close();
      await closeConnections(redis);
      logger.close();
    },
  };
}
