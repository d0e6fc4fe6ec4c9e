import { randomUUID } from 'node:crypto';

import { type Attributes, context, propagation, SpanKind, SpanStatusCode } from '@opentelemetry/api';
import { Webhook } from 'standardwebhooks';

import { SYSTEM_ACTOR } from '../../shared/accounts/account';
import type { EventEnvelope } from '../../shared/event-store/envelope';
import type { EventStore } from '../../shared/event-store/event-store';
import type { CommandHandler } from '../../shared/event-store/handle-command';
import type { Logger } from '../../shared/logger';
import type { WebhookStopReason } from '../../shared/metrics/metrics';
import { PUBLIC_AGGREGATE_TYPES, toPublicEvent } from '../../shared/public-events/event-catalogue';
import type { RedisClient } from '../../shared/redis/connections';
import type { Keys } from '../../shared/redis/keys';
import { partitionOf } from '../../shared/redis/partitions';
import { registerScripts } from '../../shared/redis/scripts';
import { inEventSpan, tracingOn } from '../../shared/tracing/spans';
import { userDecider, type UserState } from '../../shared/user/user.decider';
import type { UserEvent } from '../../shared/user/user.events';
import { WakeablePause } from '../../shared/wakeable-pause';
import { type DeliveryLog, type DeliveryStatus } from '../../shared/webhook-subscription/delivery-log';
import type { WebhookSecrets } from '../../shared/webhook-subscription/webhook-secrets';
import { webhookSubscriptionDecider } from '../../shared/webhook-subscription/webhook-subscription.decider';
import {
  type OwnerLapse,
  ownerLapseReason,
} from '../../shared/webhook-subscription/webhook-subscription.messages';
import { PartitionLeases } from '../projector/partition-leases';
import { lapsedAfter, lapsesAmong, type LapseSeen, lapseSince, ownerLapse } from './owner-authority';
import { PartitionReads } from './partition-reads';
import { type ActiveSubscription, loadSubscription, loadSubscriptions } from './subscription-directory';
import { WEBHOOK_DELIVERY_SCRIPTS } from './webhook-delivery.scripts';
import type { AttemptResult, WebhookSender } from './webhook-sender';

export interface WebhookDeliverySettings {
  /** The waits before each retry; after the last failure the event is given up on. */
  readonly retryScheduleMs: readonly number[];
  /** An endpoint whose every attempt has failed this long is disabled. */
  readonly disableAfterMs: number;
}

export interface DispatcherOptions {
  /** Log entries read per lane per step. */
  readonly batchSize: number;
  /** How often every lane is looked at even if no append was announced. */
  readonly pollMs: number;
  /** How often the subscriptions are read again (and at once on a change of one). */
  readonly refreshMs: number;
  /** How long a partition stays with a replica that stops renewing it. */
  readonly leaseMs: number;
}

export const DEFAULT_DISPATCHER_OPTIONS: DispatcherOptions = {
  batchSize: 100,
  pollMs: 250,
  refreshMs: 1_000,
  leaseMs: 5_000,
};

/** What the dispatcher reports to metrics. */
export interface WebhookDeliveryMetrics {
  recordWebhookAttempt(status: DeliveryStatus, seconds: number, subscriptionId: string): void;
  /** A subscription this replica suspended (its owner lapsed) or disabled (its deliveries kept failing). */
  recordWebhookSubscriptionStopped(reason: WebhookStopReason): void;
  /**
   * Called at every scrape: subscription id -> age (s) of its oldest event not yet delivered, for
   * every subscription known (the per-subscription series are these).
   */
  collectWebhookBacklog(source: () => ReadonlyMap<string, number>): void;
}

/** The one log consumer of the dispatcher, as the partition leases name it. */
const CONSUMER = { name: 'webhooks' } as const;

/** A lane id (`subscription:partition`) taken apart; the partition as written in it. */
function laneParts(lane: string): { readonly subscriptionId: string; readonly partition: string } {
  const split = lane.lastIndexOf(':');
  return { subscriptionId: lane.slice(0, split), partition: lane.slice(split + 1) };
}

/** A stream id above every entry of the millisecond before `ms`: a replay's exclusive start. */
function justBefore(ms: number): string {
  return `${Math.max(0, ms - 1)}-999999999`;
}

function entryTimeMs(entryId: string): number {
  return Number(entryId.slice(0, entryId.indexOf('-')));
}

interface Cursor {
  readonly checkpoint: string;
  readonly attempt: number;
  readonly eventId: string;
  readonly nextAt: number;
  readonly replayId: string;
}

