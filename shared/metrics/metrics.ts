import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';

import type { CommandHandlerHooks } from '../event-store/handle-command';
import type { EventStreamMetrics, StreamEnd } from '../event-stream/stream-metrics';
import type { FinishedImport } from '../importers/import-processor';
import type { QueueDepthSample } from '../importers/import-queue';
import type { Logger } from '../logger';

/** How far one projection is behind the head of one log partition (the worker's projector measures it). */
export interface ProjectorLag {
  readonly projection: string;
  readonly partition: number;
  /** Log entries appended to the partition that the projection has not applied yet. */
  readonly entriesBehind: number;
}

/** Every metric name starts with it, the process and Node.js defaults included. */
export const METRIC_PREFIX = 'fts_';

/**
 * The label value of a query, command or importer type the service does not know, and of a
 * request no route matched: labels only ever hold values the code defines, so a caller cannot
 * grow the number of series by sending made-up names.
 */
export const UNKNOWN_LABEL = 'unknown';

/** Where an import ran: inline in the ingress (High on an idle queue) or in a worker. */
export type ImportMode = 'inline' | 'queued';

/** A Redis client as the connection gauge reads it (ioredis' Redis and Cluster both have it). */
export interface ConnectionStatus {
  readonly status: string;
}

export interface HttpRequestLabels {
  readonly method: string;
  /** The route template (`/api/readmodel`), never the raw URL. */
  readonly route: string;
  /** The query, command or importer type, when the route has one. */
  readonly operation?: string;
  readonly status: number;
}

/** How a sign-in that needed a password check ended (cached sign-ins are not counted). */
export type SignInOutcome = 'succeeded' | 'failed' | 'throttled' | 'busy';

/** What the account rate limit (ingress/auth) reports; Metrics implements it. */
export interface RateLimitMetrics {
  /** A request admitted uncounted: the master of its account's counter was away (ADR 0030). */
  recordRateLimitFailOpen(): void;
}

/**
 * How a read that had to wait for a version (minVersion) ended: the version seen, PROJECTION_BEHIND
 * after READ_WAIT_MS, or refused at once (too many waiting, or the ingress closing).
 */
export type ReadWaitOutcome = 'seen' | 'behind' | 'refused';

/** What reads waiting for a version (ingress/readmodel) report; Metrics implements it. */
export interface ReadWaitMetrics {
  recordReadWait(projection: string, outcome: ReadWaitOutcome, seconds: number): void;
}

/** What the sign-in path (ingress/auth) reports; Metrics implements it. */
export interface SignInMetrics {
  recordSignIn(outcome: SignInOutcome): void;
  /** One account's failures from all addresses passed AUTH_ACCOUNT_WARNING_FAILURES in the window. */
  recordAccountUnderAttack(): void;
  /** Reads the verifications running or waiting in this process on every scrape. */
  collectPendingVerifications(source: () => number): void;
}

/** Why the dispatcher stopped a webhook subscription's deliveries. */
const WEBHOOK_STOP_REASONS = ['suspended', 'disabled'] as const;
export type WebhookStopReason = (typeof WEBHOOK_STOP_REASONS)[number];

/** One Redis server's memory, as INFO memory reports it. */
export interface RedisMemorySample {
  /** host:port, as the connection knows the server. */
  readonly node: string;
  readonly usedBytes: number;
  /** 0 when the server has no limit. */
  readonly maxBytes: number;
}

// Buckets in seconds. HTTP: a cached query takes about a millisecond, an inline import seconds.
const HTTP_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
// An uncontended lock is one round trip (sub-millisecond); LOCK_WAIT_MS (2 s) is the cap.
const LOCK_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];
// Imports: one argon2 hash per user makes a 10,000-user import take minutes.
const IMPORT_BUCKETS = [0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600];
const ROWS_PER_SECOND_BUCKETS = [1, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000];

/**
 * The service's metrics: one Prometheus registry per process (not prom-client's global one, so
 * tests can build several apps in one process), every metric defined here once (names, help,
 * labels, buckets), recorded through methods named for what happened. Values read from Redis
 * (projector lag, queue depth) and connection states are collected when scraped, never polled.
 */
export class Metrics implements SignInMetrics, EventStreamMetrics, RateLimitMetrics, ReadWaitMetrics {
  readonly registry = new Registry();

  private readonly httpRequestDuration = new Histogram({
    name: `${METRIC_PREFIX}http_request_duration_seconds`,
    help: 'HTTP requests by method, route template, query/command/importer type and status.',
    labelNames: ['method', 'route', 'operation', 'status'] as const,
    buckets: HTTP_BUCKETS,
    registers: [this.registry],
  });

