/**
 * Runs RACE_COMMANDS Increment commands on the counter RACE_AGGREGATE_ID, one after another,
 * through the real command handler, then prints one JSON line:
 * `{"race":"done","accepted":n,"rejected":n,"failed":n,"errors":[...],"startedAt":ms,"finishedAt":ms}`.
 *
 * Started twice at once by test/integration/event-store/event-store.test.ts to race two processes on one
 * stream. It prints `{"race":"ready"}` once connected and waits for RACE_GO_KEY to exist, so both
 * processes begin together however long each took to start.
 *
 * Env: REDIS_URL or REDIS_CLUSTER_NODES, REDIS_KEY_PREFIX, LOCK_WAIT_MS, LOCK_TTL_MS (read by loadConfig), plus
 * RACE_AGGREGATE_ID, RACE_COMMANDS, RACE_GO_KEY.
 */
import { loadConfig } from '../../shared/config';
import { createCoreServices } from '../../shared/core-services';
import { createLogger } from '../../shared/logger';
import { closeConnections, createRedisConnection, waitForRedis } from '../../shared/redis/connections';
import { counterDecider, INCREMENT } from './race-counter.decider';

function required(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is required`);
  return value;
}

async function main(): Promise<void> {
  const aggregateId = required('RACE_AGGREGATE_ID');
  const commands = Number(required('RACE_COMMANDS'));
  const goKey = required('RACE_GO_KEY');
  const config = loadConfig(process.env);
  const logger = createLogger({ level: 'error', processRole: 'race-appender', silent: true });
  const redis = createRedisConnection(config.redis, 'request', logger);
  await waitForRedis(redis, logger);
  const core = createCoreServices(config, redis);

  console.log(JSON.stringify({ race: 'ready', pid: process.pid }));
  while ((await redis.exists(goKey)) === 0) await new Promise((resolve) => setTimeout(resolve, 5));

  const startedAt = Date.now();
  let accepted = 0;
  let rejected = 0;
  const errors: string[] = [];
  for (let i = 0; i < commands; i++) {
    try {
      const outcome = await core.commands.handle(counterDecider, {
        aggregateId,
        command: INCREMENT,
        context: { now: new Date(), actorUserId: 'race-appender', actorRoles: [] },
        metadata: { actorUserId: 'race-appender', requestId: null, correlationId: `race-${process.pid}` },
      });
      if (outcome.accepted) accepted++;
      else rejected++;
    } catch (error) {
      errors.push(error instanceof Error ? `${error.name}: ${error.message}` : String(error));
    }
  }

  const finishedAt = Date.now();
  console.log(
    JSON.stringify({
      race: 'done',
      pid: process.pid,
      accepted,
      rejected,
      failed: errors.length,
      errors,
      startedAt,
      finishedAt,
    }),
  );
  await closeConnections(redis);
  logger.close();
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
