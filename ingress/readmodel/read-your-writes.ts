import Joi from 'joi';

import { projectionBehind } from '../../shared/errors';
import { fantasyTeamProjection } from '../../shared/fantasy-team/fantasy-team.projection';
import type { Logger } from '../../shared/logger';
import type { ReadWaitMetrics, ReadWaitOutcome } from '../../shared/metrics/metrics';
import { decodeProjectedVersions } from '../../shared/projections/projection-progress';
import type { RedisClient } from '../../shared/redis/connections';
import type { Keys } from '../../shared/redis/keys';
import { roleClassOf } from '../../shared/roles';
import { playersProjection } from '../../shared/sport/players.projection';
import { usersProjection } from '../../shared/user/users.projection';
import { HeldSlots } from '../http/held-slots';

/**
 * `query.minVersion` of the queries that read one aggregate's projected data: the version a
 * command answered (its `version`), so the read sees that write. A positive integer.
 */
export const MIN_VERSION_SCHEMA = Joi.number()
  .strict()
  .integer()
  .min(1)
  .max(Number.MAX_SAFE_INTEGER)
  .description(
    "Answer only once the aggregate this query reads is at this version or later (a command answer's `version`): waits up to READ_WAIT_MS for the projection, then answers 503 with `code` `PROJECTION_BEHIND` and Retry-After.",
  );

/**
 * The projections whose progress a read may wait for: the team's (GetFantasyTeam,
 * GetTeamRatingInputByTeamId), the players' (GetMappedPlayers by platformId) and the users'
 * (GetUser, whose record is newer than the projection that announces it).
 */
export const READ_YOUR_WRITES_PROJECTIONS = [fantasyTeamProjection, playersProjection, usersProjection];

/** READ_WAIT_MS, READ_MAX_WAITERS, READ_MAX_WAITERS_PER_ROLE_CLASS and READ_MAX_WAITERS_PER_ACCOUNT. */
export interface ReadWaitSettings {
  readonly waitMs: number;
  readonly maxWaiters: number;
  readonly maxWaitersPerRoleClass: number;
  readonly maxWaitersPerAccount: number;
}

/** Seconds a caller answered PROJECTION_BEHIND is asked to wait. */
export const PROJECTION_BEHIND_RETRY_AFTER_SECONDS = 1;

/** The details of PROJECTION_BEHIND, one place for their words. */
export const READ_WAIT_MESSAGES = {
  behind: (noun: string, aggregateId: string, minVersion: number, waitMs: number) =>
    `The read model had not reached version ${minVersion} of the ${noun} ${aggregateId} within ${waitMs} ms. Retry after Retry-After seconds.`,
  tooManyWaiting: (minVersion: number, noun: string) =>
    `Too many reads are waiting for a version here: version ${minVersion} of the ${noun} was not waited for. Retry after Retry-After seconds.`,
  closing: 'The service is shutting down. Retry after Retry-After seconds.',
} as const;

/** One read asking to see an aggregate at `minVersion` in one projection. */
export interface VersionedRead<T> {
  /** The projection whose announcements say the aggregate moved (projector's `projectionProgress`). */
  readonly projection: string;
  readonly aggregateId: string;
  readonly minVersion: number;
  /** Who waits: waiters are bounded per account and per role class (roleClassOf its roles). */
  readonly reader: { readonly userId: string; readonly roles: readonly string[] };
  /** How the message names the aggregate ("fantasy team"). */
  readonly noun: string;
  /** Reads the answer's data. */
  read(): Promise<T>;
  /**
   * The aggregate's version in what `read` returned; Infinity when nothing newer can be waited for
   * (an account read from its record that no longer exists).
   */
  versionOf(value: T): number;
}

interface Waiter {
  readonly minVersion: number;
  /** Called when the projection announced this aggregate at minVersion or later. */
  readonly wake: () => void;
}

/**
 * Read your own writes (ADR 0019): holds a read until the projection has the version it asks for.
 * The projector announces the version each aggregate reached after each batch
 * (projection-progress.ts); one subscriber per process, opened by the first read that has to wait,
 * wakes exactly the reads of the aggregates announced, so nothing polls. Waits are bounded in all,
 * per role class and per account (READ_MAX_WAITERS*), and by READ_WAIT_MS; past any, the read
 * answers 503 PROJECTION_BEHIND with Retry-After, so reads of versions that never come hold bounded
 * resources and take nothing from other accounts' or role classes' share.
 */
export class ProjectionWaits {
  /** `<projection>:<aggregateId>` -> the reads waiting for it. */
  private readonly waiting = new Map<string, Set<Waiter>>();
  /** Reads waiting: in all, per role class, per account; counted from the admission on. */
  private readonly waiters: HeldSlots;
  private subscriber: RedisClient | undefined;
  private subscribed: Promise<void> | undefined;
  private closed = false;

  constructor(
    private readonly keys: Keys,
    /** The projections whose progress reads may wait for. */
    private readonly projections: readonly string[],
    /** Opens the subscriber connection, once, when the first read has to wait. */
    private readonly newSubscriber: () => RedisClient,
    private readonly settings: ReadWaitSettings,
    private readonly logger: Logger,
    private readonly metrics?: ReadWaitMetrics,
  ) {
    this.waiters = new HeldSlots({
      total: settings.maxWaiters,
      perRoleClass: settings.maxWaitersPerRoleClass,
      perAccount: settings.maxWaitersPerAccount,
    });
  }