  private readonly commandAnswers = new Counter({
    name: `${METRIC_PREFIX}commands_total`,
    help: 'POST /api/command answers by command type and outcome (success or the errorCode).',
    labelNames: ['command_type', 'outcome'] as const,
    registers: [this.registry],
  });

  private readonly lockWait = new Histogram({
    name: `${METRIC_PREFIX}lock_wait_seconds`,
    help: 'Time to take an aggregate lock (or to give up: outcome busy), the taking round trip included.',
    labelNames: ['aggregate_type', 'outcome'] as const,
    buckets: LOCK_BUCKETS,
    registers: [this.registry],
  });

  private readonly eventsAppended = new Counter({
    name: `${METRIC_PREFIX}events_appended_total`,
    help: 'Events appended to the event store by this process.',
    labelNames: ['aggregate_type', 'event_type'] as const,
    registers: [this.registry],
  });

  private readonly writesUnconfirmed = new Counter({
    name: `${METRIC_PREFIX}writes_unconfirmed_total`,
    help: 'Appends applied on the master that no replica confirmed in time (WRITE_DURABILITY=replicated; reason unreplicated) or whose WAIT got no answer (unanswered): each answered 503, "may have taken effect".',
    labelNames: ['aggregate_type', 'reason'] as const,
    registers: [this.registry],
  });

  private readonly importDuration = new Histogram({
    name: `${METRIC_PREFIX}import_duration_seconds`,
    help: 'Imports run to their end by this process, by importer, final status and where they ran.',
    labelNames: ['importer_type', 'status', 'mode'] as const,
    buckets: IMPORT_BUCKETS,
    registers: [this.registry],
  });

  private readonly importRows = new Counter({
    name: `${METRIC_PREFIX}import_rows_total`,
    help: 'Rows of the imports this process ran to their end.',
    labelNames: ['importer_type', 'status', 'mode'] as const,
    registers: [this.registry],
  });

  private readonly importRowsPerSecond = new Histogram({
    name: `${METRIC_PREFIX}import_rows_per_second`,
    help: 'Throughput of each import this process ran to its end: its rows over its duration.',
    labelNames: ['importer_type', 'mode'] as const,
    buckets: ROWS_PER_SECOND_BUCKETS,
    registers: [this.registry],
  });

  private readonly signIns = new Counter({
    name: `${METRIC_PREFIX}auth_sign_ins_total`,
    help: 'Sign-ins that needed a password check, by outcome: succeeded, failed (wrong e-mail or password), throttled (429) or busy (503, too many verifications at once).',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });

  // No account label: a caller could grow the series by naming accounts. The log line names it.
  private readonly accountsUnderAttack = new Counter({
    name: `${METRIC_PREFIX}auth_accounts_under_attack_total`,
    help: "Times one account's failed sign-ins from all addresses reached AUTH_ACCOUNT_WARNING_FAILURES within the window (each logged with the user id).",
    registers: [this.registry],
  });

  private readonly rateLimitFailOpen = new Counter({
    name: `${METRIC_PREFIX}rate_limit_fail_open_total`,
    help: "Requests the account rate limit admitted without counting them, because the master holding the account's counter was away (a failover): at most a tenth of the account's limit per window and process.",
    registers: [this.registry],
  });

  private readonly eventStreamsOpen = new Gauge({
    name: `${METRIC_PREFIX}event_streams_open`,
    help: 'Event streams (GET /api/events) open in this process.',
    registers: [this.registry],
  });

  private readonly eventStreamsClosed = new Counter({
    name: `${METRIC_PREFIX}event_streams_closed_total`,
    help: 'Event streams ended, by reason: client (it disconnected), slow (it read nothing for SSE_SLOW_CLIENT_TIMEOUT_MS), shutdown, error (Redis failed mid-stream), revoked (the account was disabled or deleted, lost its role, or its credentials were revoked).',
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });

  private readonly eventStreamEvents = new Counter({
    name: `${METRIC_PREFIX}event_stream_events_sent_total`,
    help: 'Events written to event streams (one per event per stream).',
    registers: [this.registry],
  });

  private readonly connections = new Map<string, ConnectionStatus>();
  private pendingVerificationsSource: (() => number) | undefined;
  private projectorLagSource: (() => Promise<readonly ProjectorLag[]>) | undefined;
  private queueDepthSource: (() => Promise<readonly QueueDepthSample[]>) | undefined;

