/**
 * Which (projection, partition) pairs one projector pass reads (ADR 0050). A pass runs its batches
 * side by side and ends with the slowest, and a change announced meanwhile waits for the next: a
 * pass that carried every pair with a backlog (the users projection catching up an import's
 * accounts, or every pair just after a start) held a fresh team change for as long as all of those
 * batches took. So a pass carries every pair announced with nothing waiting before its change (all
 * of them in a full pass), and at most `backlogPairsPerPass` of those with a backlog. Half of those
 * places go to announced pairs (a read may be waiting for their change), the rest to the pairs that
 * waited longest, announced or not: a pair nobody waits for (a projection stepping over an import's
 * accounts) still moves while changes keep being announced elsewhere.
 */

export interface PassState {
  /** The pairs this replica owns, by id. */
  readonly owned: ReadonlySet<string> | ReadonlyMap<string, unknown>;
  /** Pairs that may have more waiting (a full or fenced batch, newly owned), longest waiting first. */
  readonly backlog: ReadonlySet<string>;
  /** Pairs announced changed since the last pass began. */
  readonly announced: ReadonlySet<string>;
  /** Every owned pair is read (an announcement may have been missed). */
  readonly full: boolean;
  readonly backlogPairsPerPass: number;
}

export interface PassChoice {
  /** The pairs to read, in the order they are owned. */
  readonly read: readonly string[];
  /** The backlogged pairs left for a later pass, in the order they waited. */
  readonly deferred: readonly string[];
}

export function choosePass({ owned, backlog, announced, full, backlogPairsPerPass }: PassState): PassChoice {
  // A pair given up since it was backlogged is another replica's now.
  const backlogged = [...backlog].filter((id) => owned.has(id));
  const share = Math.max(1, backlogPairsPerPass);
  const carried = new Set(backlogged.filter((id) => announced.has(id)).slice(0, Math.floor(share / 2)));
  for (const id of backlogged) {
    if (carried.size >= share) break;
    carried.add(id);
  }
  const read = [...owned.keys()].filter((id) =>
    backlog.has(id) ? carried.has(id) : full || announced.has(id),
  );
  return { read, deferred: backlogged.filter((id) => !carried.has(id)) };
}
