import type { Account } from '../../shared/accounts/account';
import {
  submitterCheck,
  submitterRevocation,
  type SubmitterTie,
} from '../../shared/importers/submitter-check';

const USER_ID = '6a3c1b52-0d5e-5f1a-9b8e-2c4d6e8f0a1b';
const TIE: SubmitterTie = {
  userId: USER_ID,
  securityStamp: 'stamp-at-submission',
  submittedAt: '2026-11-27T10:00:00.000Z',
  requiredRoles: ['UserManager', 'Admin'],
};

function account(changes: Partial<Account> = {}): Account {
  return {
    userId: USER_ID,
    email: 'manager@example.com',
    userName: 'manager@example.com',
    userType: 'Human',
    roles: ['UserManager'],
    firstName: null,
    lastName: null,
    emailVerified: false,
    createdAt: '2026-11-27T09:00:00.000Z',
    updatedAt: '2026-11-27T09:00:00.000Z',
    disabled: false,
    disabledReason: null,
    securityStamp: 'stamp-at-submission',
    version: 1,
    ...changes,
  };
}

describe('submitterRevocation', () => {
  it('When the submitter is as it submitted, then nothing revokes the import', () => {
    expect(submitterRevocation(account(), TIE)).toBeNull();
  });

  it('When the submitter is gone, or its id belongs to an account created after the import, then it was deleted', () => {
    expect(submitterRevocation(null, TIE)).toBe(`the submitter ${USER_ID} was deleted`);
    expect(submitterRevocation(account({ createdAt: '2026-11-27T11:00:00.000Z' }), TIE)).toBe(
      `the submitter ${USER_ID} was deleted`,
    );
  });

  it('When several things changed, then the plainest cause is named: disabled before the role, the role before the stamp', () => {
    const changed = { disabled: true, roles: ['Member'] as Account['roles'], securityStamp: 'new' };
    expect(submitterRevocation(account(changed), TIE)).toBe(`the submitter ${USER_ID} was disabled`);
    expect(submitterRevocation(account({ ...changed, disabled: false }), TIE)).toBe(
      `the submitter ${USER_ID} no longer holds a required role. Required roles: [UserManager, Admin]. User roles: [Member].`,
    );
    expect(submitterRevocation(account({ securityStamp: 'new' }), TIE)).toBe(
      `the security stamp of the submitter ${USER_ID} changed (its password or roles were changed)`,
    );
  });

  it('When the job carries no stamp (queued before imports were tied to one), then only enabled and role count', () => {
    const { securityStamp: _stamp, ...untied } = TIE;
    expect(submitterRevocation(account({ securityStamp: 'new' }), untied)).toBeNull();
  });
});

describe('submitterCheck', () => {
  it('When rows start at once, then they share one read, and within the interval none reads again', async () => {
    let reads = 0;
    const check = submitterCheck(
      () => {
        reads += 1;
        return Promise.resolve(account());
      },
      TIE,
      60_000,
    );
    expect(await Promise.all([check.mayContinue(), check.mayContinue(), check.mayContinue()])).toEqual([
      true,
      true,
      true,
    ]);
    expect(await check.mayContinue()).toBe(true);
    expect(reads).toBe(1);
  });

  it('When a read finds the submitter revoked, then it stays stopped with that reason, whatever later reads say', async () => {
    const answers = [account({ disabled: true }), account()];
    const check = submitterCheck(() => Promise.resolve(answers.shift() ?? account()), TIE, 0);
    expect(await check.mayContinue()).toBe(false);
    expect(await check.mayContinue()).toBe(false);
    expect(check.stopReason).toBe(`the submitter ${USER_ID} was disabled`);
  });
});
