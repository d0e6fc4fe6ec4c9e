/**
 * The shape of every aggregate: pure functions, no I/O. Time, ids and the actor arrive in the
 * context, so a decider is tested with plain values (given events, when command, then events).
 */
export interface DomainEvent<Type extends string = string, Data = unknown> {
  readonly type: Type;
  readonly data: Data;
}

/**
 * The id the service acts under when it acts on its own behalf (bootstrap, erasure). No account can
 * hold it: user ids are UUID v5 (user-id.ts), whose version digit is never 0.
 */
export const SERVICE_ACTOR_ID = '00000000-0000-0000-0000-000000000000';

/** Who acts, and when. `system` is the service itself (bootstrap), which holds no account. */
export interface DecisionContext {
  readonly now: Date;
  readonly actorUserId: string;
  readonly actorRoles: readonly string[];
  /** The actor's e-mail, for refusals that name the actor (the grant rule's); absent for the service. */
  readonly actorEmail?: string;
  /**
   * The version of the actor's account stream as read when the command ran: what takes a webhook
   * subscription over records it, so the owner's later lapses are placed by that stream's own
   * versions, never by comparing two processes' clocks (ADR 0038). Absent where nothing needs it.
   */
  readonly actorAccountVersion?: number;
}

/**
 * `invalid`: the command breaks a rule (answered 400). `forbidden`: the actor may not act on this
 * aggregate (answered 403, saying nothing more).
 */
export type RejectionKind = 'invalid' | 'forbidden';

export type Decision<Event extends DomainEvent> =
  | { readonly accepted: true; readonly events: readonly Event[] }
  | { readonly accepted: false; readonly kind: RejectionKind; readonly message: string };

export function accept<Event extends DomainEvent>(...events: Event[]): Decision<Event> {
  return { accepted: true, events };
}

export function reject<Event extends DomainEvent>(message: string): Decision<Event> {
  return { accepted: false, kind: 'invalid', message };
}

export function forbid<Event extends DomainEvent>(message: string): Decision<Event> {
  return { accepted: false, kind: 'forbidden', message };
}

export interface Decider<State, Command, Event extends DomainEvent> {
  /** The stream family, part of every key and envelope: `user`, `fantasy-team`. */
  readonly aggregateType: string;
  readonly initialState: State;
  /**
   * The shape version of State as snapshotted in the aggregate's record (absent: 1). Bump it when
   * State's shape changes: a record of another version is re-folded from its stream when loaded,
   * and `npm run snapshots:rebuild` rewrites them all (ADR 0003).
   */
  readonly stateVersion?: number;
  decide(command: Command, state: State, context: DecisionContext): Decision<Event>;
  evolve(state: State, event: Event): State;
}

/** Folds events into state: how an aggregate is rebuilt from its stream. */
export function fold<State, Event extends DomainEvent>(
  decider: Pick<Decider<State, unknown, Event>, 'initialState' | 'evolve'>,
  events: readonly Event[],
): State {
  return events.reduce((state, event) => decider.evolve(state, event), decider.initialState);
}
