import { normalizeEmail } from '../../../shared/domain/user/user-id';
import {
  emailPrefixRange,
  listingIndexKey,
  userIdOfMember,
  type UserListingFilter,
} from '../../../shared/projections/users/users-index';
import type { RedisClient } from '../../../shared/redis/connections';
import type { Keys } from '../../../shared/redis/keys';

/** ListUsers' filters: the index's, and an e-mail prefix. */
export type UserListingQuery = UserListingFilter & { readonly emailPrefix?: string | undefined };

/** A page of accounts: how many match in all, and the page's items as their stored JSON. */
export interface UserListing {
  readonly totalCount: number;
  readonly items: readonly string[];
}

/**
 * Reads the users projection for ListUsers in two round trips whatever the table's size: the
 * count and the page's members of the filter's one sorted set (ZLEXCOUNT and ZRANGEBYLEX with
 * LIMIT, in one MULTI so both see the same moment), then the page's documents (one MGET: every key
 * shares the `{users}` tag). Nothing is parsed: the documents are the answer's items.
 */
export class UsersReader {
  constructor(
    private readonly redis: RedisClient,
    private readonly keys: Keys,
  ) {}

  async list(query: UserListingQuery, skip: number, take: number): Promise<UserListing> {
    const index = listingIndexKey(this.keys, query);
    // Compared as sign-in compares e-mails (trimmed, lower case), as the index stores them.
    const prefix = query.emailPrefix === undefined ? undefined : normalizeEmail(query.emailPrefix);
    const [min, max] = emailPrefixRange(prefix);
    const replies = await this.redis
      .multi()
      .zlexcount(index, min, max)
      .zrangebylex(index, min, max, 'LIMIT', skip, take)
      .exec();
    const [counted, ranged] = replies ?? [];
    if (!counted || !ranged || counted[0] || ranged[0]) {
      throw counted?.[0] ?? ranged?.[0] ?? new Error('ListUsers: the index read was not answered');
    }
    const totalCount = Number(counted[1]);
    const members = ranged[1] as string[];
    if (members.length === 0) return { totalCount, items: [] };
    const documents = await this.redis.mget(
      ...members.map((member) => this.keys.users.user(userIdOfMember(member))),
    );
    // An account deleted between the two reads is left out, not answered null.
    return { totalCount, items: documents.filter((document) => document !== null) };
  }
}
