import { isRedisUnavailable } from '../../shared/redis/connections';

/**
 * What counts as "Redis is unreachable right now" (a 503 with Retry-After, never a 500). A cluster
 * client meets MOVED for several slots of one auto-pipeline in a failover, and does not follow it
 * by itself: that is a slot moving, not a bug.
 */
/** An error as ioredis reports Redis's answer. */
const replyError = (message: string) => Object.assign(new Error(message), { name: 'ReplyError' });

describe('isRedisUnavailable', () => {
  it.each([
    'MOVED 6399 127.0.0.1:46749',
    'ASK 12067 127.0.0.1:44015',
    'CLUSTERDOWN The cluster is down',
    'Connection is closed.',
    'Command timed out',
  ])('When Redis answers "%s", then it is unavailable (a 503)', (message) => {
    expect(isRedisUnavailable(replyError(message))).toBe(true);
  });

  it.each([
    'ERR unknown command',
    'WRONGTYPE Operation against a key holding the wrong kind of value',
    'ERR value mentions MOVED 1 here',
  ])('When Redis answers "%s", then it is not an outage', (message) => {
    expect(isRedisUnavailable(replyError(message))).toBe(false);
  });
});
