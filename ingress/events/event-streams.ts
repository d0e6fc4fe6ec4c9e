import type { Response } from 'express';

import type { Account } from '../../shared/accounts/account';
import { AppError, serviceUnavailable, validationError } from '../../shared/errors';
import { compareEntryIds, type EntryId } from '../../shared/event-stream/log-position';
import {
  type EnvelopeOpener,
  type LogBatch,
  logEnds,
  readLogAfter,
} from '../../shared/event-stream/log-reader';
import { partitionsTrimmedPast, trimmedThrough } from '../../shared/event-stream/log-retention';
import type { EventStreamMetrics, StreamEnd } from '../../shared/event-stream/stream-metrics';
import type { Logger } from '../../shared/logger';
import type { RedisClient } from '../../shared/redis/connections';
import type { Keys } from '../../shared/redis/keys';
import { LOG_PARTITIONS } from '../../shared/redis/partitions';
import { ACCOUNT_READER_ROLES, hasAnyRole, type RoleClass, roleClassOf } from '../../shared/roles';
import { type FullBound, HeldSlots } from '../http/held-slots';
import { streamStillAllowed } from './event-stream-access';
import { type EventStreamRequest, MESSAGES } from './event-stream-request';
import { EventStreamSession } from './event-stream-session';
import { LogTail, type LogTailOptions } from './log-tail';

export interface EventStreamSettings {
  /** SSE_MAX_CONNECTIONS: streams open at once in this process. */
  readonly maxConnections: number;
  /** SSE_MAX_CONNECTIONS_PER_ACCOUNT: streams one account holds open at once in this process. */
  readonly maxConnectionsPerAccount: number;
  /** SSE_MAX_CONNECTIONS_PER_ROLE_CLASS: streams the accounts of one role class hold at once here. */
  readonly maxConnectionsPerRoleClass: number;
  /** SSE_HEARTBEAT_MS: the interval of the heartbeat comment. */
  readonly heartbeatMs: number;
  /** SSE_SLOW_CLIENT_TIMEOUT_MS: how long a client may leave its buffer full. */
  readonly slowClientTimeoutMs: number;
}

/** Retry-After of the 503 past SSE_MAX_CONNECTIONS (or the role class's or the account's limit). */
export const STREAMS_FULL_RETRY_AFTER_SECONDS = 5;

/** The details of the 503 past each limit, one place for their words. */
export const STREAMS_FULL_MESSAGES: Readonly<Record<FullBound, (roleClass: RoleClass) => string>> = {
  total: () => 'This instance has as many event streams open as SSE_MAX_CONNECTIONS allows; retry later.',
  roleClass: (roleClass) =>
    `The accounts of role class ${roleClass} have as many event streams open on this instance as SSE_MAX_CONNECTIONS_PER_ROLE_CLASS allows; retry later.`,
  account: () =>
    'This account has as many event streams open on this instance as SSE_MAX_CONNECTIONS_PER_ACCOUNT allows; close one, or retry later.',
};

/** Who opens a stream: its account, and the roles and security stamp it was authenticated with. */
export interface StreamReader {
  readonly userId: string;
  readonly roles: readonly string[];
  /**
   * The stamp the request was authenticated under: the stream lives under it, so a change after the
   * authentication (a role taken away while the stream opens) ends the stream, or refuses it.
   */
  readonly securityStamp: string;
}

interface Owner {
  readonly userId: string;
  readonly roleClass: RoleClass;
  /** The security stamp the stream was authenticated under: when it changes, the stream ends. */
  readonly stamp: string;
}
/**
 * The waits between the attempts to read a held stream's account again (after a change was
 * announced) when a read fails: four reads within ~1 s of the first, then the stream ends.
 */
export const HELD_CHECK_RETRY_DELAYS_MS: readonly number[] = [100, 250, 500];

/** Entries one catch-up read takes across partitions: with the socket's buffer, a stream's memory bound. */
const CATCH_UP_ENTRIES = 512;

export interface EventStreamsDeps {
  readonly redis: RedisClient;
  /**
   * Where a stream's account is read again (the account cache): at each account change it
   * announces (onChange), and at each heartbeat in case an announcement was missed.
   */
  readonly accounts: {
    findById(userId: string): Promise<Account | null>;
    onChange?(listener: (userId: string | undefined) => void): () => void;
  };
  readonly keys: Keys;
  readonly open: EnvelopeOpener;
  readonly newSubscriber: () => RedisClient;
  readonly logger: Logger;
  readonly settings: EventStreamSettings;
  readonly metrics?: EventStreamMetrics;
  readonly tail?: Partial<LogTailOptions>;
}

/**
 * The process's event streams: admits at most SSE_MAX_CONNECTIONS, beats the heart of every open
 * one, and ends them all at shutdown so the server's graceful close never waits on a stream.
 */
