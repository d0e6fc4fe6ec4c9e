import { randomUUID } from 'node:crypto';

import { isRedisUnavailable } from '../redis/connections';
import { inSpan, sampledTraceparent } from '../tracing/spans';
import type { Decider, DecisionContext, DomainEvent, RejectionKind } from './decider';
import type { EventEnvelope, EventMetadata } from './envelope';
import {
  AppendOutcomeUnknownError,
  ExpectedVersionMismatchError,
  type OutcomeUnknownReason,
  StaleAppendError,
} from './errors';
import { type AppendRequest, type EventStore, requestRecordField } from './event-store';
import { type LockOptions, lockToken, waitForLock } from './lock';
import { LOCAL_DURABILITY, type WriteDurability } from './write-durability';

/**
 * Steps of a rule kept beside the aggregate (in keys of its own) that must change with it, so they
 * run while its lock is held: after the decision and before the append, and after the append before
 * the lock goes (the enabled Admins, ADR 0014). `state` is the aggregate as locked, `next` as the
 * decision leaves it.
 */
export interface StepsUnderLock<State> {
  /** Before the append: a message refuses the command (answered as the decider's rules are). */
  beforeAppend(state: State, next: State): Promise<string | undefined>;
  /** After the append was written, before the lock is released. */
  afterAppend(state: State, next: State): Promise<void>;
  /** The append did not write (refused, or failed before it ran): undo what beforeAppend did. */
  notWritten(state: State, next: State): Promise<void>;
}

export interface CommandInput<Command, State = unknown> {
  readonly aggregateId: string;
  readonly command: Command;
  /** The caller's optimistic-concurrency check: 0 or absent means none. */
  readonly expectedVersion?: number;
  readonly context: DecisionContext;
  readonly metadata: EventMetadata;
  /** Private record fields written with the events if the command is accepted (a credential). */
  readonly attachments?: Readonly<Record<string, string>>;
  /**
   * Private record fields removed with the events if the command is accepted, in the same atomic
   * append and before `attachments` are written: DeleteUser drops the credential and the
   * personal-data key, which erases the account's sealed fields (ADR 0014).
   */
  readonly removeAttachments?: readonly string[];
  /**
   * The caller's request id, when a retry must not apply the command twice: the append records it
   * with the aggregate (REQUEST_ID_WINDOW_MS), so a later attempt with that id gets the first one's
   * events back, even if that one appended and then lost its answer. Recorded per caller
   * (`context.actorUserId`): another account's same id is decided on its own. Imports leave it
   * unset; their commands are idempotent by correlation id.
   */
  readonly requestId?: string;
  /** A rule kept beside the aggregate, changed under its lock (see StepsUnderLock). */
  readonly underLock?: StepsUnderLock<State>;
}

/** What the event store made of one command: accepted with its events, or rejected by the decider. */
export type HandledCommand<State, Event extends DomainEvent> =
  | {
      readonly accepted: true;
      readonly events: readonly EventEnvelope<Event>[];
      /**
       * The version the command left the aggregate at (its events' last; the loaded version when
       * it decided none). On a replay, the version the request's own events reached, as its first
       * answer said, not whatever later commands moved it to.
       */
      readonly version: number;
      readonly state: State;
      /** The request had appended these events already (an earlier attempt); nothing new was written. */
      readonly replayed?: true;
    }
  | {
      readonly accepted: false;
      readonly kind: RejectionKind;
      readonly message: string;
      readonly version: number;
    };

/**
 * Seams of the command path: `beforeAppend` and `afterAppend` let a fault test pause a holder or
 * stop Redis at those steps; the others let metrics observe it without entering it.
 */
export interface CommandHandlerHooks {
  /** Between deciding and appending: a holder paused here can outlive its lock. */
  beforeAppend?(aggregateId: string): Promise<void>;
  /** After the append succeeded, before handle() returns: the answer can be lost from here on. */
  afterAppend?(aggregateId: string): Promise<void>;
  /** How long taking the aggregate's lock took, and whether it was taken (false: AGGREGATE_BUSY). */
  lockWaited?(aggregateType: string, waitedSeconds: number, acquired: boolean): void;
  /** Events this handler has just appended. */
  eventsAppended?(aggregateType: string, events: readonly EventEnvelope[]): void;
  /**
   * Events on the aggregate's master that no replica confirmed in time (WRITE_DURABILITY=replicated),
   * or whose WAIT got no answer: the command is answered 503 "may have taken effect".
   */
  writeUnconfirmed?(aggregateType: string, reason: OutcomeUnknownReason): void;
}

