import { randomUUID } from 'node:crypto';

import { LRUCache } from 'lru-cache';

import type { Account } from '../../shared/accounts/account';
import type { AccountService } from '../../shared/accounts/account.service';
import type { Logger } from '../../shared/logger';
import type { RedisClient } from '../../shared/redis/connections';
import type { Keys } from '../../shared/redis/keys';
import { userDecider } from '../../shared/user/user.decider';

const MAX_CACHED_ACCOUNTS = 50_000;

/** What a heartbeat on the changes channel starts with: never a user id (those are GUIDs). */
const HEARTBEAT_PREFIX = 'heartbeat:';

/**
 * How the cache proves its subscription still hears: a heartbeat published on the changes channel
 * through another connection every `everyMs`, which must come back within `deadlineMs`.
 */
export interface SubscriptionHeartbeat {
  /** Publishes (the request connection); the subscriber cannot publish. */
  readonly publisher: RedisClient;
  readonly everyMs: number;
  readonly deadlineMs: number;
}

/** Every 5 s, heard within 2 s: a subscription gone silent stops the caching within 7 s. */
export const DEFAULT_HEARTBEAT = { everyMs: 5_000, deadlineMs: 2_000 } as const;

/** Where accounts are read from on a miss: the AccountService. */
export type AccountSource = Pick<AccountService, 'findById'>;

/**
 * Told of every account change this process hears, after the cache has dropped the account (so a
 * read from the listener sees the change): the account's id, or undefined when changes may have
 * gone unheard (the subscription was lost or went silent, and hears again): then any account may
 * have changed.
 */
export type AccountChangeListener = (userId: string | undefined) => void;

/**
 * Accounts kept in-process, so an authenticated request costs no Redis round trip. Every append to a
 * user's stream publishes its id (append-events-6.lua) and every replica drops that account. While
 * the subscription is down, or silent past a missed heartbeat (a NAT or a cluster client can drop
 * it without closing it), nothing is cached and the cache restarts empty, so no change is missed;
 * the TTL is a last bound (ADR 0005). A read under way when a change is announced is answered but
 * not kept: keeping it would undo the eviction (a revoked token accepted until the TTL).
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
  private heartbeatTimer: NodeJS.Timeout | undefined;
  /** The check of the awaited heartbeat's deadline: cleared on close, so nothing logs after it. */
  private deadlineTimer: NodeJS.Timeout | undefined;
  /** The heartbeat awaited, and when it is overdue. */
  private awaited: { readonly token: string; readonly dueAt: number } | undefined;
  /** Whether the last heartbeat came back in time (caching needs it, besides the subscription). */
  private hearing = true;
  private readonly listeners = new Set<AccountChangeListener>();

  private constructor(
    private readonly source: AccountSource,
    private readonly subscriber: RedisClient,
    ttlSeconds: number,
  ) {
    this.accounts =
      ttlSeconds > 0 ? new LRUCache({ max: MAX_CACHED_ACCOUNTS, ttl: ttlSeconds * 1000 }) : undefined;
  }

  /**
   * `subscriber` becomes a dedicated subscriber connection; close it with close(). Without a
   * heartbeat (tests of other things), a silent subscription is not detected.
   */
  static async start(
    source: AccountSource,
    subscriber: RedisClient,
    keys: Keys,
    ttlSeconds: number,
    logger: Logger,
    heartbeat?: SubscriptionHeartbeat,
  ) {
    const cache = new AccountCache(source, subscriber, ttlSeconds);
    const channel = keys.aggregateChanges(userDecider.aggregateType);
    subscriber.on('message', (_channel: string, message: string) => {
      if (message.startsWith(HEARTBEAT_PREFIX)) {
        if (message === cache.awaited?.token) cache.heard();
        return;
      }
      cache.generation += 1;
      cache.accounts?.delete(message);
      cache.tell(message);
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
          cache.tell(undefined);
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
    if (heartbeat) cache.beat(heartbeat, channel, logger);
    return cache;
  }

  /** Publishes a heartbeat every `everyMs`, and stops caching when the last one is overdue. */
  private beat({ publisher, everyMs, deadlineMs }: SubscriptionHeartbeat, channel: string, logger: Logger) {
    const check = () => {
      if (this.closed) return;
      if (this.awaited && Date.now() >= this.awaited.dueAt && this.hearing) {
        this.hearing = false;
        this.generation += 1;
        this.accounts?.clear();
        logger.warn('account cache subscription silent; reading accounts from Redis until it is heard');
      }
    };
    const send = () => {
      check();
      // One heartbeat in flight while hearing: a new one must not push the last one's deadline back.
      if (this.awaited && this.hearing) return;
      const token = `${HEARTBEAT_PREFIX}${randomUUID()}`;
      this.awaited = { token, dueAt: Date.now() + deadlineMs };
      publisher.publish(channel, token).catch(() => undefined);
      clearTimeout(this.deadlineTimer);
      this.deadlineTimer = setTimeout(check, deadlineMs + 1);
      this.deadlineTimer.unref();
    };
    this.heartbeatTimer = setInterval(send, everyMs);
    this.heartbeatTimer.unref();
    send();
  }

  /** The awaited heartbeat came back: the subscription hears, and caching may start again. */
  private heard() {
    this.awaited = undefined;
    if (!this.hearing) {
      this.hearing = true;
      this.generation += 1;
      this.accounts?.clear();
      this.tell(undefined);
    }
  }

  /**
   * Calls `listener` at every account change this process hears (what ends an event stream within
   * a second of its account's change, on every replica). Returns the call that stops it.
   */
  onChange(listener: AccountChangeListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private tell(userId: string | undefined): void {
    for (const listener of this.listeners) listener(userId);
  }

  async findById(userId: string): Promise<Account | null> {
    const cached = this.accounts?.get(userId);
    if (cached) return cached;
    const generation = this.generation;
    const account = await this.source.findById(userId);
    if (account && this.subscribed && this.hearing && generation === this.generation) {
      this.accounts?.set(userId, account);
    }
    return account;
  }

  /** Whether the account is cached now (for tests and diagnostics). */
  holds(userId: string): boolean {
    return this.accounts?.has(userId) ?? false;
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.heartbeatTimer);
    clearTimeout(this.deadlineTimer);
    this.subscribed = false;
    await this.subscriber.quit().catch(() => this.subscriber.disconnect());
  }
}
