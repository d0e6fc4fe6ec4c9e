import { activeUser, type UserState } from '../domain/user/user.decider';
import type { RedisClient } from '../redis/connections';
import { scanKeys } from '../redis/connections';
import type { Keys } from '../redis/keys';
import { registerScripts } from '../redis/scripts';
import { hasAnyRole } from '../roles';
import { ACCOUNT_SCRIPTS } from './account.scripts';

/** Whether an account counts among the enabled Admins: live, not disabled, holding Admin. */
export function isEnabledAdmin(
  account: { readonly roles: readonly string[]; readonly disabled?: boolean } | null,
): boolean {
  return account !== null && account.disabled !== true && hasAnyRole(account.roles, ['Admin']);
}

/**
 * The enabled Admins, kept beside the accounts so that "the last enabled Admin cannot lose Admin,
 * be disabled or be deleted" holds across aggregates and replicas. An account leaves the set
 * atomically, and only if another stays (release-admin-1.lua), BEFORE the command that demotes,
 * disables or deletes it runs; it is put back if that command wrote nothing. An account joins after
 * a command made it an enabled Admin. A step lost to a crash leaves an Admin out of the set, never
 * a non-Admin in it: the guard may then refuse more than it must, never less (ADR 0014).
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

  async count(): Promise<number> {
    return this.redis.scard(this.keys.enabledAdmins());
  }

  /**
   * Builds the set from every account once (a deployment upgraded from before the guard has none):
   * a scan of the user records, run at most once however many replicas start together.
   */
  async ensureBuilt(): Promise<void> {
    if ((await this.redis.exists(this.keys.enabledAdminsBuilt())) === 1) return;
    for await (const recordKeys of scanKeys(this.redis, this.keys.aggregateRecordPattern('user'))) {
      const states = await Promise.all(recordKeys.map((key) => this.redis.hget(key, 'state')));
      const admins = recordKeys
        .filter((_, index) => {
          const state = states[index];
          return typeof state === 'string' && isEnabledAdmin(activeUser(JSON.parse(state) as UserState));
        })
        .map((key) => this.keys.aggregateIdOfRecord(key));
      if (admins.length > 0) await this.redis.sadd(this.keys.enabledAdmins(), ...admins);
    }
    await this.redis.set(this.keys.enabledAdminsBuilt(), new Date().toISOString());
  }
}
