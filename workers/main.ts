import './tracing';

import { ConfigError } from '../shared/config';
import type { WorkerConsumer } from '../shared/config/parse';
import { createCoreServices, createEventStore } from '../shared/core-services';
import { LogTrimmer } from '../shared/event-stream/log-retention';
import { listen, type RunningServer } from '../shared/http/server';
import { ImportQueue } from '../shared/importers/import-queue';
import { ImportResults } from '../shared/importers/import-results';
import { JobDataCipher } from '../shared/importers/job-data-cipher';
import { installShutdownHooks, loadConfigOrExit } from '../shared/lifecycle';
import { createLogger } from '../shared/logger';
import { Metrics } from '../shared/metrics/metrics';
import { buildMetricsApp } from '../shared/metrics/metrics-app';
import {
  closeConnections,
  createRedisConnection,
  duplicateConnection,
  waitForRedis,
} from '../shared/redis/connections';
import { DeliveryLog } from '../shared/webhook-subscription/delivery-log';
import { WebhookSecrets } from '../shared/webhook-subscription/webhook-secrets';
import { startImportWorker } from './imports/import.worker';
import { ALL_PROJECTIONS } from './projector/all-projections';
import { checkLegacyUsersLayout } from './projector/legacy-users-layout';
import { projectionsLogConsumer } from './projector/projections-log-consumer';
import { Projector } from './projector/projector';
import { readProjectorLag } from './projector/projector-lag';
import { checkRedisMemorySettings, readRedisMemory } from './redis-memory-settings';
import { WebhookDispatcher } from './webhooks/webhook-dispatcher';
import { webhookLogConsumer } from './webhooks/webhook-log-consumer';
import { WebhookSender } from './webhooks/webhook-sender';

/**
 * The worker process: starts the consumers WORKER_CONSUMERS names (the projector, webhook delivery,
 * the import queue's worker; all by default) against one Redis and closes them on SIGTERM, letting
 * in-flight work finish. Run as many replicas as the load needs: projector replicas split the log
 * partitions between them, and so do webhook delivery replicas.
 */
