/**
 * The request connection never re-sends a command that was sent but not answered
 * when its link dropped (a re-sent append would be refused by its own events' fence and reported as
 * "nothing written"). On one server that is ioredis's autoResendUnfulfilledCommands; on a cluster,
 * the nodes' own, and the cluster re-sends a closed pipeline only when all of it is read-only
 * (ioredis Pipeline), which an auto-pipelined append never is.
 * test/faults/command-outcome-unknown.test.ts shows the effect through HTTP on one server.
 */
import type { Cluster, Redis } from 'ioredis';

import { createLogger } from '../../shared/logger';
import {
  closeConnections,
  type ConnectionPurpose,
  createRedisConnection,
} from '../../shared/redis/connections';

const logger = createLogger({ level: 'error', processRole: 'test', silent: true });
/** Nothing listens there: the connections are only looked at, then closed. */
const nowhere = { host: '127.0.0.1', port: 1 };

function standalone(purpose: ConnectionPurpose): Redis {
  return createRedisConnection(
    { kind: 'standalone', url: `redis://${nowhere.host}:${nowhere.port}` },
    purpose,
    logger,
  ) as Redis;
}

function cluster(purpose: ConnectionPurpose): Cluster {
  return createRedisConnection({ kind: 'cluster', nodes: [nowhere] }, purpose, logger) as Cluster;
}

describe('The request connection after a reconnect', () => {
  it('When the request connection to one server reconnects, then it does not re-send unanswered commands; the queue connection (BullMQ) still does', async () => {
    const request = standalone('request');
    const queue = standalone('queue');
    try {
      expect(request.options.autoResendUnfulfilledCommands).toBe(false);
      expect(queue.options.autoResendUnfulfilledCommands).toBe(true);
    } finally {
      await closeConnections(request, queue);
    }
  });

  it('When a node connection of the request cluster connection closes, then the node does not re-send its unanswered commands, and writes are auto-pipelined (a cluster re-sends a closed pipeline only when all of it is read-only)', async () => {
    const request = cluster('request');
    try {
      expect(request.options.redisOptions?.autoResendUnfulfilledCommands).toBe(false);
      expect(request.options.enableAutoPipelining).toBe(true);
      expect(request.options.autoPipeliningIgnoredCommands ?? []).not.toContain('evalsha');
    } finally {
      await closeConnections(request);
    }
  });
});