/** Runs one command on one aggregate: the path every command, from HTTP or an import, takes. */
export class CommandHandler {
  constructor(
    private readonly store: EventStore,
    private readonly lockOptions: LockOptions,
    private readonly hooks: CommandHandlerHooks = {},
    /** What must hold of the events before a command answers success (WRITE_DURABILITY). */
    private readonly durability: WriteDurability = LOCAL_DURABILITY,
  ) {}

  /** Runs the command inside a span of its own (its type, aggregate, versions and outcome). */
  async handle<State, Command, Event extends DomainEvent>(
    decider: Decider<State, Command, Event>,
    input: CommandInput<Command, State>,
  ): Promise<HandledCommand<State, Event>> {
    const { type } = input.command as { readonly type?: unknown };
    const commandType = typeof type === 'string' ? type : 'unknown';
    const attributes = () => ({
      'fts.command.type': commandType,
      'fts.aggregate.type': decider.aggregateType,
      'fts.aggregate.id': input.aggregateId.toLowerCase(),
      ...(input.expectedVersion ? { 'fts.version.expected': input.expectedVersion } : {}),
    });
    return inSpan(`command ${commandType}`, attributes, async (span) => {
      try {
        const handled = await this.run(decider, input);
        span.setAttributes({ 'fts.command.outcome': outcomeOf(handled), 'fts.version.new': handled.version });
        return handled;
      } catch (error) {
        span.setAttribute('fts.command.outcome', error instanceof Error ? error.name : 'error');
        throw error;
      }
    });
  }

