import { ImportQueue } from '../../../shared/importers/import-queue';
import { closeConnections, createRedisConnection, waitForRedis } from '../../../shared/redis/connections';
import { createTestApp, type TestApp, testRedisEnv } from '../../helpers/app-fixture';
import { LossyProxy } from '../../helpers/tcp-proxy';

/**
 * BullMQ sets a queue up once, when it is made (it reads the server's INFO), and never again. On a
 * busy machine that INFO once took longer than the ingress's Redis command timeout (2 s): the set-up
 * failed for good, and every import of that ingress answered 503 until it restarted (seen in the
 * GUID property test under load). ImportQueue.ready() makes the queue anew until one is set up; the
 * ingress and the worker wait for it at start. Single server only: the proxy stands before one Redis.
 */
const onOneServer = testRedisEnv().REDIS_URL !== '' ? describe : describe.skip;

onOneServer('Setting the import queue up', () => {
  let subject: TestApp;
  let proxy: LossyProxy;

  beforeAll(async () => {
    subject = await createTestApp();
    proxy = await LossyProxy.start(testRedisEnv().REDIS_URL);
  });

  /** A connection as the ingress gives its queue (a request connection of its own), once ready. */
  const queueConnectionTo = async (url: string) => {
    const connection = createRedisConnection(
      { kind: 'standalone', url },
      'request',
      subject.logger,
      'import-queue',
    );
    await waitForRedis(connection, subject.logger);
    return connection;
  };

  afterAll(async () => {
    await proxy.close();
    await subject.close();
  });

  it("When BullMQ's set-up outlasts the connection's command timeout, then ready() sets the queue up again and it answers", async () => {
    const connection = await queueConnectionTo(proxy.url);
    proxy.holdReplies();
    const queue = new ImportQueue(
      connection,
      subject.redis,
      subject.services.keys,
      subject.config,
      subject.logger,
      undefined,
      true,
    );
    try {
      // The condition, not a clock: BullMQ's own set-up has failed, with the 503's error.
      await expect(queue.queue.waitUntilReady()).rejects.toThrow('Command timed out');
      proxy.releaseReplies();
      await queue.ready();
      const depth = await queue.depth();
      expect(depth.find(({ state }) => state === 'waiting')).toEqual({ state: 'waiting', jobs: 0 });
      expect(subject.logs.text).toContain('import queue set-up failed with redis');
    } finally {
      proxy.releaseReplies();
      await queue.close();
      await closeConnections(connection);
    }
  });

  it('When its connection was closed for good (the process stops), then ready() fails at once instead of setting up again', async () => {
    const connection = await queueConnectionTo(testRedisEnv().REDIS_URL);
    await closeConnections(connection);
    const queue = new ImportQueue(
      connection,
      subject.redis,
      subject.services.keys,
      subject.config,
      subject.logger,
    );
    try {
      await expect(queue.ready()).rejects.toThrow();
    } finally {
      await queue.close();
    }
  });
});
