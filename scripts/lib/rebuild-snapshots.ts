import {
  currentStateVersion,
  type EventStore,
  type SnapshotShape,
  STATE_VERSION_FIELD,
} from '../../shared/event-store/event-store';
import { ScriptFencedError, scriptReply } from '../../shared/redis/script-codes';

/** What a rebuild did for one aggregate type. */
export interface SnapshotRebuild {
  readonly aggregateType: string;
  /** Records seen. */
  readonly scanned: number;
  /** Records whose state was folded again from the stream and written in the current shape. */
  readonly rewritten: number;
}

/**
 * Rewrites every snapshot whose shape version is not the current one (a decider's `stateVersion`
 * was bumped): folds the state again from the aggregate's stream and writes it with the version it
 * was folded at, fenced by the record's version (rewrite-snapshot-1.lua). Runs beside live
 * traffic: an append in between writes its own state in the current shape, and the rewrite
 * refused by the fence looks at the record again. Records already current are left alone, so a
 * second run rewrites nothing.
 */
export async function rebuildSnapshots(store: EventStore): Promise<SnapshotRebuild[]> {
  const rebuilt: SnapshotRebuild[] = [];
  for (const shape of store.snapshotShapes) {
    let scanned = 0;
    let rewritten = 0;
    for await (const ids of store.aggregateIds(shape.aggregateType)) {
      for (const aggregateId of ids) {
        scanned += 1;
        if (await rebuildSnapshot(store, shape, aggregateId)) rewritten += 1;
      }
    }
    rebuilt.push({ aggregateType: shape.aggregateType, scanned, rewritten });
  }
  return rebuilt;
}

/** Rewrites one record's state in the current shape, unless it has it; true when rewritten. */
async function rebuildSnapshot(
  store: EventStore,
  shape: SnapshotShape,
  aggregateId: string,
): Promise<boolean> {
  const current = currentStateVersion(shape);
  const recordKey = store.keys.aggregateRecord(shape.aggregateType, aggregateId);
  for (;;) {
    const stored = await store.redis.hget(recordKey, STATE_VERSION_FIELD);
    if (Number(stored ?? 1) === current) return false;
    const { version, state } = await store.refold(shape.aggregateType, aggregateId, shape);
    try {
      scriptReply(
        'rewriteSnapshot',
        await store.redis.rewriteSnapshot(recordKey, version, JSON.stringify(state), current),
      );
      return true;
    } catch (error) {
      // An append came first, writing its own state: look at the record again.
      if (!(error instanceof ScriptFencedError)) throw error;
    }
  }
}
