import { accept, type Decider, reject } from '../decider';
import type { UserCommand } from './user.commands';
import type { UserEvent } from './user.events';
import { USER_MESSAGES } from './user.messages';

/** A user as folded from its events; null before it is created. */
export type UserState = UserEvent['data'] | null;

export const userDecider: Decider<UserState, UserCommand, UserEvent> = {
  aggregateType: 'user',
  initialState: null,

  decide(command, state, { now }) {
    switch (command.type) {
      case 'CreateUser':
        if (state !== null) return reject(USER_MESSAGES.alreadyExists);
        return accept({ type: 'UserCreatedEvent', data: { ...command.data, createdAt: now.toISOString() } });
      default: {
        const _exhaustive: never = command.type;
        return _exhaustive;
      }
    }
  },

  evolve(state, event) {
    switch (event.type) {
      case 'UserCreatedEvent':
        return { ...event.data };
      default: {
        const _exhaustive: never = event.type;
        return state;
      }
    }
  },
};
