import type { EventStore } from '../event-store/event-store';
import type { StepsUnderLock } from '../event-store/handle-command';
import type { RedisClient } from '../redis/connections';
import type { Keys } from '../redis/keys';
import { registerScripts } from '../redis/scripts';
import { hasAnyRole } from '../roles';
import { activeUser, userDecider, type UserState } from '../user/user.decider';
import { ACCOUNT_SCRIPTS } from './account.scripts';

/** Whether an account counts among the enabled Admins: live, not disabled, holding Admin. */
export function isEnabledAdmin(
  account: { readonly roles: readonly string[]; readonly disabled?: boolean } | null,
): boolean {
  return account !== null && account.disabled !== true && hasAnyRole(account.roles, ['Admin']);
}

/**
 * The enabled-Admin set's steps around one account's append, run under the account's lock
 * (CommandHandler, StepsUnderLock): an account the decision takes out of the enabled Admins leaves
 * the set first, atomically and only if another member stays (else the command is refused with
 * `lastAdminMessage`); an account the decision makes one joins after the append, before the lock
 * goes. Decided on the account as locked, so no other command on it can come in between. A step
 * that fails is left undone: the set may then lack an enabled Admin (the guard refuses more than it
 * must), never hold another account.
 */
export function enabledAdminSteps(
  admins: EnabledAdmins,
  userId: string,
  lastAdminMessage: string,
): StepsUnderLock<UserState> {
  const leaves = (state: UserState, next: UserState) =>
    isEnabledAdmin(activeUser(state)) && !isEnabledAdmin(activeUser(next));
  const joins = (state: UserState, next: UserState) =>
    !isEnabledAdmin(activeUser(state)) && isEnabledAdmin(activeUser(next));
  return {
    async beforeAppend(state, next) {
      if (!leaves(state, next)) return undefined;
      return (await admins.release(userId)) ? undefined : lastAdminMessage;
    },
    async afterAppend(state, next) {
      if (joins(state, next)) await admins.add(userId).catch(() => undefined);
    },
    async notWritten(state, next) {
      if (leaves(state, next)) await admins.add(userId).catch(() => undefined);
    },
  };
}

/**
 * The enabled Admins, kept beside the accounts so that "the last enabled Admin cannot lose Admin,
 * be disabled or be deleted" holds across aggregates and replicas. An account leaves the set
 * atomically, and only if another stays (release-admin-1.lua), before the append that demotes,
 * disables or deletes it; it is put back if that append wrote nothing. An account joins after the
 * append that made it an enabled Admin. Both happen under the account's lock (enabledAdminSteps).
 * A step lost to a crash leaves an Admin out of the set, never a non-Admin in it: the guard may then
 * refuse more than it must, never less (ADR 0014).
 */
export class EnabledAdmins {
  constructor(
    private readonly redis: RedisClient,
    private readonly keys: Keys,
  ) {
    registerScripts(redis, ACCOUNT_SCRIPTS);
  }

  /**
   * Takes the account out unless it is the last enabled Admin: false then, and nothing changed.
   * True too when it was not in the set (not an enabled Admin: nothing to guard).
   */
  async release(userId: string): Promise<boolean> {
    return (await this.redis.releaseAdmin(this.keys.enabledAdmins(), userId.toLowerCase())) === 1;
  }

  /** The account is an enabled Admin (again). */
  async add(userId: string): Promise<void> {
    await this.redis.sadd(this.keys.enabledAdmins(), userId.toLowerCase());
  }

  async has(userId: string): Promise<boolean> {
    return (await this.redis.sismember(this.keys.enabledAdmins(), userId.toLowerCase())) === 1;
  }

  async count(): Promise<number> {
    return this.redis.scard(this.keys.enabledAdmins());
  }

  /**
   * Builds the set from every account once (a deployment upgraded from before the guard has none):
   * a scan of the user records, run at most once however many replicas start together.
   */
  async ensureBuilt(records: Pick<EventStore, 'recordStates'>): Promise<void> {
    if ((await this.redis.exists(this.keys.enabledAdminsBuilt())) === 1) return;
    const admins: string[] = [];
    for await (const batch of records.recordStates<UserState>(userDecider.aggregateType)) {
      for (const { aggregateId, state } of batch) {
        if (isEnabledAdmin(activeUser(state))) admins.push(aggregateId);
      }
    }
    // Built anew, never merged: a member a lost step left behind does not survive a rebuild.
    const set = this.keys.enabledAdmins();
    const rebuild = this.redis.multi().del(set);
    if (admins.length > 0) rebuild.sadd(set, ...admins);
    await rebuild.exec();
    await this.redis.set(this.keys.enabledAdminsBuilt(), new Date().toISOString());
  }
}
