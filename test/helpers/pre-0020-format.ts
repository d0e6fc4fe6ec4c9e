import { storedEnvelopes } from '../../shared/event-store/stored-envelope';
import { resolveLogEntries } from '../../shared/event-stream/log-reader';
import { type RedisClient, scanKeys } from '../../shared/redis/connections';
import type { Keys } from '../../shared/redis/keys';
import { LOG_PARTITIONS } from '../../shared/redis/partitions';

/**
 * Rewrites what is stored as the service wrote it before ADR 0020, for the tests of an upgrade in
 * place: every aggregate stream entry as the full envelope (type, id and version in it) and every
 * log entry as a full copy of its event (field `event`), each keeping its entry id. What the
 * current store wrote thus stands for data a deployment kept from an older version.
 */
export async function rewriteInPre0020Format(redis: RedisClient, keys: Keys): Promise<void> {
  // The log first: its references are resolved from the streams as they are now.
  for (let partition = 0; partition < LOG_PARTITIONS; partition++) {
    const log = keys.logPartition(partition);
    const entries = await redis.xrange(log, '-', '+');
    if (entries.length === 0) continue;
    const envelopes = await resolveLogEntries(redis, keys, entries);
    await redis.del(log);
    for (const [index, [id]] of entries.entries()) {
      await redis.xadd(log, id, 'event', JSON.stringify(envelopes[index]));
    }
  }
  for await (const streamKeys of scanKeys(redis, `${keys.prefix}{p*}:stream:*`)) {
    for (const streamKey of streamKeys) {
      const [aggregateType = '', aggregateId = ''] = streamKey.split(':').slice(-2);
      const entries = await redis.xrange(streamKey, '-', '+');
      const envelopes = storedEnvelopes(aggregateType, aggregateId, entries);
      await redis.del(streamKey);
      for (const [index, [id]] of entries.entries()) {
        await redis.xadd(streamKey, id, 'event', JSON.stringify(envelopes[index]));
      }
    }
  }
}