/**
 * Delivers the global log's events to webhook subscriptions, from the worker processes. Replicas
 * lease the log's partitions; per partition and subscription a lane sends entries one at a time in
 * log order (an aggregate lives in one partition), so a failing event holds back its lane only. A
 * lane's checkpoint moves once an attempt has ended, fenced on the value read: an event a killed
 * replica was sending is sent again by the next owner under the same webhook-id (at least once).
 * Nothing goes out while the owner is disabled, erased or without Admin (ADR 0015): the gate is the
 * dispatcher's own, so it holds before the suspension it then appends (idempotently) is written.
 */
export class WebhookDispatcher {
  private readonly leases: PartitionLeases<typeof CONSUMER>;
  private readonly options: DispatcherOptions;
  private running = false;
  private loopDone: Promise<void> | undefined;
  private subscriptions: ActiveSubscription[] = [];
  private refreshedAt = 0;
  private refreshDue = true;
  /** Partitions announced changed since the last pass. */
  private announced = new Set<number>();
  private fullPassAt = 0;
  /** Lanes (`subscription:partition`) with a step in flight, and that step. */
  private readonly busy = new Map<string, Promise<void>>();
  /** Lanes waiting for a retry: when each is due (unix ms). */
  private readonly dueAt = new Map<string, number>();
  /** Lanes with more to read right away (a full batch). */
  private readonly more = new Set<string>();
  /** Per lane: the log time (unix ms) of its oldest event not yet delivered. */
  private readonly undelivered = new Map<string, { subscriptionId: string; sinceMs: number }>();
  /** Subscriptions being disabled for failing too long (one command each). */
  private readonly disabling = new Set<string>();
  /** The subscriptions' owner accounts as last read: record version and state, by user id. */
  private readonly owners = new Map<string, { readonly version: number; readonly state: UserState }>();
  /**
   * Owners whose account change was announced (or whose announcements may have been missed) and
   * not read since: how many times. Their subscriptions deliver nothing until a read started after
   * the announcement says they still qualify.
   */
  private readonly ownersAnnounced = new Map<string, number>();
  /**
   * Every lapse an owner's account went through, as read (the states between two reads included),
   * by user id: a subscription whose ownership began before one is suspended on it, even when the
   * account qualifies again by the next read (disabled and enabled again within a refresh).
   */
  private readonly lapsesSeen = new Map<string, LapseSeen[]>();
  /** Subscriptions being suspended because their owner lapsed (one command each). */
  private readonly suspending = new Set<string>();
  /** When each subscription's run of failures was last cleared by this replica (unix ms). */
  private readonly healthClearedAt = new Map<string, number>();
  private readonly pause = new WakeablePause();
  private readonly inFlight = new Set<Promise<void>>();
  /** Each lane's cursor as this replica last read or wrote it (the script's fence catches a stale one). */
  private readonly cursors = new Map<string, Cursor>();
  private readonly reads: PartitionReads;
  /** One signer per secret, made once rather than per attempt. */
  private signers = new Map<string, Webhook>();

  constructor(
    private readonly redis: RedisClient,
    private readonly keys: Keys,
    private readonly secrets: WebhookSecrets,
    private readonly sender: WebhookSender,
    private readonly deliveryLog: DeliveryLog,
    private readonly commands: CommandHandler,
    /** Reads records in their current shape: the subscriptions' and their owners'. */
    private readonly store: EventStore,
    private readonly settings: WebhookDeliverySettings,
    private readonly logger: Logger,
    options: Partial<DispatcherOptions> = {},
    private readonly subscriber?: RedisClient,
    private readonly metrics?: WebhookDeliveryMetrics,
  ) {
    this.options = { ...DEFAULT_DISPATCHER_OPTIONS, ...options };
    this.reads = new PartitionReads(redis, keys, this.options.batchSize, () => this.readVersions());
    registerScripts(redis, WEBHOOK_DELIVERY_SCRIPTS);
    this.leases = new PartitionLeases(
      redis,
      keys,
      [CONSUMER],
      randomUUID(),
      this.options.leaseMs,
      keys.webhookDispatcherMembers(),
      ({ partition }) => this.lanesSettled(partition),
    );
    metrics?.collectWebhookBacklog(() => this.backlogAges());
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    if (this.subscriber) {
      const subscriptionChanges = this.keys.aggregateChanges(webhookSubscriptionDecider.aggregateType);
      const accountChanges = this.keys.aggregateChanges(userDecider.aggregateType);
      const publicChanges = new Set(PUBLIC_AGGREGATE_TYPES.map((type) => this.keys.aggregateChanges(type)));
      this.subscriber.on('message', (channel: string, aggregateId: string) => {
        if (channel === subscriptionChanges) {
          this.refreshDue = true;
          return this.pause.wake();
        }
        // An owner's account changed: its subscriptions wait, from now, for the account to be read.
        if (channel === accountChanges && this.owners.has(aggregateId)) this.ownerAnnounced(aggregateId);
        if (!publicChanges.has(channel)) return;
        const partition = partitionOf(aggregateId);
        this.announced.add(partition);
        this.reads.announced(partition);
        this.pause.wake();
      });
      // Changes announced while the subscription was away were not heard: every owner is read again.
      this.subscriber.on('ready', () => {
        for (const ownerUserId of this.owners.keys()) this.ownerAnnounced(ownerUserId);
      });
      const types = [
        ...PUBLIC_AGGREGATE_TYPES,
        webhookSubscriptionDecider.aggregateType,
        userDecider.aggregateType,
      ];
      const channels = [...new Set(types)].map((type) => this.keys.aggregateChanges(type));
      this.subscriber.subscribe(...channels).catch((error: unknown) => {
        this.logger.warn('webhook dispatcher not subscribed to changes; polling', { error: String(error) });
      });
    }
    this.loopDone = this.loop();
  }