  private readonly webhookAttempts = new Counter({
    name: `${METRIC_PREFIX}webhook_deliveries_total`,
    help: 'Webhook delivery attempts by outcome: delivered (2xx), retrying (failed, retried later), failed (given up).',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });

  /**
   * How long one projector pass took (the passes that read something). A change announced during a
   * pass is read by the next one, so a read waiting for its version (minVersion) waits for up to two:
   * passes of 0.5 s while the users projection caught up an import were what issue 43's 2 s waits
   * were made of, and the entries-behind gauge alone does not say how long a change waits.
   */
  private readonly projectorPassDuration = new Histogram({
    name: `${METRIC_PREFIX}projector_pass_duration_seconds`,
    help: 'How long one projector pass took (passes that read at least one partition); a change announced during a pass waits for it.',
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [this.registry],
  });

  /**
   * Reads that had to wait for a version (minVersion), by projection and outcome. Issue 43: reads
   * answered PROJECTION_BEHIND after 2 s while the projector's lag (a few entries) and its passes
   * (short) showed nothing: a long delivery-log read held Redis and the ingress. This is what the
   * caller saw.
   */
  private readonly readWaitDuration = new Histogram({
    name: `${METRIC_PREFIX}read_wait_seconds`,
    help: 'Reads that waited for a version (minVersion), from their first read to their answer, by projection and outcome: seen, behind (PROJECTION_BEHIND after READ_WAIT_MS), refused (too many waiting, or closing).',
    labelNames: ['projection', 'outcome'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10],
    registers: [this.registry],
  });

  private readonly webhookAttemptDuration = new Histogram({
    name: `${METRIC_PREFIX}webhook_attempt_duration_seconds`,
    help: 'How long one webhook delivery attempt took, connect to response (or error).',
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [this.registry],
  });

  /**
   * Failed attempts per subscription (a label, unlike `webhook_deliveries_total`'s outcomes): which
   * endpoint fails, and how often. Subscriptions are a small set Admins create, so the series are
   * bounded; they are the subscriptions the dispatcher knows (the lag gauge's), each from 0, so a
   * first failure shows as a rise, and a deleted subscription's series goes at the next scrape.
   */
  private readonly webhookFailedAttempts: Counter<'subscription'> = new Counter({
    name: `${METRIC_PREFIX}webhook_failed_attempts_total`,
    help: 'Per webhook subscription: delivery attempts that got no 2xx (retried later or given up).',
    labelNames: ['subscription'] as const,
    registers: [this.registry],
    collect: () => this.alignWebhookSeries(),
  });

  /** The subscriptions with a failed-attempts series. */
  private readonly webhookSeries = new Set<string>();

  /**
   * Counted by the replica whose command was accepted, so once per subscription across replicas.
   * Either way deliveries stop until an Admin acts: the alert an operator needs (alerts.yml).
   */
  private readonly webhookSubscriptionsStopped: Counter<'reason'> = new Counter({
    name: `${METRIC_PREFIX}webhook_subscriptions_stopped_total`,
    help: 'Webhook subscriptions this worker stopped, by reason: suspended (its owner was disabled, deleted or lost the role) or disabled (every delivery failed for WEBHOOK_DISABLE_AFTER_MS).',
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });

  private redisMemorySource: (() => Promise<readonly RedisMemorySample[]>) | undefined;

  private webhookBacklogSource: (() => ReadonlyMap<string, number>) | undefined;

