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