  /** Lets the attempts in flight end, gives the partitions back, and resolves. */
  async stop(): Promise<void> {
    this.running = false;
    this.pause.wake();
    await this.loopDone;
    await Promise.allSettled([...this.inFlight]);
    await this.subscriber?.quit().catch(() => this.subscriber?.disconnect());
    await this.leases.releaseAll();
  }

  private async loop(): Promise<void> {
    while (this.running) {
      try {
        const now = Date.now();
        if (now >= this.leases.nextBalanceAt) {
          await this.leases.balance();
          this.fullPassAt = 0;
          this.forgetCursorsNotOwned();
        }
        if (this.refreshDue || now - this.refreshedAt > this.options.refreshMs) {
          this.refreshDue = false;
          const announcedBefore = new Map(this.ownersAnnounced);
          this.subscriptions = await loadSubscriptions(
            { redis: this.redis, keys: this.keys, store: this.store },
            this.secrets,
            this.logger,
            now,
          );
          const ownerUserIds = new Set(this.subscriptions.map((subscription) => subscription.ownerUserId));
          await this.readOwners(ownerUserIds);
          for (const ownerUserId of this.owners.keys()) {
            if (!ownerUserIds.has(ownerUserId)) this.owners.delete(ownerUserId);
          }
          this.forgetLapsesPassed();
          // Read after every announcement counted before the read: those owners are known again.
          for (const [ownerUserId, count] of announcedBefore) {
            if (this.ownersAnnounced.get(ownerUserId) === count) this.ownersAnnounced.delete(ownerUserId);
          }
          this.suspendLapsed();
          this.signers = new Map(
            this.subscriptions.flatMap((subscription) =>
              subscription.secrets.map((secret) => [secret, this.signers.get(secret) ?? new Webhook(secret)]),
            ),
          );
          this.refreshedAt = now;
          this.fullPassAt = 0;
          this.forgetCursorsNotOwned();
        }
        this.startDueLanes();
        await this.idle();
      } catch (error) {
        this.logger.warn('webhook dispatcher pass failed', {
          error: error instanceof Error ? error.message : String(error),
        });
        await sleep(500);
      }
    }
  }

  /** Starts a step on every lane that is due and not already stepping. */
  private startDueLanes(): void {
    const now = Date.now();
    const full = now >= this.fullPassAt;
    if (full) this.fullPassAt = now + this.options.pollMs;
    const announced = this.announced;
    this.announced = new Set();
    const owned = [...this.leases.owned.values()];
    // A full pass looks at the log afresh (an announcement may have been lost).
    if (full) for (const { partition } of owned) this.reads.announced(partition);
    for (const subscription of this.subscriptions) {
      if (!subscription.enabled || !this.ownerQualifies(subscription)) continue;
      for (const { partition } of owned) {
        const lane = `${subscription.id}:${partition}`;
        if (this.busy.has(lane)) {
          // Appended after the step in flight read its batch: it steps again when it ends.
          if (announced.has(partition)) this.more.add(lane);
          continue;
        }
        const due = this.dueAt.get(lane);
        const waiting = due !== undefined && due > now;
        if (waiting) continue;
        if (!(full || announced.has(partition) || this.more.has(lane) || due !== undefined)) continue;
        this.dueAt.delete(lane);
        this.more.delete(lane);
        const step = this.step(subscription, partition, lane)
          .catch((error: unknown) => {
            this.logger.warn('webhook lane step failed', {
              subscriptionId: subscription.id,
              partition,
              error: error instanceof Error ? error.message : String(error),
            });
          })
          .finally(() => {
            this.busy.delete(lane);
            this.inFlight.delete(step);
            if (this.more.has(lane)) this.pause.wake();
          });
        this.busy.set(lane, step);
        this.inFlight.add(step);
      }
    }
  }

