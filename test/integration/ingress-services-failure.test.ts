import { createIngressServices } from '../../ingress/composition-root';
import { loadConfig } from '../../shared/config';
import { JobDataCipher } from '../../shared/importers/job-data-cipher';
import { createLogger } from '../../shared/logger';
import { closeConnections, createRedisConnection, waitForRedis } from '../../shared/redis/connections';
import { CapturedLogs, openTestRedis, testRedisEnv, uniquePrefix } from '../helpers/app-fixture';

/** The names of the clients connected to the test Redis (every node's, on a cluster). */
async function connectedClientNames(): Promise<string[]> {
  const logger = createLogger({ level: 'error', processRole: 'test', stream: new CapturedLogs().stream });
  const observer = openTestRedis(logger);
  try {
    await waitForRedis(observer, logger);
    const nodes = 'nodes' in observer ? observer.nodes('master') : [observer];
    const lists = await Promise.all(nodes.map((node) => node.client('LIST') as Promise<string>));
    return lists.flatMap((list) => [...list.matchAll(/\bname=(\S*)/g)].map((match) => match[1] ?? ''));
  } finally {
    await closeConnections(observer);
    logger.close();
  }
}

/**
 * A start that fails part-way must close what it had opened: otherwise the account cache's
 * subscriber and the import queue's connection stay connected, and their reconnect timers keep a
 * process (or a test run) alive that should have ended with the error.
 */
describe('Ingress services that fail to start', () => {
  afterEach(() => jest.restoreAllMocks());

  it('When a set-up step after the import queue connection opened throws, then the error reaches the caller and the connections it opened are closed', async () => {
    const config = loadConfig({ NODE_ENV: 'test', ...testRedisEnv(), REDIS_KEY_PREFIX: uniquePrefix() });
    const logs = new CapturedLogs();
    const logger = createLogger({ level: 'info', processRole: 'test', stream: logs.stream });
    const redis = createRedisConnection(config.redis, 'request', logger);
    await waitForRedis(redis, logger);
    // The webhook secrets' cipher is made after the import queue's connection is ready.
    const create = JobDataCipher.create.bind(JobDataCipher);
    jest
      .spyOn(JobDataCipher, 'create')
      .mockImplementation((...args: Parameters<typeof JobDataCipher.create>) =>
        args[3] === 'webhookSecrets' ? Promise.reject(new Error('set-up step failed')) : create(...args),
      );
    try {
      await expect(createIngressServices(config, redis, logger)).rejects.toThrow('set-up step failed');
      const names = await connectedClientNames();
      expect(names).not.toContain('fts-import-queue');
      expect(names).not.toContain('fts-account-cache');
    } finally {
      await closeConnections(redis);
      logger.close();
    }
  });
});
