import Joi from 'joi';

import { MAX_PASSWORD_LENGTH, MIN_PASSWORD_LENGTH } from '../user/password-policy';
import {
  CLUSTER_NODE_LIST,
  CONSUMER_LIST,
  defaultMaxPendingVerifications,
  DURATION_LIST,
  isLoopbackHost,
  KNOWN_MODULES,
  MODULE_LIST,
  parseClusterNodes,
  parseConsumers,
  parseDurationList,
  parseModules,
  parseRetention,
  parseSize,
  parseTrustProxy,
  type RedisNodeAddress,
  RETENTION,
  SIZE,
  trustProxySchema,
  urlHasPassword,
  WORKER_CONSUMERS,
} from './parse';
import { type Derived, type EnvOf, type ProcessRole, setting } from './setting';

export const NODE_ENVS = ['development', 'production', 'test'] as const;
export type NodeEnv = (typeof NODE_ENVS)[number];

/** What a command's success promises about its events (WRITE_DURABILITY; docs/operators.md, "Durability"). */
export const WRITE_DURABILITY_MODES = ['local', 'replicated'] as const;
export type WriteDurabilityMode = (typeof WRITE_DURABILITY_MODES)[number];

export const LOG_LEVELS = ['error', 'warn', 'info', 'http', 'verbose', 'debug', 'silly'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** The defaults of HTTP_REQUEST_TIMEOUT_MS, HTTP_HEADERS_TIMEOUT_MS and HTTP_KEEP_ALIVE_TIMEOUT_MS. */
export const HTTP_TIMEOUT_DEFAULTS = Object.freeze({
  /** For a whole request, headers and body; then a 408 (or the connection is closed). */
  requestTimeoutMs: 30_000,
  /** For the headers of a request; at most requestTimeoutMs. */
  headersTimeoutMs: 10_000,
  /** An idle keep-alive connection is closed after this. */
  keepAliveTimeoutMs: 5_000,
});

/** How an answer sent before its request's body was read closes (shared/http/lingering-close.ts). */
export const LINGERING_CLOSE_DEFAULTS = Object.freeze({
  /**
   * Python's urllib and http.client send the whole body before they read a byte of the answer:
   * they see it only if every byte they send is read. 64 MB covers four times the largest body the
   * service accepts (IMPORT_BODY_LIMIT 16mb) and the 50 MB uploads the tests send.
   */
  maxBytes: 64 * 1024 * 1024,
  /** A client that has stopped sending for this long has had the answer for as long. */
  idleMs: 2_000,
  /** At 1 Gbit/s, 64 MB take about half a second: ten seconds is for slow links. */
  totalMs: 10_000,
  /**
   * Dropping a refused body costs about 0.45 ms of CPU per MB (bench/RESULTS.md, hostile-bodies):
   * 64 MB a second is about 3% of a core, and holds one largest refusal in its one-second bucket.
   */
  bytesPerSecond: 64 * 1024 * 1024,
});

/** The limit per account and address when neither its name nor its old name is set. */
const DEFAULT_MAX_FAILURES_PER_ACCOUNT_AND_ADDRESS = 10;

const code = (text: string | number): string => `\`${text}\``;

/** The defaults of the global caps that role classes share (SSE_MAX_CONNECTIONS, READ_MAX_WAITERS). */
const DEFAULT_MAX_STREAMS = 1_000;
const DEFAULT_MAX_WAITERS = 1_000;
/**
 * The default share of one role class: the global cap (as set, or its default) over the classes
 * that use it, rounded up. Streams: Admin and ServiceAccount (the roles that may read the stream),
 * a half each; `minVersion` waits: every class, a quarter each.
 */
const STREAM_SHARES = 2;
const WAITER_SHARES = 4;
function shareOf(env: Readonly<Record<string, unknown>>, name: string, fallback: number, shares: number) {
  const raw = env[name];
  const global = typeof raw === 'string' || typeof raw === 'number' ? Number(raw) : Number.NaN;
  return Math.ceil((Number.isInteger(global) && global > 0 ? global : fallback) / shares);
}
const defaultStreamsPerRoleClass = (env: Readonly<Record<string, unknown>>): number =>
  shareOf(env, 'SSE_MAX_CONNECTIONS', DEFAULT_MAX_STREAMS, STREAM_SHARES);
const defaultWaitersPerRoleClass = (env: Readonly<Record<string, unknown>>): number =>
  shareOf(env, 'READ_MAX_WAITERS', DEFAULT_MAX_WAITERS, WAITER_SHARES);

/**
 * HOST when unset: every interface in production (the image, behind its proxy, as before), this
 * machine only otherwise, so that a development start never reaches a network unasked.
 */
function defaultHost(env: Readonly<Record<string, unknown>>): string {
  return env.NODE_ENV === 'production' ? '0.0.0.0' : '127.0.0.1';
}

/**
 * Development on loopback: NODE_ENV is not `production` and HOST, set or by default, is a loopback
 * address. Only then may a start make the sandbox administrator and keep a generated secret in
 * Redis, and only then does the ingress let webhooks reach private targets by default. The worker
 * binds nothing with HOST, but reads it for the generated secret: `npm start` gives both processes
 * the same environment, so they agree.
 */
export function isLocalDevelopment(env: Readonly<Record<string, unknown>>): boolean {
  if (env.NODE_ENV === 'production') return false;
  return isLoopbackHost(typeof env.HOST === 'string' ? env.HOST : defaultHost(env));
}

/**
 * WEBHOOK_ALLOW_PRIVATE_TARGETS when unset: an ingress in local development, which knows it listens
 * on loopback, accepts the developer's own receiver there; anything else stays strict. A worker
 * binds nothing, so its HOST proves nothing (a worker started on its own on a shared box has none):
 * it allows private targets only when told, as `npm start` tells it when its ingress would.
 */
function defaultAllowPrivateTargets(
  env: Readonly<Record<string, unknown>>,
  role: ProcessRole,
): 'true' | 'false' {
  return role === 'ingress' && isLocalDevelopment(env) ? 'true' : 'false';
}

/**
 * Every environment variable the service reads, one row each, in the order start-up errors name
 * them and the configuration table of docs/operators.md lists them (`npm run docs:config` writes
 * that table). A joi description is what a start-up error says the variable expects; `doc` is its
 * row in that table.
 * Adding a setting is adding a row here.
 */
export const SETTINGS = [
  setting({
    env: 'NODE_ENV',
    joi: Joi.string<NodeEnv>().valid(...NODE_ENVS),
    default: 'development',
    path: 'nodeEnv',
    doc: {
      expects: '`development`, `production` or `test`',
      usedBy:
        'both (the Docker image sets `production`, which requires `JWT_SECRET`, and `JWT_PREVIOUS_SECRET_UNTIL` with `JWT_PREVIOUS_SECRET`)',
    },
  }),
  setting({
    env: 'PORT',
    joi: Joi.number().integer().min(0).max(65535).description('TCP port of the HTTP ingress'),
    default: 8080,
    path: 'port',
    doc: { expects: 'TCP port, an integer 0-65535 (0 picks a free port)', usedBy: 'ingress' },
  }),
  setting({
    env: 'HOST',
    joi: Joi.string().description('address the HTTP ingress binds'),
    default: defaultHost,
    path: 'host',
    doc: {
      default: '`127.0.0.1`; production: `0.0.0.0`',
      expects: 'the address the HTTP ingress binds',
      usedBy:
        'both: the ingress binds it. Outside production only a loopback address (127.0.0.0/8, `::1`, `localhost`) gets the sandbox administrator, a generated JWT secret and, in the ingress, private webhook targets by default; any other needs `JWT_SECRET`. The worker reads it for the generated secret alone (`npm start` gives both the same)',
    },
  }),
  setting({
    env: 'REDIS_URL',
    joi: Joi.string()
      .uri({ scheme: ['redis', 'rediss'] })
      .description('a redis:// or rediss:// URL'),
    default: 'redis://127.0.0.1:6379',
    doc: {
      expects: 'a `redis://` or `rediss://` URL',
      usedBy: 'both (`npm start` sets it for its children)',
    },
  }),
  setting({
    env: 'REDIS_CLUSTER_NODES',
    joi: Joi.string()
      .pattern(CLUSTER_NODE_LIST)
      .messages({ 'string.pattern.base': 'must be a comma-separated list of host:port' })
      .description('Redis Cluster nodes as host:port,host:port (any of the masters; wins over REDIS_URL)'),
    doc: {
      expects:
        'a comma-separated list of `host:port` (IPv6 as `[::1]:7000`): nodes of a Redis Cluster, any of them',
      usedBy:
        'both: when set, every connection is a cluster connection and `REDIS_URL` is ignored; see [On Redis Cluster](#on-redis-cluster)',
    },
  }),
  setting({
    env: 'PRIVATE_REDIS_DIR',
    joi: Joi.string().description('a directory'),
    default: 'var/redis',
    path: 'privateRedisDir',
    doc: {
      expects: 'a directory, absolute or relative to the working directory',
      usedBy:
        '`npm start` alone, when neither `REDIS_URL` nor `REDIS_CLUSTER_NODES` is set: where the private `redis-server` it starts keeps its data (AOF) and its pidfile',
    },
  }),
  setting({
    env: 'REDIS_KEY_PREFIX',
    joi: Joi.string()
      .pattern(/^[A-Za-z0-9:_-]{1,64}$/)
      .description('1-64 characters of letters, digits, ":", "_" or "-"'),
    default: 'fts:',
    path: 'redisKeyPrefix',
    doc: {
      expects:
        '1-64 characters of letters, digits, `:`, `_` or `-`; prefix of every key, so deployments can share Redis',
      usedBy: 'both (all processes of one deployment must use the same prefix)',
    },
  }),
  setting({
    env: 'REDIS_PASSWORD',
    // No pattern: joi's pattern message would quote the value, and this one must never be printed.
    joi: Joi.string().max(1024).description('the Redis password (requirepass), at most 1024 characters'),
    doc: {
      expects: "Redis's password (`requirepass`), at most 1024 characters; never logged",
      usedBy:
        'both: sent by every cluster node connection, and by a `REDIS_URL` without a password of its own (a password in the URL wins)',
    },
  }),
  setting({
    env: 'LOG_LEVEL',
    joi: Joi.string<LogLevel>().valid(...LOG_LEVELS),
    default: 'info',
    path: 'logLevel',
    doc: { expects: '`error`, `warn`, `info`, `http`, `verbose`, `debug` or `silly`', usedBy: 'both' },
  }),
  setting({
    env: 'ADMIN_EMAIL',
    joi: Joi.string().email({ tlds: false }).description('the bootstrap administrator e-mail'),
    path: 'adminEmail',
    doc: {
      expects: "the bootstrap administrator's e-mail; set together with `ADMIN_PASSWORD` or not at all",
      usedBy:
        'ingress: at start-up, creates this account with role `Admin` if it does not exist (safe on every replica)',
    },
  }),
  setting({
    env: 'ADMIN_PASSWORD',
    joi: Joi.string().min(MIN_PASSWORD_LENGTH).max(MAX_PASSWORD_LENGTH).description('at least 12 characters'),
    path: 'adminPassword',
    doc: {
      expects: `${MIN_PASSWORD_LENGTH}-${MAX_PASSWORD_LENGTH} characters; set together with \`ADMIN_EMAIL\``,
      usedBy: 'ingress (bootstrap administrator)',
    },
  }),
  setting({
    env: 'JWT_SECRET',
    joi: Joi.string().min(32).description('at least 32 characters'),
    path: 'jwtSecret',
    doc: {
      expects: 'at least 32 characters; required with `NODE_ENV=production`',
      usedBy:
        'ingress: signs and verifies bearer tokens; unset (development and test only), the first process generates one and keeps it in Redis',
    },
  }),
  setting({
    env: 'JWT_PREVIOUS_SECRET',
    joi: Joi.string()
      .min(32)
      .invalid(Joi.ref('JWT_SECRET'))
      .description('at least 32 characters, different from JWT_SECRET'),
    doc: {
      expects: 'at least 32 characters, not `JWT_SECRET`; needs `JWT_SECRET`',
      usedBy:
        'ingress: tokens it signed are still accepted (it signs nothing), so rotating `JWT_SECRET` signs nobody out; see [Rotating JWT_SECRET](#rotating-jwt_secret)',
    },
  }),
  setting({
    env: 'JWT_PREVIOUS_SECRET_UNTIL',
    joi: Joi.date().iso().description('an ISO 8601 instant such as 2026-12-01T12:00:00Z'),
    doc: {
      default: 'unset (no end)',
      expects:
        'an ISO 8601 instant, e.g. `2026-12-01T12:00:00Z`; required with `JWT_PREVIOUS_SECRET` in production',
      usedBy: 'ingress: from then on `JWT_PREVIOUS_SECRET` is refused even if still set',
    },
  }),
  setting({
    env: 'DATA_ENCRYPTION_KEY',
    joi: Joi.string()
      .min(32)
      .description('at least 32 characters: the secret import job data is encrypted under'),
    path: 'dataEncryptionKey',
    doc: {
      expects: 'at least 32 characters',
      usedBy:
        'both: import job data (seeded passwords among it) is encrypted in Redis with AES-256-GCM under a key derived (HKDF-SHA256) from it; when unset, from `JWT_SECRET`; with neither (development only), from the generated secret kept in Redis. Every ingress and worker must agree; jobs queued under `JWT_SECRET` or `JWT_PREVIOUS_SECRET` still open. Production refuses `JWT_PREVIOUS_SECRET` without it ([Rotating JWT_SECRET](#rotating-jwt_secret))',
    },
  }),
  setting({
    env: 'TRUST_PROXY',
    joi: trustProxySchema.description(
      '"false", a hop count such as 1, or comma-separated proxy addresses/CIDRs or loopback, linklocal, uniquelocal',
    ),
    default: 'false',
    path: 'trustProxy',
    parse: parseTrustProxy,
    doc: {
      expects:
        '`false`, a hop count (`1`), or comma-separated proxy addresses/CIDRs or `loopback`, `linklocal`, `uniquelocal`',
      usedBy:
        'ingress: whose `X-Forwarded-For` decides the client address (throttling, access log); see [Behind a reverse proxy](#behind-a-reverse-proxy)',
    },
  }),
  setting({
    env: 'MODULES',
    joi: Joi.string()
      .pattern(MODULE_LIST)
      .description(`"none" or a comma-separated list of: ${KNOWN_MODULES.join(', ')}`),
    default: 'sport-core',
    path: 'modules',
    parse: parseModules,
    doc: {
      expects: `\`none\`, or a comma-separated list of modules; known: ${KNOWN_MODULES.map(code).join(', ')}`,
      usedBy: 'ingress: `sport-core` gates the sport-data queries that declare it (`GetMappedPlayers`)',
    },
  }),
  setting({
    env: 'BODY_LIMIT',
    joi: Joi.string().pattern(SIZE).description('a size such as 1048576, 512kb or 1mb'),
    default: '1mb',
    path: 'bodyLimitBytes',
    parse: parseSize,
    doc: {
      expects: 'a size in bytes, or with a unit: `1048576`, `512kb`, `1mb` (1 kb = 1024 bytes)',
      usedBy: 'ingress: larger request bodies get a 413',
    },
  }),
  setting({
    env: 'IMPORT_BODY_LIMIT',
    // A full import (IMPORT_MAX_ROWS players of about 450 bytes each) is several megabytes.
    joi: Joi.string().pattern(SIZE).description('the body limit of POST /api/import, a size such as 16mb'),
    default: '16mb',
    path: 'importBodyLimitBytes',
    parse: parseSize,
    doc: {
      expects: 'a size, as `BODY_LIMIT`',
      usedBy:
        'ingress: the body limit of `POST /api/import` alone (a batch of `IMPORT_MAX_ROWS` players is several megabytes); larger bodies get a 413',
    },
  }),
  setting({
    env: 'SHUTDOWN_TIMEOUT_MS',
    joi: Joi.number().integer().min(0).max(600_000),
    default: 10_000,
    path: 'shutdownTimeoutMs',
    doc: { expects: 'an integer 0-600000: how long SIGTERM waits for in-flight work', usedBy: 'both' },
  }),
  // Bounds on a connection that sends slowly or not at all (slowloris): past them it gets a 408 or is closed.
  setting({
    env: 'HTTP_REQUEST_TIMEOUT_MS',
    joi: Joi.number()
      .integer()
      .min(1)
      .max(3_600_000)
      .description('milliseconds a client has to send a whole request, headers and body, 1-3600000'),
    default: HTTP_TIMEOUT_DEFAULTS.requestTimeoutMs,
    path: 'http.requestTimeoutMs',
    doc: {
      expects: 'an integer 1-3600000: milliseconds a client has to send a whole request (headers and body)',
      usedBy:
        'both (every HTTP listener): an unfinished request then gets a `408` and its connection is closed; a slow upload must fit in it',
    },
  }),
  setting({
    env: 'HTTP_HEADERS_TIMEOUT_MS',
    joi: Joi.number()
      .integer()
      .min(1)
      .max(Joi.ref('HTTP_REQUEST_TIMEOUT_MS'))
      .description(
        'milliseconds a client has to send the headers of a request, at most HTTP_REQUEST_TIMEOUT_MS',
      ),
    default: HTTP_TIMEOUT_DEFAULTS.headersTimeoutMs,
    path: 'http.headersTimeoutMs',
    doc: {
      expects:
        'an integer from 1 up to `HTTP_REQUEST_TIMEOUT_MS`: milliseconds a client has to send the headers',
      usedBy: 'both: then a `408` and the connection is closed',
    },
  }),
  setting({
    env: 'HTTP_KEEP_ALIVE_TIMEOUT_MS',
    joi: Joi.number()
      .integer()
      .min(1)
      .max(3_600_000)
      .description('milliseconds an idle keep-alive connection stays open, 1-3600000'),
    default: HTTP_TIMEOUT_DEFAULTS.keepAliveTimeoutMs,
    path: 'http.keepAliveTimeoutMs',
    doc: {
      expects: 'an integer 1-3600000: milliseconds an idle keep-alive connection stays open',
      usedBy:
        "both: Node 24 closes it up to 1 s later (`keepAliveTimeoutBuffer`); keep it below a proxy's idle timeout towards the ingress",
    },
  }),
  // An answer sent before its request's body was read: the rest of the body is read and dropped
  // within these bounds, so that clients which send before they read still receive the answer.
  setting({
    env: 'HTTP_LINGER_MAX_BYTES',
    joi: Joi.string()
      .pattern(SIZE)
      .description('bytes read and dropped after an early answer, a size such as 64mb'),
    default: `${LINGERING_CLOSE_DEFAULTS.maxBytes / 1024 / 1024}mb`,
    path: 'lingeringClose.maxBytes',
    parse: parseSize,
    doc: {
      expects: 'a size, as `BODY_LIMIT`',
      usedBy:
        'ingress: after an answer sent before the request body was read (`401`, `404`, `413`, `429`), at most this much of the rest of the body is read and dropped before the connection is cut; a client that sends its whole body before reading (Python `urllib`) sees the answer only for bodies within it',
    },
  }),
  setting({
    env: 'HTTP_LINGER_IDLE_MS',
    joi: Joi.number().integer().min(1).max(600_000),
    default: LINGERING_CLOSE_DEFAULTS.idleMs,
    path: 'lingeringClose.idleMs',
    doc: {
      expects: 'an integer 1-600000: milliseconds',
      usedBy:
        'ingress: after an early answer, the connection is cut once the client has sent nothing for this long',
    },
  }),
  setting({
    env: 'HTTP_LINGER_TOTAL_MS',
    joi: Joi.number().integer().min(1).max(600_000),
    default: LINGERING_CLOSE_DEFAULTS.totalMs,
    path: 'lingeringClose.totalMs',
    doc: {
      expects: 'an integer 1-600000: milliseconds',
      usedBy:
        'ingress: after an early answer, the connection is cut this long after the answer at the latest',
    },
  }),
  setting({
    env: 'HTTP_LINGER_BYTES_PER_SECOND',
    joi: Joi.string()
      .pattern(SIZE)
      .description('bytes per second one ingress drops across all early answers, a size such as 64mb'),
    default: `${LINGERING_CLOSE_DEFAULTS.bytesPerSecond / 1024 / 1024}mb`,
    path: 'lingeringClose.bytesPerSecond',
    parse: parseSize,
    doc: {
      expects: 'a size, as `BODY_LIMIT`: bytes per second (a bucket one second deep)',
      usedBy:
        'ingress: what all its early answers together may read and drop per second; a connection that finds the bucket empty is cut at once (its client may then see a reset instead of the answer). Bounds what a flood of refused uploads costs',
    },
  }),
  setting({
    env: 'WORKER_CONCURRENCY',
    joi: Joi.number().integer().min(1).max(256),
    default: 4,
    path: 'workerConcurrency',
    doc: {
      expects: 'an integer 1-256: jobs one worker process runs at the same time',
      usedBy: 'worker: its import queue consumer (the projector is not affected)',
    },
  }),
  setting({
    env: 'WORKER_CONSUMERS',
    joi: Joi.string()
      .pattern(CONSUMER_LIST)
      .description(`a comma-separated list of: ${WORKER_CONSUMERS.join(', ')}`),
    default: WORKER_CONSUMERS.join(','),
    path: 'workerConsumers',
    parse: parseConsumers,
    doc: {
      expects: `a comma-separated list of ${WORKER_CONSUMERS.map(code).join(', ')}`,
      usedBy:
        'worker: what this process runs. Run webhook delivery in replicas of its own (`webhooks`) so a slow endpoint or a burst of deliveries never shares an event loop with the projector (`projections,imports`)',
    },
  }),
  setting({
    env: 'JWT_ISSUER',
    joi: Joi.string().max(200),
    default: 'fantasy-team-service',
    path: 'jwt.issuer',
    doc: { expects: 'the `iss` and `aud` of issued tokens, checked on every request', usedBy: 'ingress' },
  }),
  setting({
    env: 'JWT_AUDIENCE',
    joi: Joi.string().max(200),
    default: 'fantasy-team-api',
    path: 'jwt.audience',
    doc: { sharesRowWith: 'JWT_ISSUER' },
  }),
  setting({
    env: 'JWT_TTL_SECONDS',
    joi: Joi.number().integer().min(60).max(86_400),
    default: 3_600,
    path: 'jwt.ttlSeconds',
    doc: { expects: 'token lifetime, 60-86400', usedBy: 'ingress' },
  }),
  setting({
    env: 'AUTH_CACHE_TTL_SECONDS',
    joi: Joi.number().integer().min(0).max(3_600),
    default: 60,
    path: 'auth.cacheTtlSeconds',
    doc: {
      expects: '0-3600: how long a successful Basic verification is reused (0 turns the cache off)',
      usedBy: 'ingress',
    },
  }),
  setting({
    env: 'AUTH_MAX_FAILURES_PER_ACCOUNT_AND_ADDRESS',
    joi: Joi.number().integer().min(1).max(10_000),
    doc: {
      default: code(DEFAULT_MAX_FAILURES_PER_ACCOUNT_AND_ADDRESS),
      expects:
        'failed sign-ins of one account from one client address within the window; past it that address gets `429` for that account, even with the right password, while other addresses are not affected. `AUTH_MAX_FAILURES_PER_ACCOUNT`, its name before failures were counted per address, is read when this one is unset',
      usedBy: 'ingress',
    },
  }),
  setting({
    env: 'AUTH_MAX_FAILURES_PER_ACCOUNT',
    joi: Joi.number().integer().min(1).max(10_000),
    doc: { describedIn: 'AUTH_MAX_FAILURES_PER_ACCOUNT_AND_ADDRESS' },
  }),
  setting({
    env: 'AUTH_MAX_FAILURES_PER_ADDRESS',
    joi: Joi.number().integer().min(1).max(100_000),
    default: 100,
    path: 'auth.maxFailuresPerAddress',
    doc: {
      expects:
        'failed sign-ins from one client address, for any accounts, within the window before `429`. An IPv6 address counts by its /64, an IPv4-mapped one as its IPv4 address',
      usedBy: 'ingress',
    },
  }),
  setting({
    env: 'AUTH_FAILURE_WINDOW_SECONDS',
    joi: Joi.number().integer().min(1).max(86_400),
    default: 900,
    path: 'auth.failureWindowSeconds',
    doc: { expects: 'the throttling window', usedBy: 'ingress' },
  }),
  setting({
    env: 'AUTH_ACCOUNT_WARNING_FAILURES',
    joi: Joi.number().integer().min(1).max(1_000_000),
    default: 50,
    path: 'auth.accountWarningFailures',
    doc: {
      expects:
        'failed sign-ins of one account from all addresses within the window that log one warning (`sign-in failures for one account passed the warning threshold`, with the user id) and count `fts_auth_accounts_under_attack_total`; refuses nothing',
      usedBy: 'ingress',
    },
  }),
  setting({
    env: 'AUTH_MAX_PENDING_VERIFICATIONS',
    joi: Joi.number()
      .integer()
      .min(1)
      .max(100_000)
      .description('verifications at once per process, default 4 x the hashing threads'),
    default: defaultMaxPendingVerifications,
    path: 'auth.maxPendingVerifications',
    doc: {
      default: `4 x \`UV_THREADPOOL_SIZE\` (${code(defaultMaxPendingVerifications({}))})`,
      expects:
        "1-100000: password checks (argon2, on libuv's thread pool) that may run or wait at once per ingress process; past it a sign-in that needs a check gets a fast `503` problem with `Retry-After: 1` (cached sign-ins and tokens are not affected)",
      usedBy: 'ingress',
    },
  }),
  setting({
    env: 'RATE_LIMIT_PER_ACCOUNT',
    joi: Joi.number()
      .integer()
      .min(0)
      .max(1_000_000_000)
      .description('requests per account per window, 0 for no limit'),
    default: 3_000,
    path: 'rateLimit.requestsPerAccount',
    doc: {
      expects:
        'requests one account may make per window, across all ingress replicas; `0` turns the limit off',
      usedBy: 'ingress: beyond it, a `429` problem with `Retry-After`',
    },
  }),
  setting({
    env: 'RATE_LIMIT_WINDOW_SECONDS',
    joi: Joi.number().integer().min(1).max(86_400),
    default: 60,
    path: 'rateLimit.windowSeconds',
    doc: { expects: 'the rate-limit window, 1-86400', usedBy: 'ingress' },
  }),
  setting({
    env: 'LOCK_TTL_MS',
    joi: Joi.number().integer().min(100).max(60_000),
    default: 5_000,
    path: 'lock.ttlMs',
    doc: { expects: 'how long an aggregate lock outlives a holder that died', usedBy: 'both' },
  }),
  setting({
    env: 'LOCK_WAIT_MS',
    joi: Joi.number().integer().min(0).max(60_000),
    default: 2_000,
    path: 'lock.waitMs',
    doc: {
      expects: 'how long a command waits for a busy aggregate before `503 AGGREGATE_BUSY`',
      usedBy: 'both',
    },
  }),
  setting({
    env: 'WRITE_DURABILITY',
    joi: Joi.string<WriteDurabilityMode>()
      .valid(...WRITE_DURABILITY_MODES)
      .description('"local" or "replicated"'),
    default: 'local',
    path: 'writeDurability.mode',
    doc: {
      expects: '`local` or `replicated`',
      usedBy:
        "both: `replicated` answers a command that wrote events only once a replica of the aggregate's Redis master confirmed them (`WAIT 1`), else 503 saying it may have taken effect; `local` once its master has them. See [Durability](#durability)",
    },
  }),
  setting({
    env: 'WRITE_DURABILITY_TIMEOUT_MS',
    // Below the request connection's 2 s command timeout, which would otherwise end the WAIT first.
    joi: Joi.number().integer().min(10).max(1_500),
    default: 500,
    path: 'writeDurability.timeoutMs',
    doc: {
      expects: 'milliseconds 10-1500',
      usedBy:
        'both, with `WRITE_DURABILITY=replicated`: how long a command waits for a replica to confirm its events before the 503',
    },
  }),
  setting({
    env: 'MAX_TEAMS_PER_OWNER',
    joi: Joi.number()
      .integer()
      .min(1)
      .max(1_000_000)
      .description('teams one owner may hold, archived ones included (an Admin is not bounded)'),
    default: 100,
    path: 'teams.maxPerOwner',
    doc: {
      expects: 'an integer 1-1000000: teams one owner may hold, archived ones included',
      usedBy:
        'ingress: a `CreateFantasyTeam` beyond it is `400 COMMAND_VALIDATION_ERROR`; an Admin is not bounded',
    },
  }),
  setting({
    env: 'SSE_MAX_CONNECTIONS',
    joi: Joi.number().integer().min(1).max(100_000),
    default: DEFAULT_MAX_STREAMS,
    path: 'events.maxConnections',
    doc: {
      expects: 'an integer 1-100000: event streams (GET /api/events) one ingress holds open at once',
      usedBy: 'ingress: one more is answered `503` with `Retry-After: 5`',
    },
  }),
  setting({
    env: 'SSE_MAX_CONNECTIONS_PER_ACCOUNT',
    joi: Joi.number().integer().min(1).max(100_000),
    default: 10,
    path: 'events.maxConnectionsPerAccount',
    doc: {
      expects: 'an integer 1-100000: event streams one account holds open at once on one ingress',
      usedBy:
        'ingress: one more is answered `503` with `Retry-After: 5`, so one client (or one leaked credential) cannot take every stream of SSE_MAX_CONNECTIONS',
    },
  }),
  setting({
    env: 'SSE_MAX_CONNECTIONS_PER_ROLE_CLASS',
    joi: Joi.number().integer().min(1).max(100_000),
    default: defaultStreamsPerRoleClass,
    path: 'events.maxConnectionsPerRoleClass',
    doc: {
      default: `SSE_MAX_CONNECTIONS / 2 (${code(defaultStreamsPerRoleClass({}))})`,
      expects:
        "an integer 1-100000: event streams the accounts of one role class (the account's highest role: Admin, UserManager, ServiceAccount, Member) hold open at once on one ingress",
      usedBy:
        'ingress: one more is answered `503` with `Retry-After: 5`, so the accounts of one class cannot take every stream of SSE_MAX_CONNECTIONS; see bench/RESULTS.md (Issue 29: caps) for what a stream costs',
    },
  }),
  setting({
    env: 'SSE_HEARTBEAT_MS',
    joi: Joi.number().integer().min(10).max(300_000),
    default: 15_000,
    path: 'events.heartbeatMs',
    doc: {
      expects: "the interval of the event stream's heartbeat comment, in ms",
      usedBy: 'ingress: keeps proxies and clients from closing an idle stream (below their read timeouts)',
    },
  }),
  setting({
    env: 'SSE_SLOW_CLIENT_TIMEOUT_MS',
    joi: Joi.number().integer().min(100).max(600_000),
    default: 30_000,
    path: 'events.slowClientTimeoutMs',
    doc: {
      expects: 'how long an event stream whose client reads nothing may stay paused, in ms',
      usedBy:
        'ingress: past it the stream is closed (the client resumes from its Last-Event-ID); until then it holds one batch and its socket buffer',
    },
  }),
  setting({
    env: 'READ_WAIT_MS',
    joi: Joi.number().integer().min(0).max(60_000),
    default: 2_000,
    path: 'readYourWrites.waitMs',
    doc: {
      expects:
        'how long a read-model query with `minVersion` waits for the projection to reach that version, in ms',
      usedBy:
        'ingress: then `503` problem with `code` `PROJECTION_BEHIND` and `Retry-After`; see [Read your own writes](integrators.md#read-your-own-writes)',
    },
  }),
  setting({
    env: 'READ_MAX_WAITERS',
    joi: Joi.number().integer().min(1).max(100_000),
    default: DEFAULT_MAX_WAITERS,
    path: 'readYourWrites.maxWaiters',
    doc: {
      expects: 'an integer 1-100000: reads with `minVersion` one ingress holds waiting at once',
      usedBy: 'ingress: one more is answered `PROJECTION_BEHIND` at once (each waiter holds a request open)',
    },
  }),
  setting({
    env: 'READ_MAX_WAITERS_PER_ACCOUNT',
    joi: Joi.number().integer().min(1).max(100_000),
    default: 10,
    path: 'readYourWrites.maxWaitersPerAccount',
    doc: {
      expects:
        'an integer 1-100000: reads with `minVersion` one account holds waiting at once on one ingress',
      usedBy:
        'ingress: one more is answered `PROJECTION_BEHIND` at once, so one client flooding reads of versions that never come cannot take the waiters of READ_MAX_WAITERS from the others',
    },
  }),
  setting({
    env: 'READ_MAX_WAITERS_PER_ROLE_CLASS',
    joi: Joi.number().integer().min(1).max(100_000),
    default: defaultWaitersPerRoleClass,
    path: 'readYourWrites.maxWaitersPerRoleClass',
    doc: {
      default: `READ_MAX_WAITERS / 4 (${code(defaultWaitersPerRoleClass({}))})`,
      expects:
        "an integer 1-100000: reads with `minVersion` the accounts of one role class (the account's highest role: Admin, UserManager, ServiceAccount, Member) hold waiting at once on one ingress",
      usedBy:
        'ingress: one more is answered `PROJECTION_BEHIND` at once, so Members (or any one class) flooding reads cannot take the waiters of READ_MAX_WAITERS from the other classes; see bench/RESULTS.md (Issue 29: caps) for what a waiting read costs',
    },
  }),
  setting({
    env: 'IMPORT_MAX_ROWS',
    joi: Joi.number().integer().min(1).max(1_000_000),
    default: 10_000,
    path: 'imports.maxRows',
    doc: {
      expects: 'an integer 1-1000000: rows one import may carry',
      usedBy:
        'both: the ingress refuses a longer import and the worker checks its jobs against it; the served OpenAPI document states it',
    },
  }),
  setting({
    env: 'IMPORT_COMMAND_CONCURRENCY',
    joi: Joi.number().integer().min(1).max(64),
    default: 4,
    path: 'imports.commandConcurrency',
    doc: {
      expects: 'an integer 1-64: commands one import runs at once',
      usedBy: "worker: password hashing runs on libuv's thread pool, so more than 1 uses the cores",
    },
  }),
  setting({
    env: 'IMPORT_JOB_LOCK_MS',
    joi: Joi.number().integer().min(1_000).max(600_000),
    default: 30_000,
    path: 'imports.jobLockMs',
    doc: {
      expects: "an integer 1000-600000: how long a worker's lock on an import job lives without renewal",
      usedBy: "worker: a job whose worker died is retried after it (BullMQ's lock duration)",
    },
  }),
  setting({
    env: 'IMPORT_KEEP_COMPLETED_JOBS',
    joi: Joi.number().integer().min(0).max(1_000_000),
    default: 1_000,
    path: 'imports.keepCompletedJobs',
    doc: {
      expects: 'an integer 0-1000000: completed import jobs BullMQ keeps',
      usedBy: 'ingress (set on the jobs it queues); results stay queryable in their own records either way',
    },
  }),
  setting({
    env: 'IMPORT_KEEP_FAILED_JOBS',
    joi: Joi.number().integer().min(0).max(1_000_000),
    default: 5_000,
    path: 'imports.keepFailedJobs',
    doc: {
      expects: 'an integer 0-1000000: failed import jobs BullMQ keeps',
      usedBy: 'ingress, as `IMPORT_KEEP_COMPLETED_JOBS`',
    },
  }),
  setting({
    env: 'IMPORT_RESULT_TTL_SECONDS',
    joi: Joi.number()
      .integer()
      .min(60)
      .max(365 * 86_400),
    default: 30 * 86_400,
    path: 'imports.resultTtlSeconds',
    doc: {
      expects: "an integer 60-31536000: how long an import's record (its status and results) is kept",
      usedBy: 'both',
    },
  }),
  setting({
    env: 'IMPORT_BYTES_PER_ACCOUNT_PER_MINUTE',
    joi: Joi.string()
      .pattern(SIZE)
      .description(
        'bytes of import bodies one account may send per minute, a size such as 50mb; 0 for no limit',
      ),
    // Three imports of the largest default body (IMPORT_BODY_LIMIT 16mb) a minute, five of 8.7 MB.
    default: '50mb',
    path: 'imports.bytesPerAccountPerMinute',
    parse: parseSize,
    doc: {
      expects:
        'a size, as `BODY_LIMIT`: bytes of `POST /api/import` bodies one account may send per minute, across all ingress replicas (keep it at least `IMPORT_BODY_LIMIT`, or the largest import is always refused); `0` turns the limit off',
      usedBy:
        'ingress: counted after authentication and before the body is read (its `Content-Length`; a chunked body counts as `IMPORT_BODY_LIMIT`, a compressed one as what is left of it up to `IMPORT_BODY_LIMIT`, until it is read, then as the bytes it held once decoded); past it a `429` problem with `Retry-After`, the body unread (a compressed body: at its first inflated byte past what was left)',
    },
  }),
  setting({
    env: 'IMPORT_REFUSED_RESULT_TTL_SECONDS',
    joi: Joi.number()
      .integer()
      .min(60)
      .max(365 * 86_400),
    default: 86_400,
    path: 'imports.refusedResultTtlSeconds',
    doc: {
      expects:
        "an integer 60-31536000: how long the record of an import refused because its submitter lacks the importer's role is kept (at most `IMPORT_RESULT_TTL_SECONDS`)",
      usedBy: 'both: a role-less account sending imports cannot fill Redis with records kept for weeks',
    },
  }),
  setting({
    env: 'MAX_PENDING_IMPORTS_PER_USER',
    joi: Joi.number()
      .integer()
      .min(1)
      .max(100_000)
      .description('imports one account may have Pending at once, 1-100000'),
    default: 10,
    path: 'imports.maxPendingPerUser',
    doc: {
      expects: 'an integer 1-100000',
      usedBy:
        'ingress: imports one account may have `Pending` at once, counted in Redis across replicas; past it a `429` problem with `Retry-After` and nothing stored (a resent `requestId` is not a new import)',
    },
  }),
  setting({
    env: 'METRICS_TOKEN',
    joi: Joi.string()
      .min(16)
      .max(1024)
      .pattern(/^[\x21-\x7e]+$/)
      .description('16-1024 visible ASCII characters, sent as "Authorization: Bearer <token>"'),
    path: 'metrics.token',
    doc: {
      expects: '16-1024 visible ASCII characters (no spaces)',
      usedBy:
        'both: every `/metrics` request must send `Authorization: Bearer <token>`; on the ingress it also turns on `/metrics` on `PORT`',
    },
  }),
  setting({
    env: 'METRICS_PORT',
    // 0 (the default) opens no listener, so replicas on one host never collide on a port.
    joi: Joi.number()
      .integer()
      .min(0)
      .max(65535)
      .description('TCP port of the /metrics listener, 0 for none'),
    default: 0,
    path: 'metrics.port',
    doc: {
      expects: 'TCP port, an integer 0-65535; 0 opens no listener',
      usedBy:
        'both: a listener serving only `/metrics`, without auth unless `METRICS_TOKEN` is set ([Metrics](#metrics))',
    },
  }),
  setting({
    env: 'METRICS_HOST',
    // Loopback unless the operator opens it: unauthenticated metrics must not reach a network by default.
    joi: Joi.string().description('address the /metrics listener binds'),
    default: '127.0.0.1',
    path: 'metrics.host',
    doc: {
      expects: 'the address the `METRICS_PORT` listener binds',
      usedBy: 'both: loopback unless set (`0.0.0.0` in a container, as compose sets it)',
    },
  }),
  setting({
    env: 'WEBHOOK_ALLOW_PRIVATE_TARGETS',
    joi: Joi.string<'true' | 'false'>().valid('true', 'false').description('"true" or "false"'),
    default: defaultAllowPrivateTargets,
    path: 'webhooks.allowPrivateTargets',
    parse: (value): boolean => value === 'true',
    doc: {
      default: '`false`; local-development ingress: `true`',
      expects: '`true` or `false`',
      usedBy:
        "both: `true` lets webhook subscriptions use `http` URLs and reach loopback, private, link-local and metadata addresses (local development and tests only); `false` refuses them on subscribing and at connect time for every delivery. The worker's default is `false` unless `npm start` sets it (to the ingress's, from `NODE_ENV` and `HOST`)",
    },
  }),
  setting({
    env: 'WEBHOOK_RETRY_SCHEDULE',
    joi: Joi.string()
      .pattern(DURATION_LIST)
      .description('comma-separated durations such as 0,5s,5m,30m,2h,5h,10h,10h'),
    default: '0,5s,5m,30m,2h,5h,10h,10h',
    path: 'webhooks.retryScheduleMs',
    parse: parseDurationList,
    doc: {
      expects: 'comma-separated durations (`ms`, `s`, `m`, `h`, `d`; bare numbers are ms)',
      usedBy:
        'worker: the wait before each retry of a failed webhook delivery (the first attempt is not in it; each wait gets up to 10% jitter); after the last the delivery is marked failed and the next event goes',
    },
  }),
  setting({
    env: 'WEBHOOK_TIMEOUT_MS',
    joi: Joi.number().integer().min(100).max(60_000),
    default: 10_000,
    path: 'webhooks.timeoutMs',
    doc: {
      expects: 'milliseconds 100-60000: one webhook delivery attempt, connect to response',
      usedBy: 'worker',
    },
  }),
  setting({
    env: 'WEBHOOK_DISABLE_AFTER_MS',
    joi: Joi.number().integer().min(1000),
    default: 3 * 86_400_000,
    path: 'webhooks.disableAfterMs',
    doc: {
      expects: 'milliseconds, at least 1000',
      usedBy:
        'worker: a webhook subscription whose every delivery attempt has failed for this long is disabled (a WebhookSubscriptionDisabledEvent with `automatic: true` says so)',
    },
  }),
  setting({
    env: 'WEBHOOK_DELIVERY_LOG_MS',
    joi: Joi.number().integer().min(60_000),
    default: 7 * 86_400_000,
    path: 'webhooks.deliveryLogMs',
    doc: {
      expects: 'milliseconds, at least 60000',
      usedBy: 'worker: how long each webhook delivery attempt stays in the delivery log',
    },
  }),
  setting({
    env: 'LOG_RETENTION',
    joi: Joi.string()
      .pattern(RETENTION)
      .description("'forever' or a duration with its unit such as 30d or 12h"),
    default: 'forever',
    path: 'logRetentionMs',
    parse: parseRetention,
    doc: {
      expects: '`forever`, or a duration with its unit (`ms`, `s`, `m`, `h`, `d`) such as `30d`',
      usedBy:
        'worker: entries of the global event log older than this that every projection and webhook subscription has passed are trimmed (every minute); the aggregate streams keep every event. An event stream resuming from an older `Last-Event-ID` is refused (400); see [Memory and log retention](#memory-and-log-retention)',
    },
  }),
] as const;

/** The validated environment, as the rows type it. */
export type SettingsEnv = EnvOf<typeof SETTINGS>;

/**
 * Where the service's Redis is: one server (REDIS_URL), or a Redis Cluster reached through any of
 * its nodes (REDIS_CLUSTER_NODES, which wins when set). The code is the same for both. `password`
 * is REDIS_PASSWORD: sent by every cluster node connection, and by a standalone one whose URL
 * carries no password of its own (the URL's wins). It is never logged.
 */
export type RedisTarget =
  | { readonly kind: 'standalone'; readonly url: string; readonly password?: string }
  | { readonly kind: 'cluster'; readonly nodes: readonly RedisNodeAddress[]; readonly password?: string };

function redisTarget(env: SettingsEnv): RedisTarget {
  const password = env.REDIS_PASSWORD;
  if (env.REDIS_CLUSTER_NODES !== undefined) {
    return {
      kind: 'cluster',
      nodes: parseClusterNodes(env.REDIS_CLUSTER_NODES),
      ...(password !== undefined ? { password } : {}),
    };
  }
  return {
    kind: 'standalone',
    url: env.REDIS_URL,
    ...(password !== undefined && !urlHasPassword(env.REDIS_URL) ? { password } : {}),
  };
}

/** A secret whose tokens are still accepted (never used to sign), refused from `until` on. */
export interface PreviousJwtSecret {
  readonly secret: string;
  readonly until: Date | undefined;
}

/** Config values that several variables make up. */
export const DERIVED = [
  { path: 'redis', from: redisTarget },
  { path: 'localDevelopment', from: (env): boolean => isLocalDevelopment(env) },
  {
    path: 'jwtPreviousSecret',
    from: (env): PreviousJwtSecret | undefined =>
      env.JWT_PREVIOUS_SECRET === undefined
        ? undefined
        : { secret: env.JWT_PREVIOUS_SECRET, until: env.JWT_PREVIOUS_SECRET_UNTIL },
  },
  {
    path: 'auth.maxFailuresPerAccountAndAddress',
    from: (env): number =>
      env.AUTH_MAX_FAILURES_PER_ACCOUNT_AND_ADDRESS ??
      env.AUTH_MAX_FAILURES_PER_ACCOUNT ??
      DEFAULT_MAX_FAILURES_PER_ACCOUNT_AND_ADDRESS,
  },
] as const satisfies readonly Derived<SettingsEnv>[];
