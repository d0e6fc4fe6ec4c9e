import { duplicateConnection, type RedisClient } from '../shared/redis/connections';

import { AccountCache } from '../shared/accounts/account-cache';
import { createCoreServices, type CoreServices } from '../shared/composition';
import type { Logger } from '../shared/logger';
import type { Config } from '../shared/config';
import type { CommandHandlerHooks } from '../shared/event-store/handle-command';
import { AccountRateLimit } from './auth/account-rate-limit';
import { CredentialVerifier } from './auth/credential-verifier';
import { createAuthentication, type Authentication } from './auth/passport';
import { SignInThrottle } from './auth/sign-in-throttle';
import { TokenService } from './auth/token-service';
import { ImportQueue } from '../shared/importers/import-queue';
import { ImportResults } from '../shared/importers/import-results';
import { CommandIdempotency } from './command/idempotency';

export interface IngressServices extends CoreServices {
  readonly verifier: CredentialVerifier;
  readonly tokens: TokenService;
  readonly authentication: Authentication;
  readonly idempotency: CommandIdempotency;
  readonly importQueue: ImportQueue;
  readonly importResults: ImportResults;
  readonly accountCache: AccountCache;
  /** Closes what the services opened themselves (the cache's subscriber, the queue). */
  close(): Promise<void>;
}

/** Builds everything the HTTP app uses. Needs Redis up (it may read the shared JWT secret). */
export async function createIngressServices(
  config: Config,
  redis: RedisClient,
  logger: Logger,
  hooks: CommandHandlerHooks = {},
): Promise<IngressServices> {
  const core = createCoreServices(config, redis, hooks);
  const throttle = new SignInThrottle(redis, core.keys, config.auth);
  const accountCache = await AccountCache.start(
    core.accounts,
    // Its own connection: a subscribed connection can run nothing else.
    duplicateConnection(redis, logger, 'account-cache'),
    core.keys,
    config.auth.cacheTtlSeconds,
    logger,
  );
  const verifier = await CredentialVerifier.create(
    core.accounts,
    accountCache,
    core.hasher,
    throttle,
    config.auth.cacheTtlSeconds,
  );
  const tokens = await TokenService.create(config, redis, core.keys);
  const authentication = createAuthentication(
    verifier,
    tokens,
    accountCache,
    new AccountRateLimit(redis, core.keys, config.rateLimit),
  );
  const idempotency = new CommandIdempotency(redis, core.keys);
  // The queue shares the request connection: adding a job must fail fast while Redis is away.
  const importQueue = new ImportQueue(redis, redis, core.keys, config, logger);
  const importResults = new ImportResults(redis, core.keys, config.imports.resultTtlSeconds);
  return {
    ...core,
    verifier,
    tokens,
    authentication,
    idempotency,
    importQueue,
    importResults,
    accountCache,
    async close() {
      await Promise.all([accountCache.close(), importQueue.close()]);
    },
  };
}