export class EventStreams {
  private readonly sessions = new Set<EventStreamSession>();
  /** Each stream's account, its role class and the security stamp it was admitted under. */
  private readonly owners = new Map<EventStreamSession, Owner>();
  /** The open streams of each account (lower-case id), for its change announcements. */
  private readonly sessionsByAccount = new Map<string, Set<EventStreamSession>>();
  private readonly stopListening: () => void;
  /** Admitted streams: in all, per role class, per account; counted from the admission on. */
  private readonly admitted: HeldSlots;
  private heartbeat: NodeJS.Timeout | undefined;
  private closing = false;
  readonly tail: LogTail;

  constructor(private readonly deps: EventStreamsDeps) {
    // Events are sent in writes of ~1,000 at most (the tail's batch x partitions, or a catch-up read).
    this.tail = new LogTail(deps.redis, deps.keys, deps.open, deps.newSubscriber, deps.logger, {
      batchSize: 64,
      ...deps.tail,
    });
    this.admitted = new HeldSlots({
      total: deps.settings.maxConnections,
      perRoleClass: deps.settings.maxConnectionsPerRoleClass,
      perAccount: deps.settings.maxConnectionsPerAccount,
    });
    this.stopListening = deps.accounts.onChange?.((userId) => this.accountChanged(userId)) ?? (() => {});
  }

  /** How many streams are open now. */
  get open(): number {
    return this.sessions.size;
  }

  /**
   * Opens a stream for an authorised caller: 503 past a limit (the instance's, the role class's or
   * the account's) or while shutting down; otherwise resolves the start (reads Redis for `now`),
   * sends the headers, and leaves the stream running. The reader's roles say its role class and
   * whether user events reach it with their personal fields.
   */
  async serve(res: Response, request: EventStreamRequest, reader: StreamReader): Promise<void> {
    const { userId } = reader;
    const roleClass = roleClassOf(reader.roles);
    const { settings } = this.deps;
    const owner: Owner = { userId, roleClass, stamp: reader.securityStamp };
    const full = this.closing ? 'total' : this.admitted.take(owner);
    if (full)
      throw serviceUnavailable(STREAMS_FULL_MESSAGES[full](roleClass), STREAMS_FULL_RETRY_AFTER_SECONDS);
    let session: EventStreamSession | undefined;
    try {
      // The roles and the personal-data reading below are those of the authenticated stamp: an
      // account changed since (its stamp moved) is refused here, or ended by the check after start.
      const account = await this.deps.accounts.findById(userId);
      if (!streamStillAllowed(account, owner.stamp))
        throw new AppError('FORBIDDEN', 'The account is no longer allowed to read the event stream.', 403);
      await this.tail.acquire();
      try {
        const start = await this.startOf(request);
        if (this.closing || gone(res)) throw new Error('closed before the stream started');
        session = new EventStreamSession(
          res,
          this.tail,
          (from, count) => this.readUntrimmed(from, count),
          start,
          request.types,
          {
            slowClientTimeoutMs: settings.slowClientTimeoutMs,
            catchUpEntries: CATCH_UP_ENTRIES,
            reader: { personalData: hasAnyRole(reader.roles, ACCOUNT_READER_ROLES) },
          },
          this.deps.logger,
          this.deps.metrics,
          (ended, reason) => this.ended(ended, reason),
        );
      } catch (error) {
        this.tail.release();
        throw error;
      }
    } catch (error) {
      this.admitted.give(owner);
      if (gone(res) || this.closing) return;
      throw error;
    }
    this.sessions.add(session);
    this.owners.set(session, owner);
    const ofAccount = this.sessionsByAccount.get(userId.toLowerCase()) ?? new Set();
    ofAccount.add(session);
    this.sessionsByAccount.set(userId.toLowerCase(), ofAccount);
    this.deps.metrics?.eventStreamOpened();
    this.startHeartbeat();
    res.status(200);
    res.setHeader('Content-Type', 'text/event-stream; charset=utf-8');
    // no-transform: a proxy must not compress (and so buffer) it; X-Accel-Buffering: nginx must not buffer it.
    res.setHeader('Cache-Control', 'no-cache, no-store, no-transform');
    res.setHeader('X-Accel-Buffering', 'no');
    res.flushHeaders();
    res.socket?.setNoDelay(true);
    session.start();
    // A change announced while the stream was being opened found no stream to end: read once more
    // (the cache dropped the account if it changed), so such a change too ends it at once.
    void this.checkOwner(session);
  }

  /** Ends every stream (each client reconnects from its last id) and stops reading the log. */
  async close(): Promise<void> {
    this.closing = true;
    this.stopListening();
    for (const session of [...this.sessions]) session.end('shutdown');
    clearInterval(this.heartbeat);
    this.heartbeat = undefined;
    await this.tail.close();
  }

  private async startOf(request: EventStreamRequest): Promise<EntryId[]> {
    switch (request.start.kind) {
      case 'beginning':
        // The oldest entry kept: with LOG_RETENTION, just after what each partition had trimmed.
        return trimmedThrough(this.deps.redis, this.deps.keys);
      case 'now':
        return logEnds(this.deps.redis, this.deps.keys, LOG_PARTITIONS);
      case 'position': {
        // LOG_RETENTION: a position before trimmed entries is refused, never resumed with a gap.
        const trimmed = await partitionsTrimmedPast(this.deps.redis, this.deps.keys, request.start.position);
        if (trimmed.length > 0) throw validationError({ [request.start.field]: [MESSAGES.trimmed] });
        return [...request.start.position];
      }
      default: {
        const _exhaustive: never = request.start;
        return _exhaustive;
      }
    }
  }