  /**
   * Resolves when the steps in flight on a partition given back have ended. Each stops before its
   * next entry once the partition is not owned, after moving its cursor past the attempt in hand
   * (bounded by WEBHOOK_TIMEOUT_MS); the lease is kept until then, so the replica taking the
   * partition over reads the moved cursor and sends nothing twice.
   */
  private async lanesSettled(partition: number): Promise<void> {
    const steps = [...this.busy]
      .filter(([lane]) => laneParts(lane).partition === String(partition))
      .map(([, step]) => step);
    await Promise.allSettled(steps);
  }

  /** Sleeps until an append is announced, a lane has more, a retry is due, or the next pass. */
  private async idle(): Promise<void> {
    if (this.announced.size > 0 || this.refreshDue || !this.running) return;
    if ([...this.more].some((lane) => !this.busy.has(lane))) return;
    const now = Date.now();
    // The lease renewal bounds the sleep too: pollMs or refreshMs above the lease must not let it lapse.
    let until = Math.min(
      this.fullPassAt,
      this.refreshedAt + this.options.refreshMs,
      this.leases.nextBalanceAt,
    );
    for (const due of this.dueAt.values()) until = Math.min(until, due);
    const pauseMs = this.subscriber ? Math.max(1, until - now) : Math.min(5, Math.max(1, until - now));
    await this.pause.for(pauseMs);
  }

  /**
   * Drops the cursors of lanes this replica no longer delivers: a partition another replica may
   * deliver now (read again from Redis when it comes back; the fence would catch a stale one, after
   * one needless duplicate), or a subscription deleted.
   */
  private forgetCursorsNotOwned(): void {
    const subscriptions = new Set(this.subscriptions.map((subscription) => subscription.id));
    for (const lane of this.cursors.keys()) {
      const { subscriptionId, partition } = laneParts(lane);
      const owned = this.leases.owned.has(`${CONSUMER.name}:${partition}`);
      if (!owned || !subscriptions.has(subscriptionId)) this.cursors.delete(lane);
    }
  }

  /** Moves a lane's cursor (fenced on `from`) and keeps the copy in step; false if fenced. */
  private async moveCursor(lane: string, key: string, from: string, to: Cursor): Promise<boolean> {
    const moved =
      (await this.redis.moveWebhookCursor(
        key,
        from,
        to.checkpoint,
        to.attempt,
        to.eventId,
        to.nextAt,
        to.replayId,
      )) === 1;
    if (moved) this.cursors.set(lane, to);
    else this.cursors.delete(lane);
    return moved;
  }

  private async readCursor(key: string): Promise<Cursor | null> {
    const [checkpoint, attempt, eventId, nextAt, replayId] = await this.redis.hmget(
      key,
      'checkpoint',
      'attempt',
      'eventId',
      'nextAt',
      'replayId',
    );
    if (!checkpoint) return null;
    return {
      checkpoint,
      attempt: Number(attempt ?? 0),
      eventId: eventId ?? '',
      nextAt: Number(nextAt ?? 0),
      replayId: replayId ?? '',
    };
  }

  /** A new subscription's lane starts with the events appended from its creation on. */
  private async place(subscription: ActiveSubscription, cursorKey: string): Promise<Cursor | null> {
    const start = justBefore(subscription.createdAtMs);
    const replayId = subscription.replay?.replayId ?? '';
    await this.redis.moveWebhookCursor(cursorKey, '', start, 0, '', 0, replayId);
    return this.readCursor(cursorKey);
  }

