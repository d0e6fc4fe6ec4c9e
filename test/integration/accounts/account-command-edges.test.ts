/**
 * What an attacker's review of the account commands found (issue 19), each held by a test that
 * failed before its fix: the last-Admin guard decided off the account's lock, hashes spent on
 * commands that were then refused, a resent ChangePassword refused by the password it had changed,
 * and a disabled account's queued import still running. Run on the use case directly (no HTTP),
 * on a real Redis.
 */
import { randomUUID } from 'node:crypto';

import {
  type AccountCaller,
  type AccountCommandServices,
  runAccountCommand,
} from '../../../ingress/command/account-commands';
import { processImport } from '../../../shared/importers/import-processor';
import { ACCOUNT_COMMAND_DEFINITIONS } from '../../../shared/user/user.commands';
import { createTestApp, type TestApp } from '../../helpers/app-fixture';

const PASSWORD = 'review-password-1';

describe('Account commands at their edges', () => {
  let app: TestApp;
  beforeEach(async () => {
    app = await createTestApp();
  });
  afterEach(() => app.close());

  const account = async (roles: string[]): Promise<AccountCaller> => {
    const email = `review-${randomUUID().slice(0, 8)}@example.com`;
    const userId = await app.createUser({ email, password: PASSWORD, roles: roles as never });
    return { userId, email, roles, clientAddress: '203.0.113.9' };
  };
  const run = (
    caller: AccountCaller,
    commandType: string,
    fields: object,
    options: { expectedVersion?: number; requestId?: string; services?: AccountCommandServices } = {},
  ) =>
    runAccountCommand(options.services ?? app.services, caller, {
      definition: ACCOUNT_COMMAND_DEFINITIONS.find((definition) => definition.commandType === commandType)!,
      fields: fields as Record<string, unknown>,
      expectedVersion: options.expectedVersion ?? 0,
      requestId: options.requestId ?? null,
      traceId: 'review',
    });

  /** The accounts whose records say they are enabled Admins. */
  const enabledAdminsByRecord = async (ids: readonly string[]) => {
    const accounts = await Promise.all(ids.map((id) => app.services.accounts.findById(id)));
    return accounts
      .filter((account) => account && !account.disabled && account.roles.includes('Admin'))
      .map((account) => account!.userId)
      .sort();
  };

  it('When enables, disables and role changes of one Admin race, then the enabled-Admin set always matches the records, and the last one stays an Admin', async () => {
    const first = await account(['Admin']);
    const second = await account(['Admin']);
    const commands = [
      () => run(first, 'DisableUser', { aggregateRootId: second.userId, reason: null }),
      () => run(first, 'EnableUser', { aggregateRootId: second.userId }),
      () => run(first, 'SetUserRoles', { aggregateRootId: second.userId, roles: ['Member'] }),
      () => run(first, 'SetUserRoles', { aggregateRootId: second.userId, roles: ['Admin'] }),
      () => run(second, 'SetUserRoles', { aggregateRootId: first.userId, roles: ['Member'] }),
    ];

    for (let round = 0; round < 15; round++) {
      // Each round fires every command at once, in a new order; busy and refused ones are fine.
      const order = [...commands].sort(() => Math.random() - 0.5);
      await Promise.all(order.map((command) => command().catch(() => undefined)));
      const members = (await app.redis.smembers(app.services.keys.enabledAdmins())).sort();
      expect(members).toEqual(await enabledAdminsByRecord([first.userId, second.userId]));
      expect(members.length).toBeGreaterThanOrEqual(1);
    }
  });

  it('When a new password goes with a command the account, the grant rule or the version refuses, then nothing is hashed', async () => {
    const admin = await account(['Admin']);
    const manager = await account(['UserManager']);
    const member = await account(['Member']);
    let hashes = 0;
    const counting: AccountCommandServices = {
      ...app.services,
      newPasswordHasher: {
        hash: (password) => {
          hashes += 1;
          return app.services.newPasswordHasher.hash(password);
        },
      },
    };
    const newPassword = 'x'.repeat(1024);

    const answers = [
      await run(
        manager,
        'SetUserPassword',
        { aggregateRootId: admin.userId, newPassword },
        { services: counting },
      ),
      await run(
        manager,
        'SetUserPassword',
        { aggregateRootId: randomUUID(), newPassword },
        { services: counting },
      ),
      await run(
        member,
        'ChangePassword',
        { currentPassword: PASSWORD, newPassword },
        { services: counting, expectedVersion: 999 },
      ),
    ];

    expect(answers.map((answer) => (answer.kind === 'refused' ? answer.code : answer.kind))).toEqual([
      'COMMAND_FORBIDDEN',
      'COMMAND_VALIDATION_ERROR',
      'CONCURRENCY_CONFLICT',
    ]);
    expect(hashes).toBe(0);
    // A command that goes ahead hashes once.
    await run(
      manager,
      'SetUserPassword',
      { aggregateRootId: member.userId, newPassword },
      { services: counting },
    );
    expect(hashes).toBe(1);
  });

  it('When an applied ChangePassword whose answer was lost is sent again with its requestId, then it is answered as applied, not as a wrong current password', async () => {
    const member = await account(['Member']);
    const requestId = randomUUID();
    const change = () =>
      run(
        member,
        'ChangePassword',
        { currentPassword: PASSWORD, newPassword: 'changed-password-2' },
        { requestId },
      );

    expect(await change()).toEqual({ kind: 'succeeded', eventCount: 1, version: 2 });
    // Lost as when the append's reply never came back: nothing was remembered for the requestId.
    await app.redis.del(app.services.keys.commandResponse(member.userId, requestId, member.userId));

    expect(await change()).toEqual({ kind: 'succeeded', eventCount: 1, version: 2 });
    const { version } = await app.services.store.loadRecord('user', member.userId, null);
    expect(version).toBe(2);
  });

  it('When a UserManager is disabled while its import is queued, then the import creates nothing and fails saying so', async () => {
    const admin = await account(['Admin']);
    const manager = await account(['UserManager']);
    const importJobId = randomUUID();
    const requestId = randomUUID();
    await app.services.importResults.createPending(
      {
        importJobId,
        requestId,
        importerType: 'UserSeeding',
        priority: 'Normal',
        submitterUserId: manager.userId,
        message: 'queued',
        processedSynchronously: false,
        total: 1,
      },
      new Date(),
    );
    expect(
      await run(admin, 'DisableUser', { aggregateRootId: manager.userId, reason: 'compromised' }),
    ).toMatchObject({
      kind: 'succeeded',
    });

    const record = await processImport(
      {
        importJobId,
        requestId,
        importerType: 'UserSeeding',
        priority: 'Normal',
        submitterUserId: manager.userId,
        importData: {
          users: [
            {
              email: 'backdoor@example.com',
              userType: 'ServiceAccount',
              roles: ['Member'],
              password: PASSWORD,
            },
          ],
        },
      },
      app.services,
      app.services.importResults,
      app.config,
    );

    expect(record).toMatchObject({
      status: 'Failed',
      errorMessage: 'The account that submitted this import is disabled',
    });
    expect((await app.services.accounts.findWithCredential('backdoor@example.com')).account).toBeNull();
  });
});
