import {
  accountMention,
  effectiveRoles,
  ERASED_EMAIL,
  firstUngrantableRole,
  grantableRoles,
  grantRefusal,
  hasAnyRole,
  lacksRolesMessage,
  mayNotGrantMessage,
  mentionsAccount,
  roleClassOf,
  withoutAccountEmail,
} from '../../shared/roles';

/** Order-insensitive: the hierarchy is a set of roles, whatever order it is listed in. */
const sorted = (roles: readonly string[]) => [...roles].sort();

describe('effectiveRoles', () => {
  it.each([
    [['Admin'], ['Admin', 'UserManager', 'Member', 'Public']],
    [['UserManager'], ['UserManager', 'Member', 'Public']],
    [['ServiceAccount'], ['ServiceAccount', 'Public']],
    [['Member'], ['Member', 'Public']],
    [[], ['Public']],
  ])('When the account holds %j, then its effective roles are %j', (assigned, expected) => {
    const effective = effectiveRoles(assigned);
    expect(sorted(effective)).toEqual(sorted(expected));
    expect(new Set(effective).size).toBe(effective.length);
  });

  it('When an assigned role is unknown, then it is ignored', () => {
    expect(sorted(effectiveRoles(['Member', 'Overlord']))).toEqual(['Member', 'Public']);
    expect(effectiveRoles(['Public'])).toEqual(['Public']);
  });

  it('When the same roles are assigned in another order, then the result is the same list', () => {
    expect(effectiveRoles(['Member', 'Admin', 'ServiceAccount'])).toEqual(
      effectiveRoles(['ServiceAccount', 'Admin', 'Member', 'Admin']),
    );
  });
});

describe('hasAnyRole', () => {
  it('When an Admin needs UserManager, then the hierarchy satisfies it', () => {
    expect(hasAnyRole(['Admin'], ['UserManager'])).toBe(true);
  });

  it('When a Member needs UserManager or Admin, then it is not satisfied', () => {
    expect(hasAnyRole(['Member'], ['UserManager', 'Admin'])).toBe(false);
  });

  it('When a ServiceAccount needs Member, then it is not satisfied (it includes nothing)', () => {
    expect(hasAnyRole(['ServiceAccount'], ['Member'])).toBe(false);
  });

  it('When nothing is required, then any account qualifies, even one with no roles', () => {
    expect(hasAnyRole([], [])).toBe(true);
    expect(hasAnyRole(['Member'], [])).toBe(true);
  });

  it('When Public is required, then every account qualifies', () => {
    expect(hasAnyRole([], ['Public'])).toBe(true);
  });
});

describe('lacksRolesMessage', () => {
  it('When a Member tries CreateUser, then the refusal names the account, the command and both role lists', () => {
    expect(
      lacksRolesMessage({ email: 'a@b.c', userId: 'id', roles: ['Member'] }, 'CreateUser', [
        'UserManager',
        'Admin',
      ]),
    ).toBe(
      "User 'a@b.c' (id) lacks required roles to execute CreateUserCommand. Required roles: [UserManager, Admin]. User roles: [Member].",
    );
  });
});

