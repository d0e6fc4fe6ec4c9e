import type { RedisClient } from '../../../shared/redis/connections';
import type { Keys } from '../../../shared/redis/keys';
import { LOG_PARTITIONS } from '../../../shared/redis/partitions';
import { registerScripts } from '../../../shared/redis/scripts';
import { normalizeEmail } from '../../../shared/user/user-id';
import {
  afterEmailBound,
  emailPrefixRange,
  higherLowerBound,
  listingIndexKey,
  userIdOfMember,
  type UserListingFilter,
  utf8Order,
} from '../../../shared/user/users-index';
import { LIST_USERS_SCRIPTS } from './list-users.scripts';

/** ListUsers' filters: the index's, and an e-mail prefix. */
export type UserListingQuery = UserListingFilter & { readonly emailPrefix?: string | undefined };

/** Which page: `skip` matches passed over (after the `after` e-mail when given), at most `take`. */
export interface UserListingPage {
  readonly skip: number;
  readonly take: number;
  /** Only accounts whose e-mail sorts after this one (the last of the previous page). */
  readonly after?: string | undefined;
}

/** A page of accounts: how many match in all, and the page's items as their stored JSON. */
export interface UserListing {
  readonly totalCount: number;
  readonly items: readonly string[];
}

const PARTITIONS = Array.from({ length: LOG_PARTITIONS }, (_, partition) => partition);

/**
 * Up to this `skip`, each partition answers the first `skip + take` members of the page's range
 * with its counts (one round trip); deeper, where the page starts is searched for first, so a
 * partition sends about `take` members, not `skip + take`.
 */
export const SHALLOW_SKIP = 1000;

/**
 * How many members each partition reads first when a merge needs `need`: the mean share and six
 * standard deviations more (accounts spread over the partitions by a hash of their id), so a
 * second read is rarely needed; every member when few are needed.
 */
function headLength(need: number): number {
  const share = need / LOG_PARTITIONS;
  return Math.min(need, Math.ceil(share + 6 * Math.sqrt(share)) + 8);
}

/** What tests change to exercise every path of the reader; the defaults serve. */
export interface ReaderTuning {
  /** Up to which `skip` a page is read shallow (0: every page past the first is deep). */
  readonly shallowSkip?: number;
  /** How many members each partition reads first when the merge needs `need`. */
  readonly headLength?: (need: number) => number;
}

/** An index member and the partition whose index answered it. */
interface Found {
  readonly member: string;
  readonly partition: number;
}

/**
 * Reads the users projection for ListUsers. Each of the 16 partitions holds its accounts' documents
 * and e-mail indexes (ADR 0032); a page is the merge, by e-mail in the byte order Redis keeps, of
 * the partitions' ranges. A shallow page is two round trips: every partition's counts and the first
 * `skip + take` members of its range (one script each, so both see the same moment), then the
 * page's documents (one MGET per partition). A deep page finds where it starts first (below), so
 * it costs three more round trips but no walk over what it skips. Nothing is parsed: the documents
 * are the answer's items. Partitions are read apart, so a page read during a batch may show a
 * change in one partition before another's, as a page read a moment later would.
 */
export class UsersReader {
  /**
   * Built once, in the composition root, before the connection carries any request: a script
   * defined on a connection later would be missing from an auto-pipeline already open on it.
   */
  private readonly shallowSkip: number;
  private readonly headLength: (need: number) => number;

  constructor(
    private readonly redis: RedisClient,
    private readonly keys: Keys,
    tuning: ReaderTuning = {},
  ) {
    registerScripts(redis, LIST_USERS_SCRIPTS);
    this.shallowSkip = tuning.shallowSkip ?? SHALLOW_SKIP;
    this.headLength = tuning.headLength ?? headLength;
  }

