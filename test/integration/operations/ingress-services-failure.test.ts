import { createIngressServices } from '../../../ingress/composition-root';
import { loadConfig } from '../../../shared/config';
import { JobDataCipher } from '../../../shared/importers/job-data-cipher';
import { createLogger } from '../../../shared/logger';
import * as connections from '../../../shared/redis/connections';
import { CapturedLogs, testRedisEnv, uniquePrefix } from '../../helpers/app-fixture';
import { eventually } from '../../helpers/processes';

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
    const redis = connections.createRedisConnection(config.redis, 'request', logger);
    await connections.waitForRedis(redis, logger);
    // Every connection the set-up opens (tests share their Redis, so CLIENT LIST cannot tell ours).
    const opened: connections.RedisClient[] = [];
    const { createRedisConnection, duplicateConnection } = connections;
    jest.spyOn(connections, 'createRedisConnection').mockImplementation((...args) => {
      const connection = createRedisConnection(...args);
      opened.push(connection);
      return connection;
    });
    jest.spyOn(connections, 'duplicateConnection').mockImplementation((...args) => {
      const connection = duplicateConnection(...args);
      opened.push(connection);
      return connection;
    });
    // The webhook secrets' cipher is made after the import queue's connection is ready.
    const create = JobDataCipher.create.bind(JobDataCipher);
    jest
      .spyOn(JobDataCipher, 'create')
      .mockImplementation((...args: Parameters<typeof JobDataCipher.create>) =>
        args[3] === 'webhookSecrets' ? Promise.reject(new Error('set-up step failed')) : create(...args),
      );
    try {
      await expect(createIngressServices(config, redis, logger)).rejects.toThrow('set-up step failed');
      // The account cache's subscriber and the import queue's connection, at least.
      expect(opened.length).toBeGreaterThanOrEqual(2);
      // Closed: quit() answered, then the socket's close ends each one a moment later.
      const ended = () => opened.every((connection) => connection.status === 'end');
      await eventually(() => Promise.resolve(ended()), 2_000).catch(() => undefined);
      expect(opened.map((connection) => connection.status)).toEqual(opened.map(() => 'end'));
    } finally {
      await connections.closeConnections(redis, ...opened);
      logger.close();
    }
  });
});
