import { describeRedisTarget } from '../../shared/redis/connections';

describe('describeRedisTarget (what connection log lines name)', () => {
  it('When REDIS_URL carries credentials, then the description keeps the host and hides them', () => {
    expect(
      describeRedisTarget({ kind: 'standalone', url: 'redis://:s3cret%2Fpw@redis.internal:6379/2' }),
    ).toBe('redis://***@redis.internal:6379/2');
    expect(describeRedisTarget({ kind: 'standalone', url: 'rediss://fts:s3cret@redis.internal:6380' })).toBe(
      'rediss://***@redis.internal:6380',
    );
  });

  it('When the password comes from REDIS_PASSWORD, then it appears nowhere in the description', () => {
    const description = describeRedisTarget({
      kind: 'standalone',
      url: 'redis://redis.internal:6379',
      password: 's3cret',
    });
    expect(description).toBe('redis://redis.internal:6379');
    const cluster = describeRedisTarget({
      kind: 'cluster',
      nodes: [
        { host: '10.0.0.1', port: 7000 },
        { host: '::1', port: 7001 },
      ],
      password: 's3cret',
    });
    expect(cluster).toBe('10.0.0.1:7000,::1:7001');
  });

  it('When REDIS_URL carries options in its query (ioredis reads `?password=` too), then none of them is shown', () => {
    expect(
      describeRedisTarget({ kind: 'standalone', url: 'redis://redis.internal:6379/0?password=s3cret&db=1' }),
    ).toBe('redis://redis.internal:6379/0?***');
  });
});
