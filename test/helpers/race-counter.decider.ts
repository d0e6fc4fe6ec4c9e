import { accept, type Decider, type DomainEvent } from '../../shared/event-store/decider';

/**
 * A test-only aggregate that accepts the same command forever, so races can be run on one stream
 * as often as wanted. Each event carries the value it produces: a lost update would show up as
 * two events with one value, or a value that differs from the event's version.
 */
export interface Increment {
  readonly type: 'Increment';
  readonly data: Record<string, never>;
}

export type Incremented = DomainEvent<'Incremented', { readonly value: number }>;

export interface CounterState {
  readonly value: number;
}

export const counterDecider: Decider<CounterState, Increment, Incremented> = {
  aggregateType: 'counter',
  initialState: { value: 0 },

  decide(command, state) {
    switch (command.type) {
      case 'Increment':
        return accept({ type: 'Incremented', data: { value: state.value + 1 } });
      default: {
        const _exhaustive: never = command.type;
        return _exhaustive;
      }
    }
  },

  evolve(state, event) {
    switch (event.type) {
      case 'Incremented':
        return { value: event.data.value };
      default: {
        const _exhaustive: never = event.type;
        return state;
      }
    }
  },
};

export const INCREMENT: Increment = { type: 'Increment', data: {} };
