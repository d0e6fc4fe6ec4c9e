import { randomUUID } from 'node:crypto';
import { PassThrough } from 'node:stream';
import type { Express } from 'express';
import type { Redis } from 'ioredis';

import { buildApp, type BuildAppOptions } from '../../ingress/app';
import { createIngressServices, type IngressServices } from '../../ingress/services';
import { SYSTEM_ACTOR } from '../../shared/accounts/account';
import type { NewUser } from '../../shared/accounts/account.service';
import { loadConfig, type Config } from '../../shared/config';
import { createLogger, type Logger } from '../../shared/logger';
import { closeConnections, createRedisConnection, waitForRedis } from '../../shared/redis/connections';

export function testRedisUrl(): string {
  const url = process.env.REDIS_TEST_URL;
  if (!url) throw new Error('REDIS_TEST_URL is not set: run tests through jest (global setup starts Redis)');
  return url;
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
  readonly redis: Redis;
  readonly logger: Logger;
  readonly logs: CapturedLogs;
  readonly services: IngressServices;
  /** Creates an account directly (as the system), returning its id. */
  createUser(user: Partial<NewUser> & { email: string; password?: string }): Promise<string>;
  close(): Promise<void>;
}

/** Builds the real app against the test Redis with a fresh key prefix and captured logs. */
export async function createTestApp(
  env: Record<string, string> = {},
  options: BuildAppOptions = {},
): Promise<TestApp> {
  const config = loadConfig({
    NODE_ENV: 'test',
    REDIS_URL: testRedisUrl(),
    REDIS_KEY_PREFIX: uniquePrefix(),
    LOG_LEVEL: 'info',
    ...env,
  });
  const logs = new CapturedLogs();
  const logger = createLogger({ level: config.logLevel, processRole: 'test', stream: logs.stream });
  const redis = createRedisConnection(config.redisUrl, 'request', logger);
  await waitForRedis(redis, logger);
  const services = await createIngressServices(config, redis, logger);
  const app = buildApp({ config, logger, redis, services }, options);
  return {
    app,
    config,
    redis,
    logger,
    logs,
    services,
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
