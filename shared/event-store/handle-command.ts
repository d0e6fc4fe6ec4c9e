import { randomUUID } from 'node:crypto';

import type { Decider, DecisionContext, DomainEvent, RejectionKind } from '../domain/decider';
import type { EventEnvelope, EventMetadata } from './envelope';
import { ConcurrencyConflictError } from './errors';
import type { EventStore } from './event-store';
import { lockToken, waitForLock, type LockOptions } from './lock';

export interface CommandInput<Command> {
  readonly aggregateId: string;
  readonly command: Command;
  /** The caller's optimistic-concurrency check: 0 or absent means none. */
  readonly expectedVersion?: number;
  readonly context: DecisionContext;
  readonly metadata: EventMetadata;
  /** Private record fields written with the events if the command is accepted (a credential). */
  readonly attachments?: Readonly<Record<string, string>>;
}

export type CommandOutcome<State, Event extends DomainEvent> =
  | {
      readonly accepted: true;
      readonly events: readonly EventEnvelope<Event>[];
      readonly version: number;
      readonly state: State;
    }
  | {
      readonly accepted: false;
      readonly kind: RejectionKind;
      readonly message: string;
      readonly version: number;
    };

/** Test seam: lets a test pause a holder between deciding and appending (to outlive its lock). */
export interface CommandHandlerHooks {
  beforeAppend?(aggregateId: string): Promise<void>;
}

/** Runs one command on one aggregate: the path every command, from HTTP or an import, takes. */
export class CommandHandler {
  constructor(
    private readonly store: EventStore,
    private readonly lockOptions: LockOptions,
    private readonly hooks: CommandHandlerHooks = {},
  ) {}

  async handle<State, Command, Event extends DomainEvent>(
    decider: Decider<State, Command, Event>,
    input: CommandInput<Command>,
  ): Promise<CommandOutcome<State, Event>> {
    const { aggregateType } = decider;
    // Ids are GUIDs compared case-insensitively: keys and envelopes both carry the lower-case form.
    const aggregateId = input.aggregateId.toLowerCase();
    // 1. Take the aggregate's lock and load its record (version and folded state): one round trip.
    const token = lockToken();
    const { version, state } = await waitForLock(aggregateId, this.lockOptions, () =>
      this.store.lockAndLoad(aggregateType, aggregateId, decider.initialState, token, this.lockOptions.ttlMs),
    );
    let released = false;
    try {
      // 2. The caller's optimistic-concurrency check.
      if (input.expectedVersion && input.expectedVersion !== version) {
        throw new ConcurrencyConflictError(aggregateId, input.expectedVersion, version);
      }

      // 3. Decide (pure).
      const decision = decider.decide(input.command, state, input.context);
      if (!decision.accepted)
        return { accepted: false, kind: decision.kind, message: decision.message, version };

      // 4. Append with the loaded version as the fence; the same script releases the lock.
      const occurredAt = input.context.now.toISOString();
      const envelopes = decision.events.map((event, index): EventEnvelope<Event> => ({
        eventId: randomUUID(),
        eventType: event.type,
        aggregateType,
        aggregateId,
        version: version + index + 1,
        occurredAt,
        data: event.data,
        metadata: input.metadata,
      }));
      const nextState = decision.events.reduce((folded, event) => decider.evolve(folded, event), state);
      await this.hooks.beforeAppend?.(aggregateId);
      const newVersion = await this.store.append({
        aggregateType,
        aggregateId,
        expectedVersion: version,
        events: envelopes,
        state: nextState,
        lockToken: token,
        ...(input.attachments ? { attachments: input.attachments } : {}),
      });
      released = true;
      return { accepted: true, events: envelopes, version: newVersion, state: nextState };
    } finally {
      if (!released) await this.store.unlock(aggregateType, aggregateId, token).catch(() => undefined);
    }
  }
}
