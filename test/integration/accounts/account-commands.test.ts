/**
 * The account commands of POST /api/command (issue 19): each over HTTP with a Bearer token, on a
 * real Redis. Revocation of tokens and sign-in of disabled accounts are in account-revocation tests;
 * erasure in account-erasure tests; here: who may run what, each refusal's exact text, the
 * last-Admin rule, and what each command changes.
 */
import { randomUUID } from 'node:crypto';

import request from 'supertest';

import { USER_MESSAGES } from '../../../shared/user/user.messages';
import { createTestApp, type TestApp } from '../../helpers/app-fixture';
import { passwordGrantToken } from '../../helpers/tokens';
import { userIdForEmail } from '../../helpers/user-ids';

const PASSWORD = 'account-commands-password';
const NEW_PASSWORD = 'a-brand-new-password-1';

describe('Account commands on POST /api/command', () => {
  let subject: TestApp;
  const tokens = new Map<string, string>();

  /** A fresh account of `roles` (unique e-mail), with a token; returns its e-mail and id. */
  const account = async (roles: string[], options: { userType?: 'Human' | 'ServiceAccount' } = {}) => {
    const email = `${roles.join('-').toLowerCase() || 'none'}-${randomUUID().slice(0, 8)}@example.com`;
    const userId = await subject.createUser({
      email,
      password: PASSWORD,
      roles: roles as never,
      userType: options.userType ?? 'Human',
      firstName: 'Given',
      lastName: 'Family',
    });
    tokens.set(email, await passwordGrantToken(subject.app, email, PASSWORD));
    return { email, userId };
  };

  const send = (email: string, commandType: string, command: object, extra: object = {}) =>
    request(subject.app)
      .post('/api/command')
      .set('Authorization', `Bearer ${tokens.get(email) ?? ''}`)
      .send({ commandType, command, ...extra });

  const refusedWith = (res: request.Response, status: number, errorCode: string, errorMessage: string) => {
    expect({ status: res.status, body: res.body as unknown }).toEqual({
      status,
      body: {
        requestId: null,
        success: false,
        eventCount: 0,
        errorMessage,
        errorCode,
        commandType: (res.body as { commandType: string }).commandType,
      },
    });
  };
  const succeeded = (res: request.Response) => {
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ success: true, eventCount: 1 });
  };

  const stateOf = async (userId: string) =>
    (await subject.services.store.loadRecord('user', userId, null)) as {
      version: number;
      state: Record<string, unknown> | null;
    };

  const signIn = (email: string, password: string) =>
    request(subject.app).post('/api/auth/token').send({ grant_type: 'password', username: email, password });

  beforeAll(async () => {
    // A small throttle bound, so the wrong-current-password rule is seen within a few requests.
    subject = await createTestApp({ AUTH_MAX_FAILURES_PER_ACCOUNT_AND_ADDRESS: '3' });
  });
  afterAll(() => subject.close());

  describe('ChangePassword', () => {
    it('When an account changes its own password with the right current one, then it signs in with the new one only', async () => {
      const member = await account(['Member']);

      succeeded(
        await send(member.email, 'ChangePassword', { currentPassword: PASSWORD, newPassword: NEW_PASSWORD }),
      );

      expect((await signIn(member.email, NEW_PASSWORD)).status).toBe(200);
      expect((await signIn(member.email, PASSWORD)).status).toBe(400);
      const { state } = await stateOf(member.userId);
      expect(JSON.stringify(state)).not.toContain(NEW_PASSWORD);
    });

    it('When a service account changes its password with a client_credentials token, then it is accepted (any authenticated account may)', async () => {
      const service = await account(['ServiceAccount'], { userType: 'ServiceAccount' });
      const res = await request(subject.app)
        .post('/api/auth/token')
        .send({ grant_type: 'client_credentials', client_id: service.email, client_secret: PASSWORD });
      expect(res.status).toBe(200);
      tokens.set(service.email, (res.body as { access_token: string }).access_token);

      succeeded(
        await send(service.email, 'ChangePassword', {
          aggregateRootId: service.userId.toUpperCase(),
          currentPassword: PASSWORD,
          newPassword: NEW_PASSWORD,
        }),
      );
    });

    it('When the current password is wrong, then it is refused with its message, and enough wrong ones throttle the account like failed sign-ins', async () => {
      const member = await account(['Member']);
      const wrong = () =>
        send(member.email, 'ChangePassword', {
          currentPassword: 'not-the-password',
          newPassword: NEW_PASSWORD,
        });

      for (let attempt = 0; attempt < 3; attempt++) {
        refusedWith(await wrong(), 400, 'COMMAND_VALIDATION_ERROR', USER_MESSAGES.wrongCurrentPassword);
      }
      const throttled = await wrong();
      expect(throttled.status).toBe(429);
      // The same throttle as sign-in: a sign-in attempt from this address is throttled meanwhile.
      expect((await signIn(member.email, 'another-wrong-password')).status).toBe(429);
      expect((await stateOf(member.userId)).version).toBe(1);
    });

    it("When ChangePassword names another account's id, then it is refused and nothing changes", async () => {
      const member = await account(['Member']);
      const other = await account(['Member']);

      refusedWith(
        await send(member.email, 'ChangePassword', {
          aggregateRootId: other.userId,
          currentPassword: PASSWORD,
          newPassword: NEW_PASSWORD,
        }),
        400,
        'COMMAND_VALIDATION_ERROR',
        USER_MESSAGES.notYourAccount,
      );
      expect((await stateOf(other.userId)).version).toBe(1);
    });

    it('When the new password breaks the password rule, then it is a field error and nothing changes', async () => {
      const member = await account(['Member']);

      const res = await send(member.email, 'ChangePassword', {
        currentPassword: PASSWORD,
        newPassword: 'short',
      });

      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ errorCode: 'COMMAND_VALIDATION_ERROR', success: false });
      expect((res.body as { errorMessage: string }).errorMessage).toMatch(/NewPassword/i);
      expect((await stateOf(member.userId)).version).toBe(1);
    });
  });

  describe('SetUserPassword', () => {
    it("When an Admin sets a service account's password, then it signs in with the new one only", async () => {
      const manager = await account(['Admin']);
      const service = await account(['ServiceAccount'], { userType: 'ServiceAccount' });

      succeeded(
        await send(manager.email, 'SetUserPassword', {
          aggregateRootId: service.userId,
          newPassword: NEW_PASSWORD,
        }),
      );

      const credentials = (secret: string) =>
        request(subject.app)
          .post('/api/auth/token')
          .send({ grant_type: 'client_credentials', client_id: service.email, client_secret: secret });
      expect((await credentials(NEW_PASSWORD)).status).toBe(200);
      expect((await credentials(PASSWORD)).status).toBe(401); // OAuth's invalid_client
    });

    it('When a UserManager sets the password of an Admin, another UserManager or a ServiceAccount, then the grant rule refuses it with 403', async () => {
      const manager = await account(['UserManager']);
      const admin = await account(['Admin']);
      const otherManager = await account(['UserManager']);
      const service = await account(['ServiceAccount'], { userType: 'ServiceAccount' });

      for (const target of [admin, otherManager, service]) {
        const res = await send(manager.email, 'SetUserPassword', {
          aggregateRootId: target.userId,
          newPassword: NEW_PASSWORD,
        });
        const role = target === admin ? 'Admin' : target === service ? 'ServiceAccount' : 'UserManager';
        refusedWith(
          res,
          403,
          'COMMAND_FORBIDDEN',
          `User '${manager.email}' (${manager.userId}) may not manage user ${target.userId}, who holds role ${role}. Grantable roles: [Member].`,
        );
        expect((await stateOf(target.userId)).version).toBe(1);
      }
    });

    it('When a manager sets its own password, then it is told to use ChangePassword', async () => {
      const admin = await account(['Admin']);

      refusedWith(
        await send(admin.email, 'SetUserPassword', {
          aggregateRootId: admin.userId,
          newPassword: NEW_PASSWORD,
        }),
        400,
        'COMMAND_VALIDATION_ERROR',
        USER_MESSAGES.ownPasswordBySet,
      );
    });

    it('When a Member or a ServiceAccount sends a manager command, then it is refused with 403 naming the roles required', async () => {
      const member = await account(['Member']);
      const target = await account(['Member']);

      for (const commandType of ['SetUserPassword', 'SetUserRoles', 'DisableUser', 'EnableUser']) {
        const command =
          commandType === 'SetUserPassword'
            ? { aggregateRootId: target.userId, newPassword: NEW_PASSWORD }
            : commandType === 'SetUserRoles'
              ? { aggregateRootId: target.userId, roles: ['Member'] }
              : { aggregateRootId: target.userId };
        refusedWith(
          await send(member.email, commandType, command),
          403,
          'COMMAND_FORBIDDEN',
          `User '${member.email}' (${member.userId}) lacks required roles to execute ${commandType}Command. Required roles: [UserManager, Admin]. User roles: [Member].`,
        );
      }
      expect((await stateOf(target.userId)).version).toBe(1);
    });
  });

  describe('SetUserRoles', () => {
    it('When an Admin replaces the roles, then CurrentUser shows the new ones', async () => {
      const admin = await account(['Admin']);
      const member = await account(['Member']);

      succeeded(
        await send(admin.email, 'SetUserRoles', {
          aggregateRootId: member.userId,
          roles: ['UserManager', 'UserManager'],
        }),
      );

      const { state } = await stateOf(member.userId);
      expect(state?.roles).toEqual(['UserManager']);
      const basic = Buffer.from(`${member.email}:${PASSWORD}`).toString('base64');
      const current = await request(subject.app)
        .post('/api/readmodel')
        .set('Authorization', `Basic ${basic}`)
        .send({ query: { queryType: 'CurrentUser' } });
      expect(current.status).toBe(200);
      expect(JSON.stringify(current.body)).toContain('UserManager');
    });

    it('When a UserManager gives Admin, UserManager or ServiceAccount, then the grant rule refuses it with 403 COMMAND_FORBIDDEN naming the role', async () => {
      const manager = await account(['UserManager']);
      const member = await account(['Member']);

      for (const role of ['Admin', 'UserManager', 'ServiceAccount']) {
        refusedWith(
          await send(manager.email, 'SetUserRoles', {
            aggregateRootId: member.userId,
            roles: ['Member', role],
          }),
          403,
          'COMMAND_FORBIDDEN',
          `User '${manager.email}' (${manager.userId}) may not grant role ${role}. Grantable roles: [Member].`,
        );
      }
      expect((await stateOf(member.userId)).version).toBe(1);
    });

    it('When a UserManager gives Member to a Member, then it is accepted; an Admin may give ServiceAccount', async () => {
      const manager = await account(['UserManager']);
      const admin = await account(['Admin']);
      const member = await account(['Member']);

      succeeded(
        await send(manager.email, 'SetUserRoles', { aggregateRootId: member.userId, roles: ['Member'] }),
      );
      succeeded(
        await send(admin.email, 'SetUserRoles', {
          aggregateRootId: member.userId,
          roles: ['ServiceAccount', 'Member'],
        }),
      );
    });

    it('When the roles are empty or unknown, then it is a field error and nothing changes', async () => {
      const admin = await account(['Admin']);
      const member = await account(['Member']);

      for (const roles of [[], ['Owner'], 'Admin']) {
        const res = await send(admin.email, 'SetUserRoles', { aggregateRootId: member.userId, roles });
        expect(res.status).toBe(400);
        expect(res.body).toMatchObject({ errorCode: 'COMMAND_VALIDATION_ERROR' });
      }
      expect((await stateOf(member.userId)).version).toBe(1);
    });
  });

  describe('DisableUser and EnableUser', () => {
    it('When a UserManager disables a Member with a reason and enables it again, then its state says so each time', async () => {
      const manager = await account(['UserManager']);
      const member = await account(['Member']);

      succeeded(
        await send(manager.email, 'DisableUser', { aggregateRootId: member.userId, reason: 'left the club' }),
      );
      expect((await stateOf(member.userId)).state).toMatchObject({
        disabled: true,
        disabledReason: 'left the club',
      });
      refusedWith(
        await send(manager.email, 'DisableUser', { aggregateRootId: member.userId }),
        400,
        'COMMAND_VALIDATION_ERROR',
        USER_MESSAGES.alreadyDisabled,
      );

      succeeded(await send(manager.email, 'EnableUser', { aggregateRootId: member.userId }));
      expect((await stateOf(member.userId)).state).toMatchObject({ disabled: false, disabledReason: null });
      refusedWith(
        await send(manager.email, 'EnableUser', { aggregateRootId: member.userId }),
        400,
        'COMMAND_VALIDATION_ERROR',
        USER_MESSAGES.notDisabled,
      );
    });

    it('When an account disables or deletes itself, then it is refused with its message', async () => {
      const admin = await account(['Admin']);
      await account(['Admin']); // another Admin: the last-Admin rule is not what refuses

      refusedWith(
        await send(admin.email, 'DisableUser', { aggregateRootId: admin.userId }),
        400,
        'COMMAND_VALIDATION_ERROR',
        USER_MESSAGES.cannotDisableSelf,
      );
      refusedWith(
        await send(admin.email, 'DeleteUser', { aggregateRootId: admin.userId }),
        400,
        'COMMAND_VALIDATION_ERROR',
        USER_MESSAGES.cannotDeleteSelf,
      );
    });

    it('When a UserManager disables an Admin, then the grant rule refuses it', async () => {
      const manager = await account(['UserManager']);
      const admin = await account(['Admin']);

      const res = await send(manager.email, 'DisableUser', { aggregateRootId: admin.userId });

      expect(res.status).toBe(403);
      expect((await stateOf(admin.userId)).state).toMatchObject({ disabled: false });
    });
  });

  describe('DeleteUser', () => {
    it('When a UserManager deletes an account, then it is refused: DeleteUser is for Admins only', async () => {
      const manager = await account(['UserManager']);
      const member = await account(['Member']);

      refusedWith(
        await send(manager.email, 'DeleteUser', { aggregateRootId: member.userId }),
        403,
        'COMMAND_FORBIDDEN',
        `User '${manager.email}' (${manager.userId}) lacks required roles to execute DeleteUserCommand. Required roles: [Admin]. User roles: [UserManager].`,
      );
    });

    it('When an Admin deletes an account, then it is gone: it cannot sign in and every command treats it as non-existent', async () => {
      const admin = await account(['Admin']);
      const member = await account(['Member']);

      succeeded(await send(admin.email, 'DeleteUser', { aggregateRootId: member.userId }));

      expect((await signIn(member.email, PASSWORD)).status).toBe(400);
      expect((await stateOf(member.userId)).state).toMatchObject({ deleted: true, userId: member.userId });
      refusedWith(
        await send(admin.email, 'DeleteUser', { aggregateRootId: member.userId }),
        400,
        'COMMAND_VALIDATION_ERROR',
        USER_MESSAGES.nonExistent('delete'),
      );
    });
  });

  describe('Unknown and deleted accounts', () => {
    it.each([
      ['SetUserPassword', { newPassword: NEW_PASSWORD }, 'set the password of'],
      ['SetUserRoles', { roles: ['Member'] }, 'set the roles of'],
      ['DisableUser', {}, 'disable'],
      ['EnableUser', {}, 'enable'],
      ['DeleteUser', {}, 'delete'],
    ] as const)(
      'When %s names no account, then it is refused with "Cannot %s non-existent user"',
      async (commandType, fields, verb) => {
        const admin = await account(['Admin']);
        const nobody = userIdForEmail(`nobody-${randomUUID()}@example.com`);

        refusedWith(
          await send(admin.email, commandType, { aggregateRootId: nobody, ...fields }),
          400,
          'COMMAND_VALIDATION_ERROR',
          `Cannot ${verb} non-existent user`,
        );
        expect(await subject.redis.exists(subject.services.keys.aggregateStream('user', nobody))).toBe(0);
      },
    );
  });

  describe('The last enabled Admin', () => {
    /** An app (key prefix) of its own per test: the enabled Admins are counted per prefix. */
    let solo: TestApp;
    const soloTokens = new Map<string, string>();
    const soloSend = (email: string, commandType: string, command: object) =>
      request(solo.app)
        .post('/api/command')
        .set('Authorization', `Bearer ${soloTokens.get(email) ?? ''}`)
        .send({ commandType, command });
    const soloAccount = async (roles: string[]) => {
      const email = `solo-${randomUUID().slice(0, 8)}@example.com`;
      const userId = await solo.createUser({ email, password: PASSWORD, roles: roles as never });
      soloTokens.set(email, await passwordGrantToken(solo.app, email, PASSWORD));
      return { email, userId };
    };

    beforeEach(async () => {
      solo = await createTestApp();
    });
    afterEach(() => solo.close());

    it('When the only Admin would lose Admin, then SetUserRoles is refused; with a second Admin it is accepted', async () => {
      const admin = await soloAccount(['Admin']);

      const res = await soloSend(admin.email, 'SetUserRoles', {
        aggregateRootId: admin.userId,
        roles: ['Member'],
      });
      refusedWith(res, 400, 'COMMAND_VALIDATION_ERROR', USER_MESSAGES.lastAdminRoles);

      await soloAccount(['Admin']);
      const accepted = await soloSend(admin.email, 'SetUserRoles', {
        aggregateRootId: admin.userId,
        roles: ['Member'],
      });
      expect(accepted.status).toBe(200);
      expect(await solo.services.admins.count()).toBe(1);
    });

    it('When two Admins disable each other at the same moment, then exactly one succeeds and one Admin stays enabled', async () => {
      const first = await soloAccount(['Admin']);
      const second = await soloAccount(['Admin']);

      const answers = await Promise.all([
        soloSend(first.email, 'DisableUser', { aggregateRootId: second.userId }),
        soloSend(second.email, 'DisableUser', { aggregateRootId: first.userId }),
      ]);

      // The loser is refused by the guard, or, when the winner's disable reached it first, at
      // authentication (its own account is disabled by then): either way one Admin stays enabled.
      const statuses = answers.map((res) => res.status).sort();
      expect([
        [200, 400],
        [200, 401],
      ]).toContainEqual(statuses);
      const refusedAnswer = answers.find((res) => res.status === 400);
      if (refusedAnswer) {
        expect(refusedAnswer.body).toMatchObject({ errorMessage: USER_MESSAGES.lastAdminDisable });
      }
      expect(await solo.services.admins.count()).toBe(1);
    });

    it('When an enabled Admin is missing from the set (a step lost to a crash), then deleting the one left is refused as the last: the guard refuses more, never less', async () => {
      const first = await soloAccount(['Admin']);
      const second = await soloAccount(['Admin']);
      await solo.redis.srem(solo.services.keys.enabledAdmins(), first.userId);

      const res = await soloSend(first.email, 'DeleteUser', { aggregateRootId: second.userId });

      refusedWith(res, 400, 'COMMAND_VALIDATION_ERROR', USER_MESSAGES.lastAdminDelete);
      expect(await solo.redis.smembers(solo.services.keys.enabledAdmins())).toEqual([second.userId]);
    });

    it('When an Admin deletes the other Admin, then one enabled Admin is counted, and a UserManager still cannot touch it', async () => {
      const first = await soloAccount(['Admin']);
      const second = await soloAccount(['Admin']);

      expect((await soloSend(first.email, 'DeleteUser', { aggregateRootId: second.userId })).status).toBe(
        200,
      );
      expect(await solo.services.admins.count()).toBe(1);
      const manager = await soloAccount(['UserManager']);
      // A UserManager cannot touch an Admin at all: the grant rule answers before the last-Admin rule.
      expect((await soloSend(manager.email, 'DisableUser', { aggregateRootId: first.userId })).status).toBe(
        403,
      );
    });

    it('When the enabled-Admin set was never built (an upgraded deployment), then building it finds the Admins from their records', async () => {
      const admin = await soloAccount(['Admin']);
      const disabledAdmin = await soloAccount(['Admin']);
      await soloSend(admin.email, 'DisableUser', { aggregateRootId: disabledAdmin.userId });
      // Two keys of two cluster slots: one DEL each.
      await solo.redis.del(solo.services.keys.enabledAdmins());
      await solo.redis.del(solo.services.keys.enabledAdminsBuilt());

      await solo.services.admins.ensureBuilt(solo.services.store);

      expect(await solo.redis.smembers(solo.services.keys.enabledAdmins())).toEqual([admin.userId]);
      const res = await soloSend(admin.email, 'SetUserRoles', {
        aggregateRootId: admin.userId,
        roles: ['Member'],
      });
      expect(res.body).toMatchObject({ errorMessage: USER_MESSAGES.lastAdminRoles });
    });
  });

  describe('The envelope', () => {
    it('When expectedVersion is not the account version, then 409 CONCURRENCY_CONFLICT names the user', async () => {
      const admin = await account(['Admin']);
      const member = await account(['Member']);

      const res = await send(
        admin.email,
        'DisableUser',
        { aggregateRootId: member.userId },
        { expectedVersion: 5 },
      );

      refusedWith(res, 409, 'CONCURRENCY_CONFLICT', 'Expected version 5, but the user is at version 1');
    });

    it('When the same requestId is sent twice, then the command runs once and both answers are the same', async () => {
      const admin = await account(['Admin']);
      const member = await account(['Member']);
      const requestId = randomUUID();
      const body = { commandType: 'DisableUser', command: { aggregateRootId: member.userId }, requestId };
      const post = () =>
        request(subject.app)
          .post('/api/command')
          .set('Authorization', `Bearer ${tokens.get(admin.email) ?? ''}`)
          .send(body);

      const first = await post();
      const second = await post();

      expect(first.status).toBe(200);
      expect(second.body).toEqual(first.body);
      expect((await stateOf(member.userId)).version).toBe(2);
    });

    it('When an account command comes with Basic authentication, then it is refused with 401 like every command', async () => {
      const admin = await account(['Admin']);
      const member = await account(['Member']);
      const basic = Buffer.from(`${admin.email}:${PASSWORD}`).toString('base64');

      const res = await request(subject.app)
        .post('/api/command')
        .set('Authorization', `Basic ${basic}`)
        .send({ commandType: 'DisableUser', command: { aggregateRootId: member.userId } });

      expect(res.status).toBe(401);
      expect((await stateOf(member.userId)).version).toBe(1);
    });

    it('When an account command carries a field its schema does not know, then it is a field error and nothing changes', async () => {
      const admin = await account(['Admin']);
      const member = await account(['Member']);

      const res = await send(admin.email, 'EnableUser', { aggregateRootId: member.userId, disabled: false });

      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ errorCode: 'COMMAND_VALIDATION_ERROR' });
    });
  });
});