  async list(query: UserListingQuery, page: UserListingPage): Promise<UserListing> {
    const { skip, take } = page;
    const indexes = PARTITIONS.map((partition) => listingIndexKey(this.keys, query, partition));
    // Compared as sign-in compares e-mails (trimmed, lower case), as the index stores them.
    const prefix = query.emailPrefix === undefined ? undefined : normalizeEmail(query.emailPrefix);
    const [min, max] = emailPrefixRange(prefix);
    const pageMin =
      page.after === undefined ? min : higherLowerBound(min, afterEmailBound(normalizeEmail(page.after)));
    const shallow = skip <= this.shallowSkip;
    const head = shallow ? this.headLength(skip + take) : 0;
    const ranges = await Promise.all(
      indexes.map((index) => this.redis.usersRange(index, min, max, pageMin, head)),
    );
    const totalCount = ranges.reduce((sum, [matches]) => sum + matches, 0);
    const inPage = ranges.reduce((sum, [, members]) => sum + members, 0);
    if (skip >= inPage) return { totalCount, items: [] };
    const { runs, passOver } = shallow
      ? {
          runs: await this.completed(
            indexes,
            max,
            ranges.map(([, inRange, , members]) => ({ members, more: inRange > members.length })),
            skip + take,
          ),
          passOver: skip,
        }
      : await this.deepRuns(indexes, pageMin, max, skip, take, ranges);
    const found = mergeRuns(runs, passOver, take);
    return { totalCount, items: await this.documentsOf(found) };
  }

  /**
   * Each partition's run, long enough that the merge's first `need` members are right: a run read
   * short (`more`) may hide members below another run's last, so while fewer than `need` members
   * lie at or below the least last member of the short runs, the short runs read on, each to
   * `need` (one more round trip; the head is sized so that this is rare).
   */
  private async completed(
    indexes: readonly string[],
    max: string | Buffer,
    read: readonly { readonly members: string[]; readonly more: boolean }[],
    need: number,
  ): Promise<string[][]> {
    const runs = read.map(({ members }) => members);
    let bound: string | undefined;
    for (const { members, more } of read) {
      const last = members.at(-1);
      if (more && last !== undefined && (bound === undefined || byteOrder(last, bound) < 0)) bound = last;
    }
    if (bound === undefined) return runs;
    const limit = bound;
    const sure = runs.reduce(
      (sum, members) => sum + members.filter((member) => byteOrder(member, limit) <= 0).length,
      0,
    );
    if (sure >= need) return runs;
    return Promise.all(
      read.map(async ({ members, more }, partition) => {
        const last = members.at(-1);
        if (!more || last === undefined || members.length >= need) return members;
        const rest = await this.redis.zrangebylex(
          indexes[partition] ?? '',
          `(${last}`,
          max,
          'LIMIT',
          0,
          need - members.length,
        );
        return [...members, ...rest];
      }),
    );
  }

  /**
   * Where a deep page starts: in each partition, the member its share of the page range puts a few
   * standard deviations before the page's start (accounts spread evenly over the partitions, so
   * such a member lies a little before the page's start in the whole); of these, the highest and
   * the lowest are counted in every partition (one script each), and the higher of them not past
   * `skip` is the pivot. Every partition then reads on from the pivot (completed()).
   */
  private async deepRuns(
    indexes: readonly string[],
    pageMin: string,
    max: string | Buffer,
    skip: number,
    take: number,
    ranges: readonly (readonly [number, number, number, string[]])[],
  ): Promise<{ runs: string[][]; passOver: number }> {
    const inPage = ranges.reduce((sum, [, members]) => sum + members, 0);
    const picks = await Promise.all(
      ranges.map(async ([, members, first], partition) => {
        if (members === 0) return [];
        const share = Math.floor((skip * members) / inPage);
        const rank = first + Math.max(0, share - Math.ceil(4 * Math.sqrt(share)) - 1);
        return this.redis.zrange(indexes[partition] ?? '', rank, rank);
      }),
    );
    const sorted = picks.flat().sort(byteOrder);
    const candidates = [...new Set([sorted.at(-1), sorted[0]])].filter(
      (candidate): candidate is string => candidate !== undefined,
    );
    const below = await Promise.all(
      indexes.map((index) => this.redis.usersRanks(index, pageMin, ...candidates)),
    );
    let pivot: string | undefined;
    let passed = 0;
    candidates.forEach((candidate, i) => {
      const rank = below.reduce((sum, counts) => sum + (counts[i] ?? 0), 0);
      if (rank <= skip && (pivot === undefined || rank > passed)) [pivot, passed] = [candidate, rank];
    });
    // Neither lies before the page's start (most unlikely): read from the range's start.
    const from = pivot === undefined ? pageMin : `[${pivot}`;
    const need = skip - passed + take;
    const head = this.headLength(need);
    const read = await Promise.all(
      indexes.map(async (index) => {
        const members = await this.redis.zrangebylex(index, from, max, 'LIMIT', 0, head);
        return { members, more: members.length === head };
      }),
    );
    return { runs: await this.completed(indexes, max, read, need), passOver: skip - passed };
  }

