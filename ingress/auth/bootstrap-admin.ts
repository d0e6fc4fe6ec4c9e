import { SYSTEM_ACTOR } from '../../shared/accounts/account';
import type { AccountService } from '../../shared/accounts/account.service';
import type { Config } from '../../shared/config';
import type { Logger } from '../../shared/logger';

/**
 * Creates the ADMIN_EMAIL account with role Admin if it does not exist, through the same
 * CreateUser path as everyone else. Replicas starting together race on one aggregate; the version
 * fence lets one create it and the others see `exists`, so this is safe to run on every start.
 */
export async function bootstrapAdmin(
  config: Config,
  accounts: AccountService,
  logger: Logger,
): Promise<void> {
  if (!config.adminEmail || !config.adminPassword) return;
  const result = await accounts.createUser(
    SYSTEM_ACTOR,
    {
      email: config.adminEmail,
      userType: 'Human',
      roles: ['Admin'],
      password: config.adminPassword,
      emailVerified: true,
    },
    { requestId: null, correlationId: 'bootstrap-admin' },
  );
  if (result.status === 'created') {
    logger.info('bootstrap admin created', { userId: result.userId });
    return;
  }
  // The e-mail may have been taken before this start (a UserManager can create any e-mail), by an
  // account that is not an Admin and whose password the operator does not know: say so loudly.
  const existing = await accounts.findById(result.userId);
  if (!existing?.roles.includes('Admin')) {
    logger.warn('ADMIN_EMAIL belongs to an account without the Admin role: no administrator was made', {
      userId: result.userId,
      roles: existing?.roles ?? [],
    });
  }
}
