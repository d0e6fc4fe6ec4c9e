import { fold } from '../../shared/event-store/decider';
import type { CreateUser } from '../../shared/user/user.commands';
import { LEGACY_SECURITY_STAMP, userDecider } from '../../shared/user/user.decider';
import type { UserCreatedEvent } from '../../shared/user/user.events';
import { USER_MESSAGES } from '../../shared/user/user.messages';
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

describe('userDecider: the account lifecycle', () => {
  const at = '2024-03-01T12:00:00.000Z';
  const created = userCreated('2024-01-01T00:00:00.000Z');
  const admin = decisionContext({ actorUserId: 'admin-id', actorRoles: ['Admin'], actorEmail: 'admin@x.io' });
  const manager = decisionContext({
    actorUserId: 'um-id',
    actorRoles: ['UserManager'],
    actorEmail: 'um@x.io',
  });
  const self = decisionContext({ actorUserId: userId, actorRoles: ['Member'] });
  const disabled = {
    type: 'UserDisabledEvent',
    data: { at, byUserId: 'admin-id', reason: null, securityStamp: 'stamp-2' },
  } as const;
  const deleted = {
    type: 'UserDeletedEvent',
    data: { at, byUserId: 'admin-id', tombstoneId: 'tomb-1' },
  } as const;

  it('When the account changes its own password, then the event carries the new stamp; another actor is refused', () => {
    const command = { type: 'ChangePassword', data: { securityStamp: 'stamp-2' } } as const;
    spec(userDecider)
      .given([created])
      .when(command, self)
      .then([{ type: 'UserPasswordChangedEvent', data: { at, byUserId: userId, securityStamp: 'stamp-2' } }]);
    spec(userDecider).given([created]).when(command, admin).thenRejectedWith(USER_MESSAGES.notYourAccount);
  });

  it('When a manager acts on an account holding a role it may not grant, then it is forbidden with the grant-rule text', () => {
    const adminAccount = { ...created, data: { ...created.data, roles: ['Admin' as const] } };
    spec(userDecider)
      .given([adminAccount])
      .when({ type: 'SetUserPassword', data: { securityStamp: 's' } }, manager)
      .thenRejectedWith(
        `User 'um@x.io' (um-id) may not manage user ${userId}, who holds role Admin. Grantable roles: [Member].`,
        'forbidden',
      );
  });

  it('When a UserManager grants ServiceAccount, or acts on a ServiceAccount, then it is forbidden; an Admin may', () => {
    const grant = {
      type: 'SetUserRoles',
      data: { securityStamp: 's2', roles: ['ServiceAccount'] },
    } as const;
    spec(userDecider)
      .given([created])
      .when(grant, manager)
      .thenRejectedWith(
        "User 'um@x.io' (um-id) may not grant role ServiceAccount. Grantable roles: [Member].",
        'forbidden',
      );
    const serviceAccount = { ...created, data: { ...created.data, roles: ['ServiceAccount' as const] } };
    spec(userDecider)
      .given([serviceAccount])
      .when({ type: 'DisableUser', data: { reason: null, securityStamp: 's3' } }, manager)
      .thenRejectedWith(
        `User 'um@x.io' (um-id) may not manage user ${userId}, who holds role ServiceAccount. Grantable roles: [Member].`,
        'forbidden',
      );
    spec(userDecider)
      .given([created])
      .when(grant, admin)
      .then([
        {
          type: 'UserRolesSetEvent',
          data: { at, byUserId: 'admin-id', securityStamp: 's2', roles: ['ServiceAccount'] },
        },
      ]);
  });

  it('When roles are set, then repeats are merged and the state takes them with the new stamp', () => {
    const command = {
      type: 'SetUserRoles',
      data: { securityStamp: 's2', roles: ['Member', 'Member'] },
    } as const;
    const decision = userDecider.decide(command, fold(userDecider, [created]), admin);
    expect(decision).toEqual({
      accepted: true,
      events: [
        {
          type: 'UserRolesSetEvent',
          data: { at, byUserId: 'admin-id', securityStamp: 's2', roles: ['Member'] },
        },
      ],
    });
    const state = fold(userDecider, [created, ...(decision.accepted ? decision.events : [])]);
    expect(state).toMatchObject({ roles: ['Member'], securityStamp: 's2', updatedAt: at });
  });

  it('When a disabled account is enabled, then it keeps the stamp the disable gave it', () => {
    const state = fold(userDecider, [
      created,
      disabled,
      { type: 'UserEnabledEvent', data: { at, byUserId: 'admin-id' } },
    ]);
    expect(state).toMatchObject({ disabled: false, disabledReason: null, securityStamp: 'stamp-2' });
  });

  it('When a deleted account is folded, then nothing personal is left in its state', () => {
    const state = fold(userDecider, [created, deleted]);
    expect(state).toEqual({ deleted: true, userId, tombstoneId: 'tomb-1', deletedAt: at });
    expect(JSON.stringify(state)).not.toContain('ada');
  });

  it.each([
    ['SetUserPassword', { securityStamp: 's' }, 'set the password of'],
    ['SetUserRoles', { securityStamp: 's', roles: ['Member'] }, 'set the roles of'],
    ['DisableUser', { securityStamp: 's', reason: null }, 'disable'],
    ['EnableUser', {}, 'enable'],
    ['DeleteUser', { tombstoneId: 't' }, 'delete'],
  ] as const)('When %s runs on a deleted account, then it is refused as non-existent', (type, data, verb) => {
    spec(userDecider)
      .given([created, deleted])
      .when({ type, data } as never, admin)
      .thenRejectedWith(`Cannot ${verb} non-existent user`, 'invalid');
  });

  it('When CreateUser runs on a deleted account, then it is accepted: the e-mail can be registered again', () => {
    spec(userDecider)
      .given([created, deleted])
      .when(createUser, decisionContext({ now: new Date(at) }))
      .then([userCreated(at)]);
  });

  it('When a legacy UserCreatedEvent without a stamp is folded, then the stamp reads as the legacy one', () => {
    const { securityStamp: _dropped, ...legacyData } = created.data;
    const state = fold(userDecider, [{ type: 'UserCreatedEvent', data: legacyData }]);
    expect(state).toMatchObject({ securityStamp: LEGACY_SECURITY_STAMP, disabled: false });
  });
});
