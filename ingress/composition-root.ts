import type { Config } from '../shared/config';
import { type CoreServices, createCoreServices } from '../shared/core-services';
import { CommandIdempotency } from '../shared/event-store/command-idempotency';
import type { CommandHandlerHooks } from '../shared/event-store/handle-command';
import type { EventStreamMetrics } from '../shared/event-stream/stream-metrics';
import { ImportQueue } from '../shared/importers/import-queue';
import { ImportResults } from '../shared/importers/import-results';
import { JobDataCipher } from '../shared/importers/job-data-cipher';
import type { Logger } from '../shared/logger';
import type { RateLimitMetrics, ReadWaitMetrics, SignInMetrics } from '../shared/metrics/metrics';
import {
  closeConnections,
  createRedisConnection,
  duplicateConnection,
  type RedisClient,
  waitForRedis,
} from '../shared/redis/connections';
import { DeliveryLog } from '../shared/webhook-subscription/delivery-log';
import { WebhookSecrets } from '../shared/webhook-subscription/webhook-secrets';
import { AccountCache, DEFAULT_HEARTBEAT } from './auth/account-cache';
import { AccountRateLimit } from './auth/account-rate-limit';
import { CredentialVerifier } from './auth/credential-verifier';
import { type Authentication, createAuthentication } from './auth/passport';
import { refusedSandboxAccounts, sandboxExampleImportJobId } from './auth/sandbox-admin';
import { SignInThrottle } from './auth/sign-in-throttle';
import { TokenService } from './auth/token-service';
import type { CurrentPasswordCheck, NewPasswordHasher } from './command/account-commands';
import { OwnerTeamLimit } from './command/owner-team-limit';
import { EventStreams } from './events/event-streams';
import { ImportByteLimit } from './import/import-byte-limit';
import { UsersReader } from './readmodel/list-users/users.reader';
import { ProjectionWaits, READ_YOUR_WRITES_PROJECTIONS } from './readmodel/read-your-writes';

export interface IngressServices extends CoreServices {
  readonly verifier: CredentialVerifier;
  readonly tokens: TokenService;
  readonly authentication: Authentication;
  readonly idempotency: CommandIdempotency;
  readonly teamLimit: OwnerTeamLimit;
  readonly importQueue: ImportQueue;
  readonly importResults: ImportResults;
  /** IMPORT_BYTES_PER_ACCOUNT_PER_MINUTE, counted in Redis across replicas. */
  readonly importByteLimit: ImportByteLimit;
  /** Seals import job data before it is queued (and opens it, for an in-process worker in tests). */
  readonly jobCipher: JobDataCipher;
  readonly accountCache: AccountCache;
  /**
   * On a sandbox start, the job id its seeded players import has (ids follow the deployment's user
   * id key, ADR 0035): the served document's import examples name it, so they run as they are.
   */
  readonly sandboxImportJobId?: string;
  /** A ChangePassword's current-password check: a sign-in, throttled and counted as one. */
  readonly currentPassword: CurrentPasswordCheck;
  /** A password being set, hashed within the verifications' bound. */
  readonly newPasswordHasher: NewPasswordHasher;
  /** ListUsers' reader of the users projection. */
  readonly usersReader: UsersReader;
  /** The request connection: webhook commands register subscriptions, webhook queries read logs. */
  readonly redis: RedisClient;
  /** Seals a webhook subscription's signing secrets into its record. */
  readonly webhookSecrets: WebhookSecrets;
  readonly webhookSettings: { readonly allowPrivateTargets: boolean };
  /** The webhook delivery log (GetWebhookDeliveries reads it). */
  readonly deliveryLog: DeliveryLog;
  /** GET /api/events: the open streams and the log tail they share. */
  readonly eventStreams: EventStreams;
  /** Reads with `minVersion` waiting for the projector (ADR 0019). */
  readonly projectionWaits: ProjectionWaits;
  /** Closes what the services opened themselves (the cache's subscriber, the queue). */
  close(): Promise<void>;
}

/**
 * The HTTP process's composition root: builds everything the app uses, the core services both
 * processes share (shared/core-services.ts) first, then what only this process needs. Needs Redis
 * up (it may read the shared JWT secret).
 */
export async function createIngressServices(
  config: Config,
  redis: RedisClient,
  logger: Logger,
  hooks: CommandHandlerHooks = {},
  signInMetrics?: SignInMetrics & Partial<EventStreamMetrics & RateLimitMetrics & ReadWaitMetrics>,
): Promise<IngressServices> {
  const core = createCoreServices(config, redis, hooks);
  // What set-up has opened so far, closed (latest first) if a later step throws: a failed start
  // must not leave connections behind, with their reconnect timers keeping the process alive.
  const opened: Array<() => Promise<void>> = [() => core.close()];
  try {
    return await buildIngressServices(config, redis, logger, core, opened, signInMetrics);
  } catch (error) {
    for (const close of opened.reverse()) {
      await close().catch((closeError: unknown) =>
        logger.warn('closing after a failed start failed', { error: String(closeError) }),
      );
    }
    throw error;
  }
}