  /**
   * One step of a lane: place a new lane, apply a replay, then deliver the partition's entries
   * in order until it is caught up, an event waits for its retry, or a batch is done.
   */
  private async step(subscription: ActiveSubscription, partition: number, lane: string): Promise<void> {
    const cursorKey = this.keys.webhookCursor(subscription.id, partition);
    const known =
      this.cursors.get(lane) ??
      (await this.readCursor(cursorKey)) ??
      (await this.place(subscription, cursorKey));
    if (known === null) return;
    let cursor: Cursor = known;
    this.cursors.set(lane, cursor);
    if (subscription.replay && cursor.replayId !== subscription.replay.replayId) {
      const { replayId, fromMs } = subscription.replay;
      const replayed = { checkpoint: justBefore(fromMs), attempt: 0, eventId: '', nextAt: 0, replayId };
      if (!(await this.moveCursor(lane, cursorKey, cursor.checkpoint, replayed))) return;
      this.undelivered.delete(lane);
      cursor = replayed;
    }
    if (cursor.nextAt > Date.now()) {
      this.dueAt.set(lane, cursor.nextAt);
      return;
    }

    // Opened at every read (kept at most a second, dropped by the next append to the partition), so
    // an event held back by retries goes out as it reads after an erasure.
    const { entries, more, readAfter } = await this.reads.after(partition, cursor.checkpoint);
    if (entries.length === 0) return;
    // The version is read after the entries: an event appended after a disable (or delete) answered
    // is never sent, even before this replica's copy of the subscriptions has caught up. Likewise a
    // rotation or an update: the record's version says whether this copy is current.
    const current = await this.current(subscription, readAfter.get(this.versionKey(subscription.id)));
    // Likewise the owner: an event appended after its account was disabled, erased or lost Admin is
    // never sent, even if this replica missed the announcement.
    if (!current?.enabled || !(await this.ownerStillQualifies(current, readAfter))) {
      this.refreshDue = true;
      this.pause.wake();
      return;
    }
    subscription = current;
    for (const { id: entryId, event } of entries) {
      if (!this.running || !this.leases.owned.has(`${CONSUMER.name}:${partition}`)) return;
      // An owner's change announced meanwhile stops the lane before its next attempt.
      if (!this.ownerQualifies(subscription)) return;
      const payload = toPublicEvent(event);
      if (!payload || (subscription.eventTypes !== null && !subscription.eventTypes.has(event.eventType))) {
        continue; // Not for this subscription: passed over (the checkpoint moves with the next write).
      }
      // Skipped entries before this one are passed for good once this one is settled.
      const attempt = cursor.eventId === event.eventId ? cursor.attempt + 1 : 1;
      if (!this.undelivered.has(lane)) {
        this.undelivered.set(lane, { subscriptionId: subscription.id, sinceMs: entryTimeMs(entryId) });
      }
      const retries = this.settings.retryScheduleMs;
      const { result, status } = await this.deliver(subscription, event, attempt, JSON.stringify(payload));
      this.metrics?.recordWebhookAttempt(status, result.durationMs / 1000, subscription.id);
      // The log entry, the endpoint's health and the lane's position are independent writes: sent
      // together (one round trip on the auto-pipelining connection).
      const logged = this.deliveryLog.record(subscription.id, {
        eventId: event.eventId,
        eventType: event.eventType,
        attempt,
        at: new Date().toISOString(),
        status,
        httpStatus: result.httpStatus,
        error: result.error,
        durationMs: result.durationMs,
      });
      const health = this.noteHealth(subscription, result.ok);
      if (status === 'retrying') {
        const nextAt = Date.now() + withJitter(retries[attempt - 1] ?? 0);
        const waiting: Cursor = { ...cursor, attempt, eventId: event.eventId, nextAt };
        await Promise.all([logged, health, this.moveCursor(lane, cursorKey, cursor.checkpoint, waiting)]);
        this.dueAt.set(lane, nextAt);
        return;
      }
      if (status === 'failed') {
        this.logger.warn('webhook delivery given up', {
          subscriptionId: subscription.id,
          eventId: event.eventId,
          attempts: attempt,
        });
      }
      const settled: Cursor = { ...cursor, checkpoint: entryId, attempt: 0, eventId: '', nextAt: 0 };
      const [moved] = await Promise.all([
        this.moveCursor(lane, cursorKey, cursor.checkpoint, settled),
        logged,
        health,
      ]);
      if (!moved) return; // Another replica moved this lane on: it carries on from there.
      cursor = settled;
      this.undelivered.delete(lane);
    }
    // Entries passed over after the last delivery: the checkpoint moves past them too.
    const last = entries.at(-1)?.id;
    if (last !== undefined && last !== cursor.checkpoint && this.running) {
      const passed: Cursor = { ...cursor, checkpoint: last, attempt: 0, eventId: '', nextAt: 0 };
      if (await this.moveCursor(lane, cursorKey, cursor.checkpoint, passed)) this.undelivered.delete(lane);
    }
    if (more) this.more.add(lane);
  }

