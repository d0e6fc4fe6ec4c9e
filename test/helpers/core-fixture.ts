import { SYSTEM_ACTOR } from '../../shared/accounts/account';
import { loadConfig } from '../../shared/config';
import { createCoreServices } from '../../shared/core-services';
import type { CommandHandlerHooks } from '../../shared/event-store/handle-command';
import type { FantasyTeamCommand } from '../../shared/fantasy-team/fantasy-team.commands';
import { fantasyTeamDecider } from '../../shared/fantasy-team/fantasy-team.decider';
import { createLogger } from '../../shared/logger';
import {
  closeConnections,
  createRedisConnection,
  type RedisClient,
  waitForRedis,
} from '../../shared/redis/connections';
import { testRedisEnv, uniquePrefix } from './app-fixture';
import { seedTestUserIdKey } from './user-ids';

/**
 * The core services (shared/core-services.ts) without HTTP, each build on a key prefix of its own
 * over the test run's Redis: for tests of the event store, accounts and projections. Call it at a
 * test file's top level; what it opens is closed after the file's tests.
 */
export function coreFixture() {
  const logger = createLogger({ level: 'error', processRole: 'test', silent: true });
  const connections: RedisClient[] = [];
  afterAll(async () => {
    await closeConnections(...connections);
    logger.close();
  });

  /** A config with a fresh key prefix (and `env`), a ready request connection, the core services. */
  async function buildCore(env: Record<string, string> = {}, hooks: CommandHandlerHooks = {}) {
    const config = loadConfig({
      NODE_ENV: 'test',
      ...testRedisEnv(),
      REDIS_KEY_PREFIX: uniquePrefix(),
      ...env,
    });
    const redis = createRedisConnection(config.redis, 'request', logger);
    connections.push(redis);
    await waitForRedis(redis, logger);
    await seedTestUserIdKey(redis, config.redisKeyPrefix);
    return { config, redis, ...createCoreServices(config, redis, hooks) };
  }

  return { logger, buildCore, connections };
}

export type Core = Awaited<ReturnType<ReturnType<typeof coreFixture>['buildCore']>>;

/** Runs a team command as the service's own account on `core`; the test fails if it is refused. */
export async function acceptedTeamCommand(
  core: Core,
  aggregateId: string,
  command: FantasyTeamCommand,
): Promise<void> {
  const outcome = await core.commands.handle(fantasyTeamDecider, {
    aggregateId,
    command,
    context: { now: new Date(), actorUserId: SYSTEM_ACTOR.userId, actorRoles: ['Admin'] },
    metadata: { actorUserId: SYSTEM_ACTOR.userId, requestId: null, correlationId: 'core-fixture' },
  });
  expect(outcome.accepted).toBe(true);
}