  /** The page's documents, in its order: one MGET per partition (each in its partition's slot). */
  private async documentsOf(found: readonly Found[]): Promise<string[]> {
    const byPartition = new Map<number, string[]>();
    for (const { member, partition } of found) {
      const keys = byPartition.get(partition) ?? [];
      keys.push(this.keys.users.user(userIdOfMember(member)));
      byPartition.set(partition, keys);
    }
    const read = new Map<number, (string | null)[]>();
    await Promise.all(
      [...byPartition].map(async ([partition, keys]) => {
        read.set(partition, await this.redis.mget(...keys));
      }),
    );
    const next = new Map<number, number>();
    const items: string[] = [];
    for (const { partition } of found) {
      const i = next.get(partition) ?? 0;
      next.set(partition, i + 1);
      const document = read.get(partition)?.[i];
      // An account deleted between the two reads is left out, not answered null.
      if (document !== null && document !== undefined) items.push(document);
    }
    return items;
  }
}

/**
 * The members at positions `passOver` to `passOver + take - 1` of the merge of `runs` (each in
 * byte order, one per partition), with the partition each came from: a heap of the runs by their
 * next member. A member is in one partition only (it ends with its account's id), so the merge
 * holds no duplicate.
 */
export function mergeRuns(runs: readonly (readonly string[])[], passOver: number, take: number): Found[] {
  const next = runs.map(() => 0);
  const head = (partition: number) => runs[partition]?.[next[partition] ?? 0];
  const before = (a: number, b: number) => byteOrder(head(a) ?? '', head(b) ?? '') < 0;
  const heap: number[] = [];
  const swap = (i: number, j: number) => {
    [heap[i], heap[j]] = [heap[j] ?? 0, heap[i] ?? 0];
  };
  const down = (from: number) => {
    for (let i = from; ;) {
      const [left, right] = [2 * i + 1, 2 * i + 2];
      let least = i;
      if (left < heap.length && before(heap[left] ?? 0, heap[least] ?? 0)) least = left;
      if (right < heap.length && before(heap[right] ?? 0, heap[least] ?? 0)) least = right;
      if (least === i) return;
      swap(i, least);
      i = least;
    }
  };
  runs.forEach((run, partition) => {
    if (run.length > 0) heap.push(partition);
  });
  for (let i = Math.floor(heap.length / 2) - 1; i >= 0; i--) down(i);
  const page: Found[] = [];
  for (let position = 0; position < passOver + take && heap.length > 0; position++) {
    const partition = heap[0] ?? 0;
    const member = head(partition) ?? '';
    next[partition] = (next[partition] ?? 0) + 1;
    if (head(partition) === undefined) {
      heap[0] = heap[heap.length - 1] ?? 0;
      heap.pop();
    }
    down(0);
    if (position >= passOver) page.push({ member, partition });
  }
  return page;
}

/** Where JavaScript's order of two strings may differ from their UTF-8 bytes' (utf8Order). */
const BEYOND_SURROGATES = /[\ud800-\uffff]/;

/** utf8Order, by JavaScript's own comparison where it agrees (the strings have no such character). */
function byteOrder(a: string, b: string): number {
  if (BEYOND_SURROGATES.test(a) || BEYOND_SURROGATES.test(b)) return utf8Order(a, b);
  return a < b ? -1 : a > b ? 1 : 0;
}
