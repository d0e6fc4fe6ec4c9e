/**
 * The roles and their hierarchy: the one place that says what each role includes.
 * `Public` is implicit: every authenticated account has it, none is assigned it.
 */
export const ASSIGNABLE_ROLES = ['Member', 'Admin', 'ServiceAccount', 'UserManager'] as const;
export type AssignableRole = (typeof ASSIGNABLE_ROLES)[number];
export const PUBLIC_ROLE = 'Public';
export type Role = AssignableRole | typeof PUBLIC_ROLE;

const INCLUDES: Readonly<Record<AssignableRole, readonly AssignableRole[]>> = {
  Admin: ['UserManager', 'Member'],
  UserManager: ['Member'],
  Member: [],
  ServiceAccount: [],
};

export function isAssignableRole(role: string): role is AssignableRole {
  return (ASSIGNABLE_ROLES as readonly string[]).includes(role);
}

/** Assigned roles plus everything they include, plus Public, in a stable order. */
export function effectiveRoles(assigned: readonly string[]): Role[] {
  const result = new Set<Role>();
  const visit = (role: AssignableRole) => {
    if (result.has(role)) return;
    result.add(role);
    INCLUDES[role].forEach(visit);
  };
  assigned.filter(isAssignableRole).forEach(visit);
  return [...ASSIGNABLE_ROLES.filter((role) => result.has(role)), PUBLIC_ROLE];
}

/**
 * Each assignable role with every role it includes (itself too), from INCLUDES, made once: a role
 * check on every command (hasAnyRole) then builds no set, list or closure.
 */
const EFFECTIVE_ROLES: ReadonlyMap<string, ReadonlySet<Role>> = new Map(
  ASSIGNABLE_ROLES.map((role) => [role, new Set(effectiveRoles([role]))]),
);

/** True when the account's effective roles include at least one of `required`. */
export function hasAnyRole(assigned: readonly string[], required: readonly Role[]): boolean {
  if (required.length === 0) return true;
  for (const role of required) {
    if (role === PUBLIC_ROLE) return true;
    for (const held of assigned) if (EFFECTIVE_ROLES.get(held)?.has(role)) return true;
  }
  return false;
}

/**
 * Who may read accounts (GetUser, ListUsers): the only readers that get an account's personal data
 * (e-mail, user name, first and last name), whether from a query or from a user event on the event
 * stream (ADR 0016).
 */
export const ACCOUNT_READER_ROLES: readonly Role[] = ['UserManager', 'Admin'];

/**
 * The classes the shared caps (event streams, `minVersion` waits) are split by, from the most
 * trusted down: an account belongs to the first class whose role it holds, and one with none of
 * them to Member. Each class has its own share of a global cap, so the accounts of one class (100
 * Members a UserManager minted, say) cannot take the slots of the others.
 */
export const ROLE_CLASSES = ['Admin', 'UserManager', 'ServiceAccount', 'Member'] as const;
export type RoleClass = (typeof ROLE_CLASSES)[number];

/** The cap class of an account holding `assigned` (ROLE_CLASSES). */
export function roleClassOf(assigned: readonly string[]): RoleClass {
  return ROLE_CLASSES.find((roleClass) => assigned.includes(roleClass)) ?? 'Member';
}

/** The rule for owned things (teams, imports): the owner, or anyone with Admin. */
export function isOwnerOrAdmin(
  actor: { readonly userId: string; readonly roles: readonly string[] },
  ownerUserId: string,
): boolean {
  return actor.userId === ownerUserId || hasAnyRole(actor.roles, ['Admin']);
}

/**
 * How a refusal names the account that acts: `User '<email>' (<user id>)` (spec 4.6 rule 3). The
 * one form every message naming an account uses, so an erasure finds the e-mail in a kept message
 * by the id that follows it (withoutAccountEmail).
 */
export function accountMention(actor: { readonly email: string; readonly userId: string }): string {
  return `User '${actor.email}' (${actor.userId})`;
}