async function main(): Promise<void> {
  const config = loadConfigOrExit('worker');
  const logger = createLogger({ level: config.logLevel, processRole: 'worker' });
  const metrics = new Metrics(logger);
  // Commands fail fast on the request connection; BullMQ gets its own, which retries forever.
  const redis = createRedisConnection(config.redis, 'request', logger);
  const queueConnection = createRedisConnection(config.redis, 'queue', logger);
  const projectorConnection = createRedisConnection(config.redis, 'background', logger, 'projector');
  const projectorSubscriber = duplicateConnection(queueConnection, logger, 'projector-changes');
  const services = createCoreServices(config, redis, metrics.commandHandlerHooks());
  const results = new ImportResults(redis, services.keys, config.imports.resultTtlSeconds);
  const projector = new Projector(
    projectorConnection,
    services.keys,
    ALL_PROJECTIONS,
    logger,
    {},
    projectorSubscriber,
    metrics,
  );
  // Read at scrape time on the request connection, so a scrape while Redis is away fails fast.
  const queueForDepth = new ImportQueue(redis, redis, services.keys, config, logger);
  metrics.watchConnection('request', redis);
  metrics.watchConnection('queue', queueConnection);
  metrics.watchConnection('projector', projectorConnection);
  metrics.watchConnection('projector-subscriber', projectorSubscriber);
  metrics.collectProjectorLag(() => readProjectorLag(redis, services.keys, ALL_PROJECTIONS));
  metrics.collectImportQueueDepth(() => queueForDepth.depth());
  metrics.collectRedisMemory(() => readRedisMemory(redis));
  const webhookConnection = createRedisConnection(config.redis, 'background', logger, 'webhooks');
  const webhookSubscriber = duplicateConnection(queueConnection, logger, 'webhook-changes');
  metrics.watchConnection('webhooks', webhookConnection);
  metrics.watchConnection('webhook-subscriber', webhookSubscriber);
  const webhookSender = new WebhookSender(config.webhooks);
  // LOG_RETENTION: trims what every projection and webhook subscription has passed (ADR 0020).
  const logTrimmer = new LogTrimmer(
    redis,
    services.keys,
    [projectionsLogConsumer(redis, services.keys, ALL_PROJECTIONS), webhookLogConsumer(redis, services.keys)],
    config.logRetentionMs,
    logger,
  );
  let dispatcher: WebhookDispatcher | undefined;
  let importWorker: ReturnType<typeof startImportWorker> | undefined;
  let metricsServer: RunningServer | undefined;

  installShutdownHooks(logger, config.shutdownTimeoutMs, async () => {
    // Workers first: close() waits for jobs in progress, which still need Redis.
    await Promise.all([importWorker?.close(), projector.stop(), dispatcher?.stop(), logTrimmer.stop()]);
    webhookSender.close();
    await metricsServer?.close(config.shutdownTimeoutMs);
    await queueForDepth.close();
    await services.close();
    // A dispatcher closes its subscriber as it stops; one never started leaves it to close here.
    const unused = dispatcher ? [] : [webhookSubscriber];
    await closeConnections(redis, queueConnection, projectorConnection, webhookConnection, ...unused);
  });

  // Before Redis is up, so a worker still waiting for it can be seen waiting (redis_connection_up 0).
  if (config.metrics.port !== 0) {
    const app = buildMetricsApp({ metrics, token: config.metrics.token, logger });
    metricsServer = await listen(app, config.metrics.port, config.metrics.host, config.http);
    logger.info('metrics listening', { port: metricsServer.port, host: config.metrics.host });
  }

  await waitForRedis(redis, logger);
  // Before an import or a projection looks an account up: a lost or replaced user id key stops the
  // start (ADR 0046).
  await services.accounts.userIds.verifyKey();
  await queueForDepth.ready();
  await checkRedisMemorySettings(redis, logger);
  const runs = (consumer: WorkerConsumer) => config.workerConsumers.includes(consumer);
  if (runs('projections')) await checkLegacyUsersLayout(redis, services.keys, logger);
  if (runs('projections')) projector.start();
  // The log is trimmed where the projections run: every deployment has such a worker.
  if (runs('projections')) logTrimmer.start();
  // Derived from a secret of the environment (the generated one only in development).
  const cipher = await JobDataCipher.create(config, redis, services.keys);
  if (cipher.source !== 'DATA_ENCRYPTION_KEY' && cipher.source !== 'JWT_SECRET') {
    logger.warn('import job data sealed under the generated secret: for development only');
  }
  // Signing secrets open with a key derived as the ingress derives it (the same settings).
  const webhookSecrets = new WebhookSecrets(
    await JobDataCipher.create(config, redis, services.keys, 'webhookSecrets'),
  );
  if (runs('webhooks')) {
    dispatcher = new WebhookDispatcher(
      webhookConnection,
      services.keys,
      webhookSecrets,
      webhookSender,
      new DeliveryLog(webhookConnection, services.keys, config.webhooks.deliveryLogMs),
      services.commands,
      createEventStore(webhookConnection, services.keys),
      config.webhooks,
      logger,
      {},
      webhookSubscriber,
      metrics,
    );
    dispatcher.start();
  }
  if (runs('imports')) {
    importWorker = startImportWorker(queueConnection, services, results, cipher, config, logger, metrics);
  }
  logger.info('worker ready', {
    consumers: config.workerConsumers,
    concurrency: config.workerConcurrency,
    projections: runs('projections') ? ALL_PROJECTIONS.map((p) => p.name) : [],
  });
}

main().catch((error: unknown) => {
  process.stderr.write(
    `[worker] failed to start: ${error instanceof Error ? error.message : String(error)}\n`,
  );
  // A setting to fix (Redis refused the credentials) exits as a bad variable does: EX_CONFIG.
  process.exit(error instanceof ConfigError ? 78 : 1);
});