  constructor(private readonly logger?: Logger) {
    const webhookBacklog: Gauge<'subscription'> = new Gauge({
      name: `${METRIC_PREFIX}webhook_oldest_undelivered_seconds`,
      help: 'Per webhook subscription: the age of its oldest event this worker has not delivered yet (0: caught up).',
      labelNames: ['subscription'] as const,
      registers: [this.registry],
      collect: () => {
        webhookBacklog.reset();
        for (const [subscription, age] of this.webhookBacklogSource?.() ?? []) {
          webhookBacklog.set({ subscription }, age);
        }
      },
    });

    collectDefaultMetrics({ register: this.registry, prefix: METRIC_PREFIX });

    const connectionUp: Gauge<'connection'> = new Gauge({
      name: `${METRIC_PREFIX}redis_connection_up`,
      help: 'Whether each Redis connection of this process is ready (1) or not (0).',
      labelNames: ['connection'] as const,
      registers: [this.registry],
      collect: () => {
        for (const [name, client] of this.connections) {
          connectionUp.set({ connection: name }, client.status === 'ready' ? 1 : 0);
        }
      },
    });

    const pendingVerifications: Gauge = new Gauge({
      name: `${METRIC_PREFIX}auth_pending_verifications`,
      help: 'Password verifications running or waiting for a hashing thread in this process (at most AUTH_MAX_PENDING_VERIFICATIONS).',
      registers: [this.registry],
      collect: () => {
        const source = this.pendingVerificationsSource;
        if (source) pendingVerifications.set(source());
      },
    });

    const projectorLag: Gauge<'projection' | 'partition'> = new Gauge({
      name: `${METRIC_PREFIX}projector_lag_events`,
      help: 'Log entries appended to a partition that a projection has not applied yet.',
      labelNames: ['projection', 'partition'] as const,
      registers: [this.registry],
      collect: () =>
        this.collectFrom('projector lag', projectorLag, this.projectorLagSource, (lag) => {
          projectorLag.set(
            { projection: lag.projection, partition: String(lag.partition) },
            lag.entriesBehind,
          );
        }),
    });

    // Two gauges rather than a ratio: a server without maxmemory (0) has no ratio, and an alert
    // divides them itself (deploy/prometheus/alerts.yml).
    const redisMemoryUsed: Gauge<'node'> = new Gauge({
      name: `${METRIC_PREFIX}redis_memory_used_bytes`,
      help: "Each Redis server's used_memory (every master of a cluster), read at scrape time (workers).",
      labelNames: ['node'] as const,
      registers: [this.registry],
      collect: () =>
        this.collectFrom('redis memory', redisMemoryUsed, this.redisMemorySource, (sample) => {
          redisMemoryUsed.set({ node: sample.node }, sample.usedBytes);
        }),
    });
    const redisMemoryMax: Gauge<'node'> = new Gauge({
      name: `${METRIC_PREFIX}redis_memory_max_bytes`,
      help: "Each Redis server's maxmemory (0: no limit), read at scrape time (workers).",
      labelNames: ['node'] as const,
      registers: [this.registry],
      collect: () =>
        this.collectFrom('redis maxmemory', redisMemoryMax, this.redisMemorySource, (sample) => {
          redisMemoryMax.set({ node: sample.node }, sample.maxBytes);
        }),
    });

    const queueJobs: Gauge<'state' | 'priority'> = new Gauge({
      name: `${METRIC_PREFIX}import_queue_jobs`,
      help: 'Jobs of the import queue by BullMQ state; waiting ones (prioritized) also by priority.',
      labelNames: ['state', 'priority'] as const,
      registers: [this.registry],
      collect: () =>
        this.collectFrom('import queue depth', queueJobs, this.queueDepthSource, (sample) => {
          queueJobs.set(
            sample.priority ? { state: sample.state, priority: sample.priority } : { state: sample.state },
            sample.jobs,
          );
        }),
    });
  }

  /**
   * Refreshes a gauge from its source at scrape time. A failed read (Redis away) leaves the gauge
   * without samples rather than with stale ones; `redis_connection_up` says why.
   */
  private async collectFrom<Sample>(
    what: string,
    gauge: Gauge<string>,
    source: (() => Promise<readonly Sample[]>) | undefined,
    set: (sample: Sample) => void,
  ): Promise<void> {
    if (!source) return;
    gauge.reset();
    try {
      for (const sample of await source()) set(sample);
    } catch (error) {
      this.logger?.debug('metrics not collected', {
        metric: what,
        error: error instanceof Error ? error.message : String(error),
      });
    }
  }

  /** The exposition text of every metric, and its content type. */
  async exposition(): Promise<{ readonly contentType: string; readonly text: string }> {
    return { contentType: this.registry.contentType, text: await this.registry.metrics() };
  }

  recordHttpRequest(labels: HttpRequestLabels, seconds: number): void {
    const { method, route, operation } = labels;
    const status = String(labels.status);
    // One label object per answer, without an operation label where the route has none.
    this.httpRequestDuration.observe(
      operation === undefined ? { method, route, status } : { method, route, status, operation },
      seconds,
    );
  }

  /** A command answer: `commandType` null when unknown, `errorCode` undefined on success. */
  recordCommandAnswer(commandType: string | null, errorCode: string | undefined): void {
    this.commandAnswers.inc({ command_type: commandType ?? UNKNOWN_LABEL, outcome: errorCode ?? 'success' });
  }

  recordImport(mode: ImportMode, finished: FinishedImport): void {
    const importerType = finished.importerType ?? UNKNOWN_LABEL;
    const labels = { importer_type: importerType, status: finished.status, mode };
    this.importDuration.observe(labels, finished.durationSeconds);
    this.importRows.inc(labels, finished.rows);
    if (finished.rows > 0) {
      // A millisecond floor: a tiny import timed at 0 ms must not read as infinitely fast.
      const rate = finished.rows / Math.max(finished.durationSeconds, 0.001);
      this.importRowsPerSecond.observe({ importer_type: importerType, mode }, rate);
    }
  }

