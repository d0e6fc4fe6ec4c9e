import type { RedisClient } from './redis/connections';

import { AccountService } from './accounts/account.service';
import { Argon2PasswordHasher } from './accounts/argon2-password-hasher';
import type { Config } from './config';
import { EventStore } from './event-store/event-store';
import { CommandHandler, type CommandHandlerHooks } from './event-store/handle-command';
import { createKeys } from './redis/keys';

/** What both processes build on: the key layout, the event store, the command path, accounts. */
export function createCoreServices(config: Config, redis: RedisClient, hooks: CommandHandlerHooks = {}) {
  const keys = createKeys(config.redisKeyPrefix);
  const store = new EventStore(redis, keys);
  const commands = new CommandHandler(store, config.lock, hooks);
  const hasher = new Argon2PasswordHasher();
  const accounts = new AccountService(store, commands, hasher);
  return { keys, store, commands, hasher, accounts };
}

export type CoreServices = ReturnType<typeof createCoreServices>;
