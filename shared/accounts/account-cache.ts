import { LRUCache } from 'lru-cache';

import { userDecider } from '../domain/user/user.decider';
import type { Logger } from '../logger';
import type { RedisClient } from '../redis/connections';
import type { Keys } from '../redis/keys';
import type { Account } from './account';
import type { AccountService } from './account.service';

const MAX_CACHED_ACCOUNTS = 50_000;

/** Where accounts are read from on a miss: the AccountService. */
export type AccountSource = Pick<AccountService, 'findById'>;

/**
 * Accounts kept in-process, so an authenticated request costs no Redis round trip. Every append to
 * a user's stream publishes its id (append-events-6.lua), and every replica drops that account at
 * once. While the subscription is down nothing is cached, and when it comes back the cache starts
 * empty, so a change can never be missed; the TTL is a last bound on staleness.
 *
 * A read that was under way when a change was announced is answered but not kept: it may have read
 * the account before the change, and keeping it would undo the eviction until the TTL (a revoked
 * token or an old password accepted for up to AUTH_CACHE_TTL_SECONDS on one replica).
 */
export class AccountCache {
  private readonly accounts: LRUCache<string, Account> | undefined;
  private subscribed = false;
  /**
   * Counts what may have made a read stale: every announced change, every loss and every return
   * of the subscription. A read keeps its account only if the count did not move while it ran.
   * One count for every account: a read takes a round trip, so a change elsewhere costs at most
   * that one read's place in the cache.
   */
  private generation = 0;
  private closed = false;

  private constructor(
    private readonly source: AccountSource,
    private readonly subscriber: RedisClient,
    ttlSeconds: number,
  ) {
    this.accounts =
      ttlSeconds > 0 ? new LRUCache({ max: MAX_CACHED_ACCOUNTS, ttl: ttlSeconds * 1000 }) : undefined;
  }

  /** `subscriber` becomes a dedicated subscriber connection; close it with close(). */
  static async start(
    source: AccountSource,
    subscriber: RedisClient,
    keys: Keys,
    ttlSeconds: number,
    logger: Logger,
  ) {
    const cache = new AccountCache(source, subscriber, ttlSeconds);
    const channel = keys.aggregateChanges(userDecider.aggregateType);
    subscriber.on('message', (_channel: string, userId: string) => {
      cache.generation += 1;
      cache.accounts?.delete(userId);
    });
    /** The SUBSCRIBE of the current connection: one per connection, however many 'ready's it sees. */
    let listening: Promise<void> | undefined;
    const listen = (): Promise<void> => {
      if (listening) return listening;
      const attempt = subscriber.subscribe(channel).then(
        () => {
          // Heard from here on; what changed before was not, so forget everything.
          cache.generation += 1;
          cache.accounts?.clear();
          cache.subscribed = true;
        },
        (error: unknown) => {
          if (listening === attempt) listening = undefined;
          throw error;
        },
      );
      listening = attempt;
      return attempt;
    };
    subscriber.on('ready', () => {
      // ioredis emits 'ready' on a reconnect before its own re-subscription reaches Redis: changes
      // announced in between are not heard. Caching starts again once a SUBSCRIBE of ours is
      // answered (a second SUBSCRIBE of a channel is harmless).
      if (cache.closed) return;
      listen().catch((error: unknown) =>
        logger.warn('account cache not resubscribed; reading accounts from Redis', { error: String(error) }),
      );
    });
    subscriber.on('close', () => {
      listening = undefined;
      cache.subscribed = false;
      cache.generation += 1;
      cache.accounts?.clear();
    });
    try {
      await listen();
    } catch (error) {
      logger.warn('account cache not subscribed; reading accounts from Redis', { error: String(error) });
    }
    return cache;
  }

  async findById(userId: string): Promise<Account | null> {
    const cached = this.accounts?.get(userId);
    if (cached) return cached;
    const generation = this.generation;
    const account = await this.source.findById(userId);
    if (account && this.subscribed && generation === this.generation) this.accounts?.set(userId, account);
    return account;
  }

  /** Whether the account is cached now (for tests and diagnostics). */
  holds(userId: string): boolean {
    return this.accounts?.has(userId) ?? false;
  }

  async close(): Promise<void> {
    this.closed = true;
    this.subscribed = false;
    await this.subscriber.quit().catch(() => this.subscriber.disconnect());
  }
}
