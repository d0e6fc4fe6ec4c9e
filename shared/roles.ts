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

/** True when the account's effective roles include at least one of `required`. */
export function hasAnyRole(assigned: readonly string[], required: readonly Role[]): boolean {
  if (required.length === 0) return true;
  const effective = effectiveRoles(assigned);
  return required.some((role) => effective.includes(role));
}

/** The rule for owned things (teams, imports): the owner, or anyone with Admin. */
export function isOwnerOrAdmin(
  actor: { readonly userId: string; readonly roles: readonly string[] },
  ownerUserId: string,
): boolean {
  return actor.userId === ownerUserId || hasAnyRole(actor.roles, ['Admin']);
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
    `User '${actor.email}' (${actor.userId}) lacks required roles to execute ${commandType}Command. ` +
    `Required roles: [${required.join(', ')}]. User roles: [${actor.roles.join(', ')}].`
  );
}

/**
 * Who may grant which role, beside the hierarchy it follows: an account grants only roles within
 * its own reach. Admin grants any; UserManager grants Member and ServiceAccount (never UserManager
 * or Admin, so a UserManager cannot raise anyone to its own level or above); others grant nothing.
 * An account's reach is the union over its assigned roles.
 */
const GRANTS: Readonly<Record<AssignableRole, readonly AssignableRole[]>> = {
  Admin: ASSIGNABLE_ROLES,
  UserManager: ['Member', 'ServiceAccount'],
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
 * The refusal text when an account asks for a role beyond its reach, e.g.
 * `User 'um@b.c' (<id>) may not grant role Admin. Grantable roles: [Member, ServiceAccount].`
 */
export function mayNotGrantMessage(
  actor: { readonly email: string; readonly userId: string; readonly roles: readonly string[] },
  role: string,
): string {
  return (
    `User '${actor.email}' (${actor.userId}) may not grant role ${role}. ` +
    `Grantable roles: [${grantableRoles(actor.roles).join(', ')}].`
  );
}
