import type { Redis } from 'ioredis';

import { createCoreServices, type CoreServices } from '../shared/composition';
import type { Config } from '../shared/config';
import type { CommandHandlerHooks } from '../shared/event-store/handle-command';
import { CredentialVerifier } from './auth/credential-verifier';
import { createPassport, type PassportAuthenticator } from './auth/passport';
import { SignInThrottle } from './auth/sign-in-throttle';
import { TokenService } from './auth/token-service';
import { ImportQueue } from '../shared/importers/import-queue';
import { ImportResults } from '../shared/importers/import-results';
import { CommandIdempotency } from './command/idempotency';

export interface IngressServices extends CoreServices {
  readonly verifier: CredentialVerifier;
  readonly tokens: TokenService;
  readonly passport: PassportAuthenticator;
  readonly idempotency: CommandIdempotency;
  readonly importQueue: ImportQueue;
  readonly importResults: ImportResults;
}

/** Builds everything the HTTP app uses. Needs Redis up (it may read the shared JWT secret). */
export async function createIngressServices(
  config: Config,
  redis: Redis,
  hooks: CommandHandlerHooks = {},
): Promise<IngressServices> {
  const core = createCoreServices(config, redis, hooks);
  const throttle = new SignInThrottle(redis, core.keys, config.auth);
  const verifier = await CredentialVerifier.create(
    core.accounts,
    core.hasher,
    throttle,
    config.auth.cacheTtlSeconds,
  );
  const tokens = await TokenService.create(config, redis, core.keys);
  const passport = createPassport(verifier, tokens, core.accounts);
  const idempotency = new CommandIdempotency(redis, core.keys);
  // The queue shares the request connection: adding a job must fail fast while Redis is away.
  const importQueue = new ImportQueue(redis, redis, core.keys, config);
  const importResults = new ImportResults(redis, core.keys, config.imports.resultTtlSeconds);
  return { ...core, verifier, tokens, passport, idempotency, importQueue, importResults };
}