  /**
   * The subscription as its record is now: the copy given when its version is current. The version
   * comes from the partition read (read after its entries), or is read here when that read did not
   * know the subscription yet.
   */
  private async current(
    subscription: ActiveSubscription,
    versionReadAfter: number | undefined,
  ): Promise<ActiveSubscription | null> {
    const version =
      versionReadAfter ?? Number(await this.redis.hget(this.versionKey(subscription.id), 'version'));
    if (version === subscription.version) return subscription;
    this.refreshDue = true;
    return loadSubscription(
      { redis: this.redis, keys: this.keys, store: this.store },
      this.secrets,
      this.logger,
      subscription.id,
      Date.now(),
    );
  }

  /**
   * Every subscription's record version and its owner's, by record key, read together (one round
   * trip per node) after a partition read, for all the lanes that read serves.
   */
  private async readVersions(): Promise<ReadonlyMap<string, number>> {
    const recordKeys = [
      ...new Set(
        this.subscriptions.flatMap((subscription) => [
          this.versionKey(subscription.id),
          this.ownerKey(subscription.ownerUserId),
        ]),
      ),
    ];
    const versions = await Promise.all(recordKeys.map((key) => this.redis.hget(key, 'version')));
    return new Map(recordKeys.map((key, i) => [key, Number(versions[i])]));
  }

  private versionKey(subscriptionId: string): string {
    return this.keys.aggregateRecord(webhookSubscriptionDecider.aggregateType, subscriptionId);
  }

  private ownerKey(ownerUserId: string): string {
    return this.keys.aggregateRecord(userDecider.aggregateType, ownerUserId);
  }

  /** An owner's account change was announced: its subscriptions wait until it is read again. */
  private ownerAnnounced(ownerUserId: string): void {
    this.ownersAnnounced.set(ownerUserId, (this.ownersAnnounced.get(ownerUserId) ?? 0) + 1);
    this.refreshDue = true;
    this.pause.wake();
  }

  /**
   * Reads owners' accounts (in their current shape); keeps each as read unless a newer version was
   * read meanwhile (by a lane).
   */
  private async readOwners(ownerUserIds: Iterable<string>): Promise<void> {
    const ids = [...ownerUserIds];
    const records = await Promise.all(
      ids.map((id) => this.store.loadRecord(userDecider.aggregateType, id, userDecider.initialState)),
    );
    await Promise.all(
      ids.map(async (id, i) => {
        const read = records[i] as { version: number; state: UserState };
        // The lapses are noted before the newer state is kept: the gate never sees it without them.
        await this.noteLapses(id, read.version);
        const known = this.owners.get(id);
        if (!known || read.version >= known.version) this.owners.set(id, read);
      }),
    );
  }

  /**
   * Notes the lapses among the owner's states after the version known (all of them when none is)
   * up to `version`: one read of those events, only when the account changed.
   */
  private async noteLapses(ownerUserId: string, version: number): Promise<void> {
    const known = this.owners.get(ownerUserId);
    const from = known ? known.version + 1 : 1;
    if (version < from) return;
    const events = await this.store.readVersions(userDecider.aggregateType, ownerUserId, from, version);
    let state = known ? known.state : userDecider.initialState;
    const states = events.map((event) => {
      state = userDecider.evolve(state, { type: event.eventType, data: event.data } as UserEvent);
      return { state, version: event.version, at: event.occurredAt };
    });
    const lapses = lapsesAmong(ownerUserId, states);
    if (lapses.length === 0) return;
    const seen = this.lapsesSeen.get(ownerUserId) ?? [];
    const fresh = lapses.filter((lapse) => !seen.some((entry) => entry.version === lapse.version));
    this.lapsesSeen.set(ownerUserId, [...seen, ...fresh]);
  }

  /**
   * Forgets the lapses no subscription can be suspended on any more: of owners no longer read, or
   * older than every ownership of theirs (each an Admin's take-over since).
   */
  private forgetLapsesPassed(): void {
    for (const [ownerUserId, seen] of this.lapsesSeen) {
      const owned = this.subscriptions.filter(
        (subscription) => subscription.ownerUserId === ownerUserId && subscription.enabled,
      );
      const kept = seen.filter((entry) => owned.some((subscription) => lapsedAfter(subscription, entry)));
      if (kept.length === 0) this.lapsesSeen.delete(ownerUserId);
      else this.lapsesSeen.set(ownerUserId, kept);
    }
  }

  /** The first lapse of the owner's seen since the subscription's ownership began; null if none. */
  private lapseSeen(subscription: ActiveSubscription): OwnerLapse | null {
    return lapseSince(subscription, this.lapsesSeen.get(subscription.ownerUserId) ?? []);
  }