describe('grantableRoles (who may grant which role)', () => {
  it.each([
    [['Admin'], ['Member', 'Admin', 'ServiceAccount', 'UserManager']],
    [['UserManager'], ['Member']],
    [['Member'], []],
    [['ServiceAccount'], []],
    [[], []],
    [['UserManager', 'Member'], ['Member']],
    [['UserManager', 'ServiceAccount'], ['Member']],
    [
      ['Member', 'Admin'],
      ['Member', 'Admin', 'ServiceAccount', 'UserManager'],
    ],
  ])('When the account holds %j, then it may grant %j', (assigned, expected) => {
    expect(grantableRoles(assigned)).toEqual(expected);
  });

  it('When an assigned role is unknown, then it grants nothing', () => {
    expect(grantableRoles(['Overlord', 'Public'])).toEqual([]);
  });

  it('When a UserManager asks for Admin or UserManager, then the first of them is the one refused', () => {
    expect(firstUngrantableRole(['UserManager'], ['Member', 'Admin'])).toBe('Admin');
    expect(firstUngrantableRole(['UserManager'], ['UserManager', 'Admin'])).toBe('UserManager');
    expect(firstUngrantableRole(['UserManager'], ['Member', 'Member'])).toBeUndefined();
  });

  it('When a UserManager asks for ServiceAccount, then it is refused: a ServiceAccount reads what the UserManager may not', () => {
    expect(firstUngrantableRole(['UserManager'], ['Member', 'ServiceAccount'])).toBe('ServiceAccount');
    expect(firstUngrantableRole(['Admin'], ['ServiceAccount'])).toBeUndefined();
  });

  it('When an Admin asks for any role, then nothing is refused', () => {
    expect(
      firstUngrantableRole(['Admin'], ['Admin', 'UserManager', 'Member', 'ServiceAccount']),
    ).toBeUndefined();
  });

  it('When a role is refused, then the message names the submitter, the role and what it may grant', () => {
    const actor = { email: 'um@example.com', userId: 'a1b2', roles: ['UserManager'] };
    expect(mayNotGrantMessage(actor, 'Admin')).toBe(
      "User 'um@example.com' (a1b2) may not grant role Admin. Grantable roles: [Member].",
    );
    expect(mayNotGrantMessage({ ...actor, roles: ['Member'] }, 'Member')).toBe(
      "User 'um@example.com' (a1b2) may not grant role Member. Grantable roles: [].",
    );
  });

  it('When a path that gives roles asks the grant rule, then it gets the refusal of the first role beyond reach, or nothing', () => {
    const actor = { email: 'um@example.com', userId: 'a1b2', roles: ['UserManager'] };
    expect(grantRefusal(actor, ['Member', 'ServiceAccount', 'Admin'])).toBe(
      "User 'um@example.com' (a1b2) may not grant role ServiceAccount. Grantable roles: [Member].",
    );
    expect(grantRefusal(actor, ['Member'])).toBeUndefined();
  });
});

describe('Messages naming an account, and erasing its e-mail from them', () => {
  const ID = 'd2d40107-4c8f-55d9-bea2-64223f7a6590';
  const OTHER = '11111111-2222-5333-8444-555555555555';

  it("When a message names the account (even an e-mail with an apostrophe), then its e-mail becomes [erased] and nothing else changes; another account's mention is kept", () => {
    const text =
      `Import failed at aggregate ${OTHER}: ` +
      lacksRolesMessage({ email: "o'brien@example.com", userId: ID, roles: ['Member'] }, 'CreateUser', [
        'Admin',
      ]) +
      ` Also ${accountMention({ email: 'kept@example.com', userId: OTHER })}.`;
    expect(mentionsAccount(text, ID)).toBe(true);
    expect(mentionsAccount(text, ID.toUpperCase())).toBe(true);
    const scrubbed = withoutAccountEmail(text, ID);
    expect(scrubbed).toBe(
      `Import failed at aggregate ${OTHER}: User '${ERASED_EMAIL}' (${ID}) lacks required roles to execute CreateUserCommand. ` +
        `Required roles: [Admin]. User roles: [Member]. Also User 'kept@example.com' (${OTHER}).`,
    );
    expect(mentionsAccount(withoutAccountEmail('no mention here', ID), ID)).toBe(false);
  });

  it('When every refusal naming an actor is built, then it uses the one form accountMention gives', () => {
    const actor = { email: 'um@example.com', userId: ID, roles: ['UserManager'] };
    expect(mayNotGrantMessage(actor, 'Admin')).toContain(accountMention(actor));
    expect(lacksRolesMessage(actor, 'X', ['Admin'])).toContain(accountMention(actor));
  });
});

describe('roleClassOf (the classes the shared caps are split by)', () => {
  it.each([
    [['Admin', 'Member'], 'Admin'],
    [['Member', 'UserManager'], 'UserManager'],
    [['ServiceAccount'], 'ServiceAccount'],
    [['Member', 'ServiceAccount'], 'ServiceAccount'],
    [['Member'], 'Member'],
    [[], 'Member'],
  ])('When the account holds %j, then its class is %s', (assigned, expected) => {
    expect(roleClassOf(assigned)).toBe(expected);
  });
});