  recordSignIn(outcome: SignInOutcome): void {
    this.signIns.inc({ outcome });
  }

  recordAccountUnderAttack(): void {
    this.accountsUnderAttack.inc();
  }

  recordRateLimitFailOpen(): void {
    this.rateLimitFailOpen.inc();
  }

  eventStreamOpened(): void {
    this.eventStreamsOpen.inc();
  }

  eventStreamClosed(reason: StreamEnd): void {
    this.eventStreamsOpen.dec();
    this.eventStreamsClosed.inc({ reason });
  }

  eventStreamEventsSent(count: number): void {
    this.eventStreamEvents.inc(count);
  }

  collectPendingVerifications(source: () => number): void {
    this.pendingVerificationsSource = source;
  }

  /** Hooks that record lock waits and appended events of every command the handler runs. */
  commandHandlerHooks(): Required<
    Pick<CommandHandlerHooks, 'lockWaited' | 'eventsAppended' | 'writeUnconfirmed'>
  > {
    return {
      lockWaited: (aggregateType, waitedSeconds, acquired) => {
        this.lockWait.observe(
          { aggregate_type: aggregateType, outcome: acquired ? 'acquired' : 'busy' },
          waitedSeconds,
        );
      },
      eventsAppended: (aggregateType, events) => {
        for (const event of events) {
          this.eventsAppended.inc({ aggregate_type: aggregateType, event_type: event.eventType });
        }
      },
      writeUnconfirmed: (aggregateType, reason) => {
        this.writesUnconfirmed.inc({ aggregate_type: aggregateType, reason });
      },
    };
  }

  /** Reports `client`'s state as `redis_connection_up{connection=name}` on every scrape. */
  watchConnection(name: string, client: ConnectionStatus): void {
    this.connections.set(name, client);
  }

  /** Reads projector lag on every scrape (workers). */
  collectProjectorLag(source: () => Promise<readonly ProjectorLag[]>): void {
    this.projectorLagSource = source;
  }

  recordProjectorPass(seconds: number): void {
    this.projectorPassDuration.observe(seconds);
  }

  recordReadWait(projection: string, outcome: ReadWaitOutcome, seconds: number): void {
    this.readWaitDuration.observe({ projection, outcome }, seconds);
  }

  recordWebhookAttempt(outcome: string, seconds: number, subscription: string): void {
    this.webhookAttempts.inc({ outcome });
    this.webhookAttemptDuration.observe(seconds);
    if (outcome === 'delivered') return;
    this.webhookFailedAttempts.inc({ subscription });
    this.webhookSeries.add(subscription);
  }

  /** One failed-attempts series per subscription the dispatcher knows now: new ones at 0, gone ones dropped. */
  private alignWebhookSeries(): void {
    const source = this.webhookBacklogSource;
    if (!source) return;
    const known = source();
    for (const subscription of this.webhookSeries) {
      if (known.has(subscription)) continue;
      this.webhookFailedAttempts.remove({ subscription });
      this.webhookSeries.delete(subscription);
    }
    for (const subscription of known.keys()) {
      if (this.webhookSeries.has(subscription)) continue;
      this.webhookFailedAttempts.inc({ subscription }, 0);
      this.webhookSeries.add(subscription);
    }
  }

  /** Reads each webhook subscription's oldest undelivered event's age on every scrape (workers). */
  collectWebhookBacklog(source: () => ReadonlyMap<string, number>): void {
    this.webhookBacklogSource = source;
    // From 0 where webhooks are delivered: a series born at 1 shows no increase, and the first
    // stopped subscription would not fire its alert (deploy/prometheus/alerts.yml).
    for (const reason of WEBHOOK_STOP_REASONS) this.webhookSubscriptionsStopped.inc({ reason }, 0);
  }

  recordWebhookSubscriptionStopped(reason: WebhookStopReason): void {
    this.webhookSubscriptionsStopped.inc({ reason });
  }

  /** Reads each Redis server's memory use and limit on every scrape (workers). */
  collectRedisMemory(source: () => Promise<readonly RedisMemorySample[]>): void {
    this.redisMemorySource = source;
  }

  /** Reads the import queue's depth on every scrape (workers). */
  collectImportQueueDepth(source: () => Promise<readonly QueueDepthSample[]>): void {
    this.queueDepthSource = source;
  }
}