  /** Reads waiting now (for tests and metrics). */
  get size(): number {
    return this.waiters.size;
  }

  /**
   * The read's data once its aggregate is at `minVersion` or later; else, after READ_WAIT_MS (or
   * at once past the bounds), the 503 PROJECTION_BEHIND problem.
   */
  async until<T>(request: VersionedRead<T>): Promise<T> {
    const startedAt = performance.now();
    const deadline = Date.now() + this.settings.waitMs;
    const first = await request.read();
    if (request.versionOf(first) >= request.minVersion) return first;
    // Refused unless the wait ends otherwise: too many waiting, or the ingress closing.
    let outcome: ReadWaitOutcome = 'refused';
    try {
      const value = await this.waitFor(request, deadline, () => (outcome = 'behind'));
      outcome = 'seen';
      return value;
    } finally {
      this.metrics?.recordReadWait(request.projection, outcome, (performance.now() - startedAt) / 1000);
    }
  }

  /**
   * After a first read below minVersion: the value once announced and read at minVersion, bounded
   * as `until` says; `timedOut` is told when READ_WAIT_MS passed first.
   */
  private async waitFor<T>(request: VersionedRead<T>, deadline: number, timedOut: () => void): Promise<T> {
    if (this.closed) throw projectionBehind(READ_WAIT_MESSAGES.closing);

    // Counted from here on (before any await), so a burst cannot overshoot the bounds.
    const holder = { userId: request.reader.userId, roleClass: roleClassOf(request.reader.roles) };
    if (this.waiters.take(holder)) {
      throw projectionBehind(
        READ_WAIT_MESSAGES.tooManyWaiting(request.minVersion, request.noun),
        PROJECTION_BEHIND_RETRY_AFTER_SECONDS,
      );
    }
    const key = `${request.projection}:${request.aggregateId.toLowerCase()}`;
    let announced = false;
    let wake: () => void = () => undefined;
    const waiter: Waiter = {
      minVersion: request.minVersion,
      wake: () => {
        announced = true;
        wake();
      },
    };
    const set = this.waiting.get(key) ?? new Set();
    set.add(waiter);
    this.waiting.set(key, set);
    try {
      // Subscribed before the next read: an announcement after that read cannot be missed, and
      // one between the first read and now is seen by the read itself.
      await this.subscribe();
      for (;;) {
        const value = await request.read();
        if (request.versionOf(value) >= request.minVersion) return value;
        const remaining = deadline - Date.now();
        if (remaining <= 0 || this.closed) break;
        if (!announced) {
          await new Promise<void>((resolve) => {
            const timer = setTimeout(resolve, remaining);
            wake = () => {
              clearTimeout(timer);
              resolve();
            };
          });
          wake = () => undefined;
        }
        if (!announced) break; // timed out, or closing
        announced = false;
      }
      if (!this.closed) timedOut();
      throw projectionBehind(
        this.closed
          ? READ_WAIT_MESSAGES.closing
          : READ_WAIT_MESSAGES.behind(
              request.noun,
              request.aggregateId,
              request.minVersion,
              this.settings.waitMs,
            ),
        PROJECTION_BEHIND_RETRY_AFTER_SECONDS,
      );
    } finally {
      set.delete(waiter);
      if (set.size === 0 && this.waiting.get(key) === set) this.waiting.delete(key);
      this.waiters.give(holder);
    }
  }

  /** Ends every wait (each answers PROJECTION_BEHIND) and closes the subscriber. */
  async close(): Promise<void> {
    this.closed = true;
    for (const set of this.waiting.values()) for (const waiter of set) waiter.wake();
    const subscriber = this.subscriber;
    this.subscriber = undefined;
    await subscriber?.quit().catch(() => subscriber.disconnect());
  }

  /** Once per process: the projections' progress channels. A failed SUBSCRIBE is tried again next time. */
  private subscribe(): Promise<void> {
    if (this.subscribed) return this.subscribed;
    if (!this.subscriber) {
      const subscriber = this.newSubscriber();
      this.subscriber = subscriber;
      const projectionOf = new Map(
        this.projections.map((projection) => [this.keys.projectionProgress(projection), projection]),
      );
      subscriber.on('message', (channel: string, message: string) => {
        const projection = projectionOf.get(channel);
        if (projection !== undefined && this.waiters.size > 0) this.announce(projection, message);
      });
    }
    const channels = this.projections.map((projection) => this.keys.projectionProgress(projection));
    const attempt = this.subscriber.subscribe(...channels).then(
      () => undefined,
      (error: unknown) => {
        // The read still waits out its time (and answers PROJECTION_BEHIND); the next one tries again.
        this.logger.warn('read-your-writes not subscribed to projection progress', { error: String(error) });
        if (this.subscribed === attempt) this.subscribed = undefined;
      },
    );
    this.subscribed = attempt;
    return attempt;
  }

  /** Wakes the reads of the announced aggregates that reached their version. */
  private announce(projection: string, message: string): void {
    for (const [aggregateId, version] of decodeProjectedVersions(message)) {
      const set = this.waiting.get(`${projection}:${aggregateId}`);
      if (!set) continue;
      for (const waiter of set) if (version >= waiter.minVersion) waiter.wake();
    }
  }
}
