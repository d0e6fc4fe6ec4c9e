import { fold } from '../../shared/domain/decider';
import type { CreateUser } from '../../shared/domain/user/user.commands';
import { userDecider } from '../../shared/domain/user/user.decider';
import type { UserCreatedEvent } from '../../shared/domain/user/user.events';
import { USER_MESSAGES } from '../../shared/domain/user/user.messages';
import { decisionContext, spec } from '../helpers/decider-spec';

const userId = '3f0c2f4e-8a4b-5c1d-9e2f-0a1b2c3d4e5f';

const createUser: CreateUser = {
  type: 'CreateUser',
  data: {
    userId,
    email: 'ada@example.com',
    userName: 'ada',
    userType: 'Human',
    roles: ['Member'],
    firstName: 'Ada',
    lastName: null,
    emailVerified: false,
    securityStamp: 'stamp-1',
  },
};

const userCreated = (createdAt: string): UserCreatedEvent => ({
  type: 'UserCreatedEvent',
  data: { ...createUser.data, createdAt },
});

describe('userDecider', () => {
  it('When CreateUser runs on no history, then UserCreatedEvent carries the command data and the context time', () => {
    const now = new Date('2025-06-30T23:59:58.123Z');
    spec(userDecider)
      .given([])
      .when(createUser, decisionContext({ now }))
      .then([userCreated('2025-06-30T23:59:58.123Z')]);
  });

  it('When CreateUser runs on a user that exists, then it is rejected as invalid with exactly "User already exists"', () => {
    spec(userDecider)
      .given([userCreated('2024-01-01T00:00:00.000Z')])
      .when(createUser)
      .thenRejectedWith('User already exists', 'invalid');
    expect(USER_MESSAGES.alreadyExists).toBe('User already exists');
  });

  it('When the decision is taken, then the context clock is the only time source (not the wall clock)', () => {
    const past = new Date('2001-02-03T04:05:06.007Z');
    const decision = userDecider.decide(createUser, null, decisionContext({ now: past }));
    const [event] = decision.accepted ? decision.events : [];
    expect(event?.type === 'UserCreatedEvent' && event.data.createdAt).toBe('2001-02-03T04:05:06.007Z');
  });

  it('When UserCreatedEvent is folded, then the state is the created user', () => {
    const event = userCreated('2024-01-01T00:00:00.000Z');
    expect(userDecider.initialState).toBeNull();
    expect(fold(userDecider, [])).toBeNull();
    expect(fold(userDecider, [event])).toEqual({
      ...event.data,
      updatedAt: '2024-01-01T00:00:00.000Z',
      disabled: false,
      disabledReason: null,
    });
  });
});
