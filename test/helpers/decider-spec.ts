import { type Decider, type DecisionContext, type DomainEvent, fold } from '../../shared/event-store/decider';

/** A fixed moment and actor, so a decider's output can be compared with plain values. */
export function decisionContext(overrides: Partial<DecisionContext> = {}): DecisionContext {
  return {
    now: new Date('2024-03-01T12:00:00.000Z'),
    actorUserId: '00000000-0000-0000-0000-000000000000',
    actorRoles: ['Admin'],
    ...overrides,
  };
}

/**
 * Decider tests in the given/when/then shape:
 * `spec(decider).given([events]).when(command).then([events])`, or `.thenRejectedWith(message, kind?)`.
 * The history is folded with the decider's own evolve, exactly as the command handler folds it.
 */
export function spec<State, Command, Event extends DomainEvent>(decider: Decider<State, Command, Event>) {
  return {
    given(history: readonly Event[]) {
      return {
        when(command: Command, context: DecisionContext = decisionContext()) {
          const decide = () => decider.decide(command, fold(decider, history), context);
          return {
            then(expected: readonly Event[]): void {
              expect(decide()).toEqual({ accepted: true, events: expected });
            },
            /** The exact message; the rejection's kind too, when given. */
            thenRejectedWith(message: string, kind?: string): void {
              expect(decide()).toMatchObject({ accepted: false, message, ...(kind ? { kind } : {}) });
            },
          };
        },
      };
    },
  };
}