  /**
   * A catch-up read, then a check that nothing after where it read from was trimmed (LOG_RETENTION)
   * before it read: a stream that fell behind the window (or raced a trim at its start) ends with an
   * error, and its client's reconnection is refused with the reason, instead of skipping entries.
   * Checked after the read, so a trim that came later cannot have taken anything it returned.
   */
  private async readUntrimmed(from: ReadonlyMap<number, EntryId>, count: number): Promise<LogBatch> {
    const batch = await readLogAfter(this.deps.redis, this.deps.keys, this.deps.open, from, count);
    const trimmed = await trimmedThrough(this.deps.redis, this.deps.keys);
    for (const [partition, position] of from) {
      const through = trimmed[partition];
      if (through && compareEntryIds(position, through) < 0) {
        throw new Error(`log partition ${partition} was trimmed past the stream's position`);
      }
    }
    return batch;
  }

  private ended(session: EventStreamSession, reason: StreamEnd): void {
    if (!this.sessions.delete(session)) return;
    const owner = this.owners.get(session);
    this.owners.delete(session);
    if (owner) {
      this.admitted.give(owner);
      const ofAccount = this.sessionsByAccount.get(owner.userId.toLowerCase());
      ofAccount?.delete(session);
      if (ofAccount?.size === 0) this.sessionsByAccount.delete(owner.userId.toLowerCase());
    }
    this.tail.release();
    this.deps.metrics?.eventStreamClosed(reason);
    if (this.sessions.size === 0) {
      clearInterval(this.heartbeat);
      this.heartbeat = undefined;
    }
  }

  /**
   * An account change was announced (every append to a user's stream publishes its id, and the
   * account cache, which has just dropped it, tells us): each of that account's streams is held at
   * once, sending nothing, until its account is read again; then it ends or goes on. A stream
   * announced twice goes on only once both reads are done: the first may have read the account
   * before the second change. Undefined: changes may have gone unheard (the subscription came
   * back, or was heard again after going silent), so every stream is held and checked alike.
   */
  private accountChanged(userId: string | undefined): void {
    const sessions = userId === undefined ? this.sessions : this.sessionsByAccount.get(userId.toLowerCase());
    if (!sessions) return;
    for (const session of [...sessions]) {
      session.hold();
      void this.checkHeld(session).finally(() => session.release());
    }
  }

  /**
   * The check of a held stream: it goes on only once a read of its account says so. A failed read
   * is tried again after each of HELD_CHECK_RETRY_DELAYS_MS, the stream still held (a failure is
   * no answer: releasing on it would send, under a change not yet read, what the change may
   * forbid); when every attempt fails, the stream ends and its client reconnects through
   * authentication, which reads the account afresh.
   */
  private async checkHeld(session: EventStreamSession): Promise<void> {
    for (const delayMs of [...HELD_CHECK_RETRY_DELAYS_MS, undefined]) {
      if ((await this.checkOwner(session)) !== 'unread') return;
      if (delayMs === undefined) break;
      await new Promise((resolve) => setTimeout(resolve, delayMs).unref());
    }
    const owner = this.owners.get(session);
    if (!owner) return;
    this.deps.logger.warn('event stream ended: its account could not be read again after a change', {
      userId: owner.userId,
    });
    session.end('error');
  }

  /**
   * Ends the stream when its account may no longer read it (disabled, deleted, lost its role, or
   * its credentials were revoked: the stamp changed). A read of the account cache, which every
   * change to the account evicts. 'unread' when the read failed (Redis away): an unheld stream is
   * left alone until the next heartbeat checks again; a held one is checked again (checkHeld).
   */
  private async checkOwner(session: EventStreamSession): Promise<'allowed' | 'ended' | 'unread'> {
    const owner = this.owners.get(session);
    if (!owner) return 'ended';
    let account: Account | null;
    try {
      account = await this.deps.accounts.findById(owner.userId);
    } catch {
      return this.owners.has(session) ? 'unread' : 'ended';
    }
    if (streamStillAllowed(account, owner.stamp)) return 'allowed';
    this.deps.logger.info('event stream ended: its account may no longer read it', {
      userId: owner.userId,
    });
    session.end('revoked');
    return 'ended';
  }

  private startHeartbeat(): void {
    if (this.heartbeat) return;
    this.heartbeat = setInterval(() => {
      for (const session of this.sessions) {
        session.heartbeat();
        void this.checkOwner(session);
      }
    }, this.deps.settings.heartbeatMs);
    this.heartbeat.unref();
  }
}

/** The client went away (or the socket was cut) while the stream was being opened. */
function gone(res: Response): boolean {
  return res.destroyed || !res.socket || res.socket.destroyed;
}
