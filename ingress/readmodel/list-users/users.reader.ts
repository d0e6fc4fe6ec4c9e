import type { RedisClient } from '../../../shared/redis/connections';
import type { Keys } from '../../../shared/redis/keys';
import { registerScripts } from '../../../shared/redis/scripts';
import { normalizeEmail } from '../../../shared/user/user-id';
import {
  emailPrefixRange,
  listingIndexKey,
  userIdOfMember,
  type UserListingFilter,
} from '../../../shared/user/users-index';
import { LIST_USERS_SCRIPTS } from './list-users.scripts';

/** ListUsers' filters: the index's, and an e-mail prefix. */
export type UserListingQuery = UserListingFilter & { readonly emailPrefix?: string | undefined };

/** A page of accounts: how many match in all, and the page's items as their stored JSON. */
export interface UserListing {
  readonly totalCount: number;
  readonly items: readonly string[];
}

/**
 * Reads the users projection for ListUsers in two round trips whatever the table's size and the
 * page's depth: the count and the page's members of the filter's one sorted set, read by rank in
 * one script (lua/users-page-1.lua, so both see the same moment), then the page's documents (one
 * MGET: every key shares the `{users}` tag). Nothing is parsed: the documents are the answer's items.
 */
export class UsersReader {
  /**
   * Built once, in the composition root, before the connection carries any request: a script
   * defined on a connection later would be missing from an auto-pipeline already open on it.
   */
  constructor(
    private readonly redis: RedisClient,
    private readonly keys: Keys,
  ) {
    registerScripts(redis, LIST_USERS_SCRIPTS);
  }

  async list(query: UserListingQuery, skip: number, take: number): Promise<UserListing> {
    const index = listingIndexKey(this.keys, query);
    // Compared as sign-in compares e-mails (trimmed, lower case), as the index stores them.
    const prefix = query.emailPrefix === undefined ? undefined : normalizeEmail(query.emailPrefix);
    const [min, max] = emailPrefixRange(prefix);
    const [totalCount, members] = await this.redis.usersPage(index, min, max, skip, take);
    if (members.length === 0) return { totalCount, items: [] };
    const documents = await this.redis.mget(
      ...members.map((member) => this.keys.users.user(userIdOfMember(member))),
    );
    // An account deleted between the two reads is left out, not answered null.
    return { totalCount, items: documents.filter((document) => document !== null) };
  }
}
