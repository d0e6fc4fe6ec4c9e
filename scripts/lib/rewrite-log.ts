import { EVENT_STORE_SCRIPTS } from '../../shared/event-store/event-store.scripts';
import type { RawLogEntry } from '../../shared/event-stream/log-reader';
import type { RedisClient } from '../../shared/redis/connections';
import type { Keys } from '../../shared/redis/keys';
import { registerScripts } from '../../shared/redis/scripts';

/** Entries copied per read, and the most the final atomic step copies by itself. */
const CHUNK = 1_000;

/**
 * Rewrites one partition of the global log with some entries in another form, keeping every entry's
 * id and order, beside live traffic: the partition is copied chunk by chunk into
 * `logPartitionRewrite` (`replace` gives each chunk's entries their new fields, null to keep an
 * entry as it is), then swap-log-partition-2.lua copies what was appended meanwhile and puts the copy in the
 * partition's place in one atomic step. Projectors never see a gap or a repeat: their checkpoints
 * are entry ids. Returns how many entries were replaced. The copy costs the partition's memory once
 * more until the swap.
 */
export async function rewriteLogPartition(
  redis: RedisClient,
  keys: Keys,
  partition: number,
  replace: (entries: readonly RawLogEntry[]) => Promise<readonly (readonly string[] | null)[]>,
): Promise<number> {
  registerScripts(redis, EVENT_STORE_SCRIPTS);
  const log = keys.logPartition(partition);
  const copy = keys.logPartitionRewrite(partition);
  if ((await redis.xlen(log)) === 0) return 0;
  await redis.del(copy);
  let lastCopied = '0-0';
  let replaced = 0;
  for (;;) {
    const from = lastCopied === '0-0' ? '-' : `(${lastCopied}`;
    const entries = (await redis.xrange(log, from, '+', 'COUNT', CHUNK)) as RawLogEntry[];
    if (entries.length > 0) {
      const replacements = await replace(entries);
      // In order: explicit ids must grow. The copy and the partition share a slot (one node).
      const pipeline = redis.pipeline();
      entries.forEach(([id, fields], i) => {
        const replacement = replacements[i];
        if (replacement) replaced += 1;
        pipeline.xadd(copy, id, ...(replacement ?? fields));
      });
      for (const [error] of (await pipeline.exec()) ?? []) if (error) throw error;
      lastCopied = entries.at(-1)?.[0] ?? lastCopied;
    }
    if (entries.length === CHUNK) continue;
    // Caught up: what was appended since is copied, as it is, with the swap; unless it is too much.
    if ((await redis.swapLogPartition(log, copy, lastCopied, CHUNK)) >= 0) return replaced;
  }
}