/** What an erased account's e-mail reads as in a message kept after its erasure (ADR 0014). */
export const ERASED_EMAIL = '[erased]';

function mentionPattern(userId: string): RegExp {
  const id = userId.toLowerCase().replace(/[^0-9a-z-]/g, (c) => `\\${c}`);
  // The e-mail runs up to the first "' (": an e-mail holds no space.
  return new RegExp(`User '(?:(?!' \\().)*' \\(${id}\\)`, 'gi');
}

/** Whether `text` names the account `userId` as accountMention does. */
export function mentionsAccount(text: string, userId: string): boolean {
  return mentionPattern(userId).test(text);
}

/** `text` with every accountMention of `userId` holding ERASED_EMAIL for the e-mail. */
export function withoutAccountEmail(text: string, userId: string): string {
  return text.replace(
    mentionPattern(userId),
    accountMention({ email: ERASED_EMAIL, userId: userId.toLowerCase() }),
  );
}

/**
 * The refusal text when an account lacks the roles for a command (spec 4.6 rule 3), e.g.
 * `User 'a@b.c' (<id>) lacks required roles to execute CreateUserCommand. Required roles: [UserManager, Admin]. User roles: [Member].`
 */
export function lacksRolesMessage(
  actor: { readonly email: string; readonly userId: string; readonly roles: readonly string[] },
  commandType: string,
  required: readonly Role[],
): string {
  return (
    `${accountMention(actor)} lacks required roles to execute ${commandType}Command. ` +
    `Required roles: [${required.join(', ')}]. User roles: [${actor.roles.join(', ')}].`
  );
}

/**
 * Who may grant which role, beside the hierarchy it follows: an account grants only what lets the
 * grantee read no more than the grantor reads itself. Admin grants any; UserManager grants Member
 * only: never UserManager or Admin (its own level or above), nor ServiceAccount, which reads the
 * whole event stream (teams and personal data a UserManager may not read; ADR 0016). Others grant
 * nothing. An account's reach is the union over its assigned roles.
 */
const GRANTS: Readonly<Record<AssignableRole, readonly AssignableRole[]>> = {
  Admin: ASSIGNABLE_ROLES,
  UserManager: ['Member'],
  Member: [],
  ServiceAccount: [],
};

/** The roles an account holding `assigned` may give another account, in ASSIGNABLE_ROLES order. */
export function grantableRoles(assigned: readonly string[]): AssignableRole[] {
  const reach = new Set(assigned.filter(isAssignableRole).flatMap((role) => GRANTS[role]));
  return ASSIGNABLE_ROLES.filter((role) => reach.has(role));
}

/** The first of `requested` that an account holding `assigned` may not grant; undefined when all are fine. */
export function firstUngrantableRole(
  assigned: readonly string[],
  requested: readonly string[],
): string | undefined {
  const grantable: readonly string[] = grantableRoles(assigned);
  return requested.find((role) => !grantable.includes(role));
}

/**
 * The grant rule, as every path that gives roles asks it (creating an account, setting its roles,
 * a user-seeding import): undefined when `actor` may give every role of `requested`, else the
 * refusal's text for the first role beyond its reach.
 */
export function grantRefusal(
  actor: { readonly email: string; readonly userId: string; readonly roles: readonly string[] },
  requested: readonly string[],
): string | undefined {
  const role = firstUngrantableRole(actor.roles, requested);
  return role === undefined ? undefined : mayNotGrantMessage(actor, role);
}

/**
 * The refusal text when an account asks for a role beyond its reach, e.g.
 * `User 'um@b.c' (<id>) may not grant role Admin. Grantable roles: [Member].`
 */
export function mayNotGrantMessage(
  actor: { readonly email: string; readonly userId: string; readonly roles: readonly string[] },
  role: string,
): string {
  return (
    `${accountMention(actor)} may not grant role ${role}. ` +
    `Grantable roles: [${grantableRoles(actor.roles).join(', ')}].`
  );
}
