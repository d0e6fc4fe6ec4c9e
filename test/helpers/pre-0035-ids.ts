import { SYSTEM_ACTOR } from '../../shared/accounts/account';
import { AccountService, type NewUser } from '../../shared/accounts/account.service';
import type { UserIds } from '../../shared/accounts/user-ids';
import type { CoreServices } from '../../shared/core-services';
import { legacyUserIdForEmail } from '../../shared/user/user-id';

/**
 * Creates an account as the service did before ADR 0035: the same command path, but under the
 * public UUIDv5 of its e-mail. What it writes stands for an account a deployment kept from an older
 * version, for the tests of an upgrade in place. Returns its id.
 */
export async function createAccountAsBefore0035(
  services: CoreServices,
  user: Partial<NewUser> & { email: string; password: string },
): Promise<string> {
  const idsBefore0035 = {
    idFor: (email: string) => Promise.resolve(legacyUserIdForEmail(email)),
    newIdFor: (email: string) => Promise.resolve(legacyUserIdForEmail(email)),
  } as unknown as UserIds;
  const accounts = new AccountService(
    services.store,
    services.commands,
    services.hasher,
    services.admins,
    services.erasure,
    idsBefore0035,
  );
  const result = await accounts.createUser(
    SYSTEM_ACTOR,
    { userType: 'Human', roles: ['Member'], ...user },
    { requestId: null, correlationId: 'before-adr-0035' },
  );
  if (result.status !== 'created') throw new Error(`account not created: ${result.status}`);
  if (result.userId !== legacyUserIdForEmail(user.email)) throw new Error('not the id of before ADR 0035');
  return result.userId;
}
