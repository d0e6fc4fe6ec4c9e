import { AccountService } from './accounts/account.service';
import { AccountErasureService } from './accounts/account-erasure';
import { Argon2PasswordHasher } from './accounts/argon2-password-hasher';
import { EnabledAdmins } from './accounts/enabled-admins';
import { UserIds } from './accounts/user-ids';
import type { Config } from './config';
import { ALL_ENVELOPE_CODECS } from './envelope-codecs';
import { ALL_DECIDERS } from './event-store/all-deciders';
import { CommandIdempotency } from './event-store/command-idempotency';
import { EventStore } from './event-store/event-store';
import { CommandHandler, type CommandHandlerHooks } from './event-store/handle-command';
import { writeDurability } from './event-store/write-durability';
import { TeamTombstone } from './fantasy-team/team-tombstone';
import { ImportRecordErasure } from './importers/import-record-erasure';
import type { RedisClient } from './redis/connections';
import { createKeys, type Keys } from './redis/keys';

/**
 * The event store as every process and script uses it: snapshots kept in each decider's current
 * shape, and the events of every aggregate type with a codec sealed at rest (ADR 0014).
 */
export function createEventStore(redis: RedisClient, keys: Keys): EventStore {
  return new EventStore(redis, keys, ALL_DECIDERS, ALL_ENVELOPE_CODECS);
}

/**
 * The services both processes build on: the key layout, the event store, the command path,
 * accounts (what an importer runs with, inline or in a worker), and the erasure that follows an
 * account's deletion (which creating an account may have to finish). Not a composition root: each
 * process has exactly one, which builds these first and then its own on top of them —
 * `createIngressServices` (ingress/composition-root.ts) for the HTTP process, `main`
 * (workers/main.ts) for the workers. Kept apart so a worker never builds (or imports) what only
 * the HTTP process needs: authentication, the command endpoint's use cases, the import submission.
 */
export function createCoreServices(config: Config, redis: RedisClient, hooks: CommandHandlerHooks = {}) {
  const keys = createKeys(config.redisKeyPrefix);
  const store = createEventStore(redis, keys);
  const durability = writeDurability(config.writeDurability, redis, keys);
  const commands = new CommandHandler(store, config.lock, hooks, durability);
  const hasher = new Argon2PasswordHasher();
  const admins = new EnabledAdmins(redis, keys);
  const teamTombstone = new TeamTombstone(redis, keys, commands);
  const erasure = new AccountErasureService(
    store,
    teamTombstone,
    new ImportRecordErasure(redis, keys),
    new CommandIdempotency(redis, keys),
  );
  const accounts = new AccountService(
    store,
    commands,
    hasher,
    admins,
    erasure,
    new UserIds(redis, keys, store),
  );
  return {
    keys,
    store,
    commands,
    hasher,
    accounts,
    admins,
    teamTombstone,
    erasure,
    /** Closes the connections of the core's own (the replicated writes'); not `redis`. */
    close: () => durability.close(),
  };
}

export type CoreServices = ReturnType<typeof createCoreServices>;
