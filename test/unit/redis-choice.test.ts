import { chooseRedis, redisChoiceLine } from '../../scripts/lib/redis-choice';

const DATA_DIR = '/srv/app/var/redis';

describe('chooseRedis: the Redis `npm start` uses', () => {
  it('When no Redis setting is given, then it starts a private redis-server in its data folder (never one found on 6379)', () => {
    expect(chooseRedis({}, DATA_DIR)).toEqual({ kind: 'private', dataDir: DATA_DIR });
  });

  it('When the settings are empty, then they count as unset and it starts a private redis-server', () => {
    expect(chooseRedis({ REDIS_URL: '', REDIS_CLUSTER_NODES: '' }, DATA_DIR)).toEqual({
      kind: 'private',
      dataDir: DATA_DIR,
    });
  });

  it('When REDIS_URL names the Redis on 127.0.0.1:6379, then that Redis is used', () => {
    expect(chooseRedis({ REDIS_URL: 'redis://127.0.0.1:6379' }, DATA_DIR)).toEqual({
      kind: 'url',
      url: 'redis://127.0.0.1:6379',
    });
  });

  it('When REDIS_CLUSTER_NODES is set, then the cluster is used, even beside REDIS_URL', () => {
    expect(
      chooseRedis(
        { REDIS_CLUSTER_NODES: '10.0.0.1:6379,10.0.0.2:6379', REDIS_URL: 'redis://x:6379' },
        DATA_DIR,
      ),
    ).toEqual({ kind: 'cluster', nodes: '10.0.0.1:6379,10.0.0.2:6379' });
  });
});

describe('redisChoiceLine: the line that says which Redis', () => {
  it('When a private redis-server was started, then the line gives its address, pid and data folder', () => {
    expect(
      redisChoiceLine({ kind: 'private', dataDir: DATA_DIR }, { url: 'redis://127.0.0.1:41234', pid: 4242 }),
    ).toBe(
      `[start] Redis: a private redis-server at redis://127.0.0.1:41234, pid 4242, data in ${DATA_DIR} (set REDIS_URL to use another)`,
    );
  });

  it('When REDIS_URL carries a password, then the line names the Redis without it', () => {
    const line = redisChoiceLine({ kind: 'url', url: 'redis://:s3cret@redis.internal:6379' });
    expect(line).toBe('[start] Redis: redis://***@redis.internal:6379 (REDIS_URL)');
  });

  it('When a cluster is used, then the line lists its nodes', () => {
    expect(redisChoiceLine({ kind: 'cluster', nodes: '10.0.0.1:7000,10.0.0.2:7000' })).toBe(
      '[start] Redis: the cluster at 10.0.0.1:7000,10.0.0.2:7000 (REDIS_CLUSTER_NODES)',
    );
  });
});