/** createIngressServices' steps; each opening step adds its close to `opened` at once. */
async function buildIngressServices(
  config: Config,
  redis: RedisClient,
  logger: Logger,
  core: CoreServices,
  opened: Array<() => Promise<void>>,
  signInMetrics?: SignInMetrics & Partial<EventStreamMetrics & RateLimitMetrics & ReadWaitMetrics>,
): Promise<IngressServices> {
  const throttle = new SignInThrottle(redis, core.keys, config.auth, logger, signInMetrics);
  const accountCache = await AccountCache.start(
    core.accounts,
    // Its own connection: a subscribed connection can run nothing else.
    duplicateConnection(redis, logger, 'account-cache'),
    core.keys,
    config.auth.cacheTtlSeconds,
    logger,
    { publisher: redis, ...DEFAULT_HEARTBEAT },
  );
  opened.push(() => accountCache.close());
  const refusedUserIds = await refusedSandboxAccounts(config, core.accounts);
  const sandboxImportJobId = await sandboxExampleImportJobId(config, core.accounts);
  const verifier = await CredentialVerifier.create(
    core.accounts,
    accountCache,
    core.hasher,
    throttle,
    { ...config.auth, refusedUserIds },
    signInMetrics,
  );
  const tokens = await TokenService.create(config, redis, core.keys);
  const authentication = createAuthentication(
    verifier,
    tokens,
    accountCache,
    new AccountRateLimit(redis, core.keys, config.rateLimit, signInMetrics),
    refusedUserIds,
  );
  const idempotency = new CommandIdempotency(redis, core.keys);
  const teamLimit = new OwnerTeamLimit(redis, core.keys, core.store, config.teams.maxPerOwner);
  const jobCipher = await JobDataCipher.create(config, redis, core.keys);
  // A request connection of its own (adding a job fails fast while Redis is away, as a request
  // does): BullMQ defines its scripts on the connection it is given, and ioredis copies every
  // defined script onto each pipeline it makes, which on the shared one is every request's (ADR 0022).
  const queueConnection = createRedisConnection(config.redis, 'request', logger, 'import-queue');
  opened.push(() => closeConnections(queueConnection));
  // Ready before the services are: an app closed at once would otherwise close it mid-handshake,
  // where ioredis's failed ready check leaves a 2 s disconnect timer behind.
  await waitForRedis(queueConnection, logger);
  const importQueue = new ImportQueue(queueConnection, redis, core.keys, config, logger, jobCipher, true);
  // The queue owns its connection from here on: its close() closes both, in the order it needs.
  opened[opened.length - 1] = () => importQueue.close();
  await importQueue.ready();
  const importResults = new ImportResults(redis, core.keys, config.imports.resultTtlSeconds);
  const usersReader = new UsersReader(redis, core.keys);
  const webhookSecrets = new WebhookSecrets(
    await JobDataCipher.create(config, redis, core.keys, 'webhookSecrets'),
  );
  const eventStreams = new EventStreams({
    redis,
    accounts: accountCache,
    keys: core.keys,
    // The store's own opening: a user event goes out with its personal fields, or null once erased.
    open: (envelopes) => core.store.opened(envelopes),
    // Opened when the first stream starts: an ingress nobody streams from holds no extra connection.
    newSubscriber: () => duplicateConnection(redis, logger, 'event-stream-changes'),
    logger,
    settings: config.events,
    ...(isEventStreamMetrics(signInMetrics) ? { metrics: signInMetrics } : {}),
  });
  const recordReadWait = signInMetrics?.recordReadWait?.bind(signInMetrics);
  const projectionWaits = new ProjectionWaits(
    core.keys,
    READ_YOUR_WRITES_PROJECTIONS.map((projection) => projection.name),
    // Opened when the first read has to wait: one per ingress, however many reads wait.
    () => duplicateConnection(redis, logger, 'projection-progress'),
    config.readYourWrites,
    logger,
    recordReadWait ? { recordReadWait } : undefined,
  );
  return {
    ...core,
    verifier,
    tokens,
    authentication,
    idempotency,
    teamLimit,
    importQueue,
    importResults,
    importByteLimit: new ImportByteLimit(redis, core.keys, config.imports.bytesPerAccountPerMinute),
    jobCipher,
    accountCache,
    ...(sandboxImportJobId === undefined ? {} : { sandboxImportJobId }),
    // CredentialVerifier.matches is a sign-in: a wrong password counts, and a throttled pair gets its 429.
    currentPassword: verifier,
    newPasswordHasher: verifier,
    // The erasure (removedAttachments, afterDelete) is the core services' (AccountErasureService).
    usersReader,
    redis,
    webhookSecrets,
    webhookSettings: config.webhooks,
    deliveryLog: new DeliveryLog(redis, core.keys, config.webhooks.deliveryLogMs),
    eventStreams,
    projectionWaits,
    async close() {
      await Promise.all([
        eventStreams.close(),
        accountCache.close(),
        importQueue.close(),
        projectionWaits.close(),
      ]);
      // After what may still run commands (an import in progress): the replicated writes' connections.
      await core.close();
    },
  };
}

function isEventStreamMetrics(
  metrics: Partial<EventStreamMetrics> | undefined,
): metrics is EventStreamMetrics {
  return typeof metrics?.eventStreamOpened === 'function';
}