  /** Why the subscription's owner no longer qualifies; null when it does; 'unknown' before a read. */
  private lapseOf(subscription: ActiveSubscription): OwnerLapse | 'unknown' | null {
    const owner = this.owners.get(subscription.ownerUserId);
    return owner ? ownerLapse(subscription, owner.state) : 'unknown';
  }

  /**
   * The gate every delivery passes: the owner, as last read, holds the subscription's authority, it
   * lapsed in none of the states read since the ownership began, and no change of its account was
   * announced since.
   */
  private ownerQualifies(subscription: ActiveSubscription): boolean {
    return (
      !this.ownersAnnounced.has(subscription.ownerUserId) &&
      this.lapseOf(subscription) === null &&
      this.lapseSeen(subscription) === null
    );
  }

  /**
   * The gate after a partition read: the owner's record version read after the entries (or now) is
   * the one the gate knows, else the account is read again first.
   */
  private async ownerStillQualifies(
    subscription: ActiveSubscription,
    readAfter: ReadonlyMap<string, number>,
  ): Promise<boolean> {
    const key = this.ownerKey(subscription.ownerUserId);
    const version = readAfter.get(key) ?? Number(await this.redis.hget(key, 'version'));
    if (this.owners.get(subscription.ownerUserId)?.version !== version) {
      await this.readOwners([subscription.ownerUserId]);
    }
    return this.ownerQualifies(subscription);
  }

  /**
   * Appends a suspension to every enabled subscription whose owner lapsed, now or at any state read
   * since its ownership began, naming the first lapse seen (the gate already holds them back).
   * Replicas race to do it: the decider refuses all but the first, which is harmless.
   */
  private suspendLapsed(): void {
    for (const subscription of this.subscriptions) {
      const lapse = this.lapseSeen(subscription) ?? this.lapseOf(subscription);
      if (!subscription.enabled || lapse === null || lapse === 'unknown') continue;
      if (this.suspending.has(subscription.id)) continue;
      this.suspending.add(subscription.id);
      const suspension = this.suspend(subscription, lapse)
        .catch((error: unknown) => {
          this.logger.warn('webhook subscription not suspended; tried again at the next refresh', {
            subscriptionId: subscription.id,
            error: error instanceof Error ? error.message : String(error),
          });
        })
        .finally(() => {
          this.suspending.delete(subscription.id);
          this.inFlight.delete(suspension);
        });
      this.inFlight.add(suspension);
    }
  }

  private async suspend(subscription: ActiveSubscription, lapse: OwnerLapse): Promise<void> {
    const { ownerUserId } = subscription;
    const reason = ownerLapseReason(ownerUserId, lapse);
    const outcome = await this.commands.handle(webhookSubscriptionDecider, {
      aggregateId: subscription.id,
      command: { type: 'SuspendWebhookSubscription', data: { ownerUserId, reason } },
      context: { now: new Date(), actorUserId: SYSTEM_ACTOR.userId, actorRoles: SYSTEM_ACTOR.roles },
      metadata: { actorUserId: SYSTEM_ACTOR.userId, requestId: null, correlationId: 'webhook-owner-lapse' },
    });
    // Refused: another replica suspended it first, or an Admin disabled or took it over meanwhile.
    if (outcome.accepted) {
      this.metrics?.recordWebhookSubscriptionStopped('suspended');
      this.logger.warn('webhook subscription suspended: its owner lapsed', {
        subscriptionId: subscription.id,
        ownerUserId,
        reason,
      });
    }
    this.refreshDue = true;
    this.pause.wake();
  }

  /**
   * One attempt at an event, in the trace the event was written in when it carries one: a client
   * span, the command's child, whose context the request carries on (`traceparent`), so a receiver
   * that traces joins the trace. The span names no URL (it may carry the receiver's token).
   */
  private deliver(
    subscription: ActiveSubscription,
    event: EventEnvelope,
    attempt: number,
    body: string,
  ): Promise<{ result: AttemptResult; status: DeliveryStatus }> {
    const attributes = (): Attributes => ({
      'http.request.method': 'POST',
      'fts.webhook.subscription.id': subscription.id,
      'fts.event.id': event.eventId,
      'fts.event.type': event.eventType,
      'fts.webhook.attempt': attempt,
    });
    return inEventSpan(
      'webhook POST',
      event.metadata.traceparent,
      attributes,
      async (span) => {
        const result = await this.attempt(subscription, event.eventId, body);
        const status: DeliveryStatus = result.ok
          ? 'delivered'
          : attempt > this.settings.retryScheduleMs.length
            ? 'failed'
            : 'retrying';
        if (span.isRecording()) {
          span.setAttribute('fts.webhook.outcome', status);
          if (result.httpStatus !== null) span.setAttribute('http.response.status_code', result.httpStatus);
          if (result.error !== null) {
            // The failure's class, as the delivery log has it: never an address or the error's text.
            span.setAttribute('error.type', result.error);
            span.setStatus({ code: SpanStatusCode.ERROR, message: result.error });
          }
        }
        return { result, status };
      },
      SpanKind.CLIENT,
    );
  }