  private async run<State, Command, Event extends DomainEvent>(
    decider: Decider<State, Command, Event>,
    input: CommandInput<Command, State>,
  ): Promise<HandledCommand<State, Event>> {
    const { aggregateType } = decider;
    // Ids are GUIDs compared case-insensitively: keys and envelopes both carry the lower-case form.
    const aggregateId = input.aggregateId.toLowerCase();
    const requestField =
      input.requestId === undefined
        ? undefined
        : requestRecordField(input.context.actorUserId, input.requestId);
    // 1. Take the aggregate's lock and load its record (version and folded state) and whether the
    //    request appended already: one round trip.
    const token = lockToken();
    const { version, state, appliedRequest } = await waitForLock(
      aggregateId,
      this.lockOptions,
      () =>
        this.store.lockAndLoad(
          aggregateType,
          aggregateId,
          decider.initialState,
          token,
          this.lockOptions.ttlMs,
          requestField,
        ),
      (waitedMs, acquired) => this.hooks.lockWaited?.(aggregateType, waitedMs / 1000, acquired),
    );
    let released = false;
    try {
      // 2. A retry of a request that appended already is answered with its events, not decided
      //    again (before the version check: the version moved because of that very request).
      if (appliedRequest) {
        const { firstVersion, lastVersion } = appliedRequest;
        // Written by this decider's own append, so they are its events.
        const events = (await this.store.readVersions(
          aggregateType,
          aggregateId,
          firstVersion,
          lastVersion,
        )) as EventEnvelope<Event>[];
        // The first attempt may have answered 503 for want of a replica: this one confirms it too.
        const confirmation = this.durability.confirmEarlier(
          aggregateType,
          aggregateId,
          token,
          this.lockOptions.ttlMs,
        );
        await this.confirmed(aggregateType, confirmation);
        return { accepted: true, replayed: true, events, version: lastVersion, state };
      }

      // 3. The caller's optimistic-concurrency check.
      if (input.expectedVersion && input.expectedVersion !== version) {
        throw new ExpectedVersionMismatchError(aggregateId, input.expectedVersion, version);
      }

      // 4. Decide (pure).
      const decision = decider.decide(input.command, state, input.context);
      if (!decision.accepted)
        return { accepted: false, kind: decision.kind, message: decision.message, version };

      // 5. Append with the loaded version as the fence; the same script releases the lock and
      //    records the request id.
      const occurredAt = input.context.now.toISOString();
      // A sampled command's events carry its span, so the worker's spans of them join its trace.
      const traceparent = sampledTraceparent();
      const metadata = traceparent ? { ...input.metadata, traceparent } : input.metadata;
      const envelopes = decision.events.map((event, index): EventEnvelope<Event> => ({
        eventId: randomUUID(),
        eventType: event.type,
        aggregateType,
        aggregateId,
        version: version + index + 1,
        occurredAt,
        data: event.data,
        metadata,
      }));
      const nextState = decision.events.reduce((folded, event) => decider.evolve(folded, event), state);
      const { underLock } = input;
      // The connection the append goes over, and what its success waits for (WRITE_DURABILITY).
      const write = await this.durability.begin(aggregateType, aggregateId);
      try {
        const refusal = await underLock?.beforeAppend(state, nextState);
        if (refusal !== undefined) return { accepted: false, kind: 'invalid', message: refusal, version };
        // Awaited only when set: awaiting undefined still costs a turn of the microtask queue.
        if (this.hooks.beforeAppend) await this.hooks.beforeAppend(aggregateId);
        const appendRequest: AppendRequest = {
          aggregateType,
          aggregateId,
          expectedVersion: version,
          events: envelopes,
          state: nextState,
          // With steps to run after the append, the lock stays until they ran (released below).
          lockToken: underLock ? '' : token,
          ...(input.attachments ? { attachments: input.attachments } : {}),
          ...(input.removeAttachments ? { removeAttachments: input.removeAttachments } : {}),
          ...(requestField ? { requestId: requestField } : {}),
        };
        const newVersion = await this.store
          .append(appendRequest, write.connection)
          .catch(async (error: unknown) => {
            if (appendMayHaveRun(error)) throw new AppendOutcomeUnknownError(aggregateId, error);
            await underLock?.notWritten(state, nextState);
            // A caller that named a version learns the aggregate left it, whether the check above or
            // the fence found that out; one that named none may retry on the aggregate as it is then.
            if (error instanceof StaleAppendError && input.expectedVersion) {
              throw new ExpectedVersionMismatchError(aggregateId, input.expectedVersion, error.actualVersion);
            }
            throw error;
          });
        if (underLock) await underLock.afterAppend(state, nextState);
        else released = true;
        this.hooks.eventsAppended?.(aggregateType, envelopes);
        if (this.hooks.afterAppend) await this.hooks.afterAppend(aggregateId);
        await this.confirmed(aggregateType, write.confirm());
        return { accepted: true, events: envelopes, version: newVersion, state: nextState };
      } finally {
        write.release();
      }
    } finally {
      if (!released) await this.store.unlock(aggregateType, aggregateId, token).catch(() => undefined);
    }
  }

  /** Awaits a write's confirmation; one that failed is counted (writeUnconfirmed) and thrown on. */
  private async confirmed(aggregateType: string, confirmation: Promise<void>): Promise<void> {
    try {
      await confirmation;
    } catch (error) {
      if (error instanceof AppendOutcomeUnknownError)
        this.hooks.writeUnconfirmed?.(aggregateType, error.reason);
      throw error;
    }
  }
}

/** A command span's `fts.command.outcome`: accepted, replayed, or rejected with the decider's kind. */
function outcomeOf(handled: HandledCommand<unknown, DomainEvent>): string {
  if (!handled.accepted) return `rejected.${handled.kind}`;
  return handled.replayed ? 'replayed' : 'accepted';
}

/**
 * Redis refusals that come before a script runs: the request connection had no link to send it on,
 * or the server refused it unexecuted (a cluster slot moving, moved or down, a server still loading).
 */
const REFUSED_UNSENT =
  /Stream isn't writeable|Cluster isn't ready|Redis connection is not ready|None of startup nodes is available|^(LOADING|CLUSTERDOWN|TRYAGAIN|MASTERDOWN|MOVED|ASK)\b/;

/**
 * True when an append that failed may still have been applied: Redis became unreachable after the
 * script was sent (the connection closed or the answer timed out), as opposed to a refusal before
 * it ran. Unsure cases count as "may have": saying so wrongly only costs a retry.
 */
function appendMayHaveRun(error: unknown): boolean {
  return isRedisUnavailable(error) && !REFUSED_UNSENT.test((error as Error).message);
}
