import { LRUCache } from 'lru-cache';

import { userDecider } from '../domain/user/user.decider';
import type { Logger } from '../logger';
import type { RedisClient } from '../redis/connections';
import type { Keys } from '../redis/keys';
import type { Account } from './account';
import type { AccountService } from './account.service';

const MAX_CACHED_ACCOUNTS = 50_000;

/**
 * Accounts kept in-process, so an authenticated request costs no Redis round trip. Every append to
 * a user's stream publishes its id (append-events-6.lua), and every replica drops that account at
 * once. While the subscription is down nothing is cached, and when it comes back the cache starts
 * empty, so a change can never be missed; the TTL is a last bound on staleness.
 */
export class AccountCache {
  private readonly accounts: LRUCache<string, Account> | undefined;
  private subscribed = false;

  private constructor(
    private readonly source: AccountService,
    private readonly subscriber: RedisClient,
    ttlSeconds: number,
  ) {
    this.accounts =
      ttlSeconds > 0 ? new LRUCache({ max: MAX_CACHED_ACCOUNTS, ttl: ttlSeconds * 1000 }) : undefined;
  }

  /** `subscriber` becomes a dedicated subscriber connection; close it with close(). */
  static async start(
    source: AccountService,
    subscriber: RedisClient,
    keys: Keys,
    ttlSeconds: number,
    logger: Logger,
  ) {
    const cache = new AccountCache(source, subscriber, ttlSeconds);
    const channel = keys.aggregateChanges(userDecider.aggregateType);
    subscriber.on('message', (_channel: string, userId: string) => cache.accounts?.delete(userId));
    subscriber.on('ready', () => {
      // ioredis re-subscribes on reconnect; what changed meanwhile was not heard, so forget everything.
      cache.accounts?.clear();
      cache.subscribed = true;
    });
    subscriber.on('close', () => {
      cache.subscribed = false;
      cache.accounts?.clear();
    });
    try {
      await subscriber.subscribe(channel);
      cache.subscribed = true;
    } catch (error) {
      logger.warn('account cache not subscribed; reading accounts from Redis', { error: String(error) });
    }
    return cache;
  }

  async findById(userId: string): Promise<Account | null> {
    const cached = this.accounts?.get(userId);
    if (cached) return cached;
    const account = await this.source.findById(userId);
    if (account && this.subscribed) this.accounts?.set(userId, account);
    return account;
  }

  /** Whether the account is cached now (for tests and diagnostics). */
  holds(userId: string): boolean {
    return this.accounts?.has(userId) ?? false;
  }

  async close(): Promise<void> {
    this.subscribed = false;
    await this.subscriber.quit().catch(() => this.subscriber.disconnect());
  }
}