  /** One signed POST: a fresh webhook-timestamp, one v1 signature per secret that signs now. */
  private attempt(subscription: ActiveSubscription, eventId: string, body: string): Promise<AttemptResult> {
    const timestamp = new Date();
    const signature = subscription.secrets
      .map((secret) => (this.signers.get(secret) ?? new Webhook(secret)).sign(eventId, timestamp, body))
      .join(' ');
    const headers: Record<string, string> = {
      'webhook-id': eventId,
      'webhook-timestamp': String(Math.floor(timestamp.getTime() / 1000)),
      'webhook-signature': signature,
    };
    // The active span's context (the delivery span's, when the event carries a sampled trace; none
    // otherwise), set by hand: the http instrumentation leaves outgoing requests alone (tracing-sdk.ts).
    // Outside the signature: the signed content is the id, timestamp and body only.
    if (tracingOn()) propagation.inject(context.active(), headers);
    return this.sender.send(subscription.url, headers, body);
  }

  /**
   * Keeps when the endpoint's current run of failures began; a success ends it. A run longer
   * than disableAfterMs disables the subscription (an event says so).
   */
  private async noteHealth(subscription: ActiveSubscription, ok: boolean): Promise<void> {
    const key = this.keys.webhookHealth(subscription.id);
    if (ok) {
      // A success ends the run of failures (another replica's too): cleared at most once a second
      // per subscription, not once per delivery.
      const now = Date.now();
      if (now - (this.healthClearedAt.get(subscription.id) ?? 0) < 1_000) return;
      this.healthClearedAt.set(subscription.id, now);
      await this.redis.hdel(key, 'failingSince');
      return;
    }
    this.healthClearedAt.delete(subscription.id);
    const now = Date.now();
    await this.redis.hsetnx(key, 'failingSince', String(now));
    const since = Number((await this.redis.hget(key, 'failingSince')) ?? now);
    if (now - since < this.settings.disableAfterMs || this.disabling.has(subscription.id)) return;
    this.disabling.add(subscription.id);
    try {
      const outcome = await this.commands.handle(webhookSubscriptionDecider, {
        aggregateId: subscription.id,
        command: {
          type: 'DisableWebhookSubscription',
          data: {
            reason: `Every delivery failed for ${Math.round((now - since) / 60_000)} minutes`,
            automatic: true,
          },
        },
        context: { now: new Date(now), actorUserId: SYSTEM_ACTOR.userId, actorRoles: SYSTEM_ACTOR.roles },
        metadata: {
          actorUserId: SYSTEM_ACTOR.userId,
          requestId: null,
          correlationId: 'webhook-auto-disable',
        },
      });
      if (outcome.accepted) {
        this.metrics?.recordWebhookSubscriptionStopped('disabled');
        await this.redis.hdel(key, 'failingSince');
        this.logger.warn('webhook subscription disabled: every delivery failed too long', {
          subscriptionId: subscription.id,
        });
      }
      this.refreshDue = true;
    } finally {
      this.disabling.delete(subscription.id);
    }
  }

  /** Per subscription, the age in seconds of its oldest event not yet delivered (this replica's lanes). */
  private backlogAges(): ReadonlyMap<string, number> {
    const now = Date.now();
    const ages = new Map<string, number>();
    for (const subscription of this.subscriptions) ages.set(subscription.id, 0);
    for (const { subscriptionId, sinceMs } of this.undelivered.values()) {
      ages.set(subscriptionId, Math.max(ages.get(subscriptionId) ?? 0, (now - sinceMs) / 1000));
    }
    return ages;
  }

  /** For tests: how many partitions this replica delivers now. */
  get ownedPartitions(): number {
    return this.leases.owned.size;
  }
}

/** Up to 10% more, so retries of many endpoints that failed together spread out. */
function withJitter(ms: number): number {
  return Math.round(ms * (1 + Math.random() * 0.1));
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
