import { AccountService } from './accounts/account.service';
import { Argon2PasswordHasher } from './accounts/argon2-password-hasher';
import { EnabledAdmins } from './accounts/enabled-admins';
import type { Config } from './config';
import { ALL_DECIDERS } from './domain/all-deciders';
import { EventStore } from './event-store/event-store';
import { CommandHandler, type CommandHandlerHooks } from './event-store/handle-command';
import type { RedisClient } from './redis/connections';
import { createKeys } from './redis/keys';

/**
 * The services both processes build on: the key layout, the event store, the command path,
 * accounts (what an importer runs with, inline or in a worker). Not a composition root: each
 * process has exactly one, which builds these first and then its own on top of them —
 * `createIngressServices` (ingress/composition-root.ts) for the HTTP process, `main`
 * (workers/main.ts) for the workers. Kept apart so a worker never builds (or imports) what only
 * the HTTP process needs: authentication, the command endpoint's use cases, the import submission.
 */
export function createCoreServices(config: Config, redis: RedisClient, hooks: CommandHandlerHooks = {}) {
  const keys = createKeys(config.redisKeyPrefix);
  const store = new EventStore(redis, keys, ALL_DECIDERS);
  const commands = new CommandHandler(store, config.lock, hooks);
  const hasher = new Argon2PasswordHasher();
  const admins = new EnabledAdmins(redis, keys);
  const accounts = new AccountService(store, commands, hasher, admins);
  return { keys, store, commands, hasher, accounts, admins };
}

export type CoreServices = ReturnType<typeof createCoreServices>;
