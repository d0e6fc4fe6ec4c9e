import { startLocalRedis } from '../../../scripts/lib/redis-server';
import { createLogger } from '../../../shared/logger';
import { closeConnections, createRedisConnection, waitForRedis } from '../../../shared/redis/connections';
import {
  checkRedisMemorySettings,
  RECOMMENDED_REDIS_SERVER_ARGS,
} from '../../../workers/redis-memory-settings';
import { CapturedLogs } from '../../helpers/app-fixture';

/** The warnings a worker logs at start against a server started with `args`. */
async function warningsAgainst(args: string[]): Promise<Record<string, unknown>[]> {
  const server = await startLocalRedis({ extraArgs: args });
  const logs = new CapturedLogs();
  const logger = createLogger({ level: 'info', processRole: 'test', stream: logs.stream });
  const redis = createRedisConnection({ kind: 'standalone', url: server.url }, 'request', logger);
  try {
    await waitForRedis(redis, logger);
    await checkRedisMemorySettings(redis, logger);
    await new Promise((resolve) => setImmediate(resolve));
    return logs.lines.filter((line) => line.level === 'warn');
  } finally {
    await closeConnections(redis);
    logger.close();
    await server.stop();
  }
}

describe('The Redis memory settings a worker checks at start (ADR 0020)', () => {
  it("When the server runs Redis's defaults, then each setting the service is sized for is named in a warning with its recommended value", async () => {
    const warnings = await warningsAgainst([]);
    expect(warnings.map(({ setting, value, recommended }) => ({ setting, value, recommended }))).toEqual([
      { setting: 'stream-node-max-bytes', value: 4096, recommended: 1536 },
      { setting: 'hash-max-listpack-value', value: 64, recommended: 512 },
    ]);
  });

  it('When the server runs the recommended settings, then nothing is warned', async () => {
    expect(await warningsAgainst([...RECOMMENDED_REDIS_SERVER_ARGS])).toEqual([]);
  });

  it('When a stream node is smaller and a hash value limit larger than recommended, then nothing is warned', async () => {
    expect(
      await warningsAgainst(['--stream-node-max-bytes', '1024', '--hash-max-listpack-value', '1024']),
    ).toEqual([]);
  });
});
