import type { IndexEntry } from '../../shared/projections/projection';

/** One write of the batch script (see lua/apply-projection-batch-n.lua), its key by position. */
type Write = [op: string, keyIndex: number, ...args: string[]];

/**
 * Collects a batch's writes in the shape the batch script takes: the keys once each (the script
 * must declare every key it touches) and the writes naming them by position.
 */
export class BatchWrites {
  private readonly keyIndex = new Map<string, number>();
  private readonly writes: Write[] = [];

  /**
   * @param checkpointKey always KEYS[1] of the script.
   * @param appliedCountKey always KEYS[2]: the entries applied so far, counted with the checkpoint.
   */
  constructor(checkpointKey: string, appliedCountKey: string) {
    this.keyIndex.set(checkpointKey, 1);
    this.keyIndex.set(appliedCountKey, 2);
  }

  private add(op: string, key: string, ...args: string[]): void {
    let index = this.keyIndex.get(key);
    if (index === undefined) {
      index = this.keyIndex.size + 1;
      this.keyIndex.set(key, index);
    }
    this.writes.push([op, index, ...args]);
  }

  /** The document's new JSON, or its removal (null). */
  document(key: string, json: string | null): void {
    if (json === null) this.add('del', key);
    else this.add('set', key, json);
  }

  /** Removes the entries `before` had and `after` lacks, then writes the new or changed ones. */
  indexes(before: readonly IndexEntry[], after: readonly IndexEntry[]): void {
    const next = new Map(after.map((entry) => [identity(entry), entry]));
    const previous = new Map(before.map((entry) => [identity(entry), entry]));
    for (const [id, entry] of previous) {
      if (next.has(id)) continue;
      if (entry.kind === 'hash') this.add('hdel-if', entry.key, entry.field, entry.value);
      else if (entry.kind === 'zset') this.add('zrem', entry.key, entry.member);
      else this.add('srem', entry.key, entry.member);
    }
    for (const [id, entry] of next) {
      if (sameEntry(previous.get(id), entry)) continue;
      if (entry.kind === 'hash') this.add('hset', entry.key, entry.field, entry.value);
      else if (entry.kind === 'zset') this.add('zadd', entry.key, entry.member, String(entry.score));
      else this.add('sadd', entry.key, entry.member);
    }
  }

  /** `numberOfKeys, ...keys, ...args` for applyProjectionBatch; `entries` is the batch's length. */
  scriptArguments(
    expectedCheckpoint: string,
    nextCheckpoint: string,
    entries: number,
  ): [number, ...string[]] {
    return [
      this.keyIndex.size,
      ...this.keyIndex.keys(),
      expectedCheckpoint,
      nextCheckpoint,
      JSON.stringify(this.writes),
      String(entries),
    ];
  }
}

/** What makes two entries the same slot: a hash field, or a member of a (sorted) set. */
function identity(entry: IndexEntry): string {
  return entry.kind === 'hash'
    ? `h\u0000${entry.key}\u0000${entry.field}`
    : `${entry.kind}\u0000${entry.key}\u0000${entry.member}`;
}

function sameEntry(a: IndexEntry | undefined, b: IndexEntry): boolean {
  if (!a) return false;
  if (a.kind === 'hash' && b.kind === 'hash') return a.value === b.value;
  if (a.kind === 'zset' && b.kind === 'zset') return a.score === b.score;
  return a.kind === b.kind;
}
