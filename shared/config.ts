import { isIP } from 'node:net';
import Joi from 'joi';

/** Modules an operator can switch on with MODULES; `sport-core` gates the sport-data queries. */
export const KNOWN_MODULES = ['sport-core'] as const;
export type ModuleName = (typeof KNOWN_MODULES)[number];

export const LOG_LEVELS = ['error', 'warn', 'info', 'http', 'verbose', 'debug', 'silly'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/**
 * `false` (believe no proxy: the client address is the TCP peer), a number of proxy hops in front
 * of the ingress, or the addresses/subnets of trusted proxies (Express's own forms, incl. the names
 * `loopback`, `linklocal` and `uniquelocal`).
 */
export type TrustProxy = false | number | readonly string[];

/** One node of a Redis Cluster, as REDIS_CLUSTER_NODES lists it. */
export interface RedisNodeAddress {
  readonly host: string;
  readonly port: number;
}

/**
 * Where the service's Redis is: one server (REDIS_URL), or a Redis Cluster reached through any of
 * its nodes (REDIS_CLUSTER_NODES, which wins when set). The code is the same for both.
 */
export type RedisTarget =
  | { readonly kind: 'standalone'; readonly url: string }
  | { readonly kind: 'cluster'; readonly nodes: readonly RedisNodeAddress[] };

/** The validated, frozen configuration of one process. Every setting comes from the environment. */
export interface Config {
  readonly nodeEnv: 'development' | 'production' | 'test';
  readonly port: number;
  readonly host: string;
  readonly redis: RedisTarget;
  /** Prefix of every key this service writes, so several deployments (or test runs) can share a Redis. */
  readonly redisKeyPrefix: string;
  readonly logLevel: LogLevel;
  readonly adminEmail: string | undefined;
  readonly adminPassword: string | undefined;
  readonly jwtSecret: string | undefined;
  /**
   * A secret whose tokens are still accepted (never used to sign), so rotating JWT_SECRET does not
   * sign everyone out at once; refused from `until` on, when that is set.
   */
  readonly jwtPreviousSecret: { readonly secret: string; readonly until: Date | undefined } | undefined;
  /** Express's `trust proxy`: which hops' X-Forwarded-For to believe for the client address. */
  readonly trustProxy: TrustProxy;
  readonly modules: readonly ModuleName[];
  /** Largest accepted request body, in bytes. */
  readonly bodyLimitBytes: number;
  /** POST /api/import's own limit: a batch of IMPORT_MAX_ROWS rows needs more than other requests. */
  readonly importBodyLimitBytes: number;
  /** How long SIGTERM waits for in-flight requests and jobs before closing anyway. */
  readonly shutdownTimeoutMs: number;
  readonly workerConcurrency: number;
  readonly jwt: {
    readonly issuer: string;
    readonly audience: string;
    readonly ttlSeconds: number;
  };
  readonly auth: {
    /** How long a successful Basic verification is reused before the password is hashed again. */
    readonly cacheTtlSeconds: number;
    /** Failed sign-ins allowed per account, and per client address, within the window. */
    readonly maxFailuresPerAccount: number;
    readonly maxFailuresPerAddress: number;
    readonly failureWindowSeconds: number;
  };
  readonly rateLimit: {
    /** Requests one account may make per window across every ingress; 0 turns the limit off. */
    readonly requestsPerAccount: number;
    readonly windowSeconds: number;
  };
  readonly lock: {
    readonly ttlMs: number;
    readonly waitMs: number;
  };
  readonly imports: {
    /** Rows one import may carry. */
    readonly maxRows: number;
    /** Commands one import runs at once (hashing runs on the thread pool, so >1 uses the cores). */
    readonly commandConcurrency: number;
    /** How long a worker's job lock lives without renewal: a dead worker's job is retried after it. */
    readonly jobLockMs: number;
    /** Finished jobs BullMQ keeps (results stay queryable in their own records either way). */
    readonly keepCompletedJobs: number;
    readonly keepFailedJobs: number;
    readonly resultTtlSeconds: number;
  };
  /** Where GET /metrics is served (ADR 0010); nothing is exposed unless one of these is set. */
  readonly metrics: {
    /** Bearer token every /metrics request must carry; when set, the ingress also serves it on PORT. */
    readonly token: string | undefined;
    /** A listener of its own for /metrics (ingress and workers); 0 means none. */
    readonly port: number;
    readonly host: string;
  };
}

/** A TCP port 1-65535, spelled without leading zeros. */
const PORT_NUMBER = '([1-9]\\d{0,3}|[1-5]\\d{4}|6[0-4]\\d{3}|65[0-4]\\d{2}|655[0-2]\\d|6553[0-5])';
/** `host:port` with a host name, an IPv4 address or a bracketed IPv6 address. */
const CLUSTER_NODE = `(\\[[0-9A-Fa-f:.]+\\]|[A-Za-z0-9.-]+):${PORT_NUMBER}`;
const CLUSTER_NODE_LIST = new RegExp(`^\\s*${CLUSTER_NODE}(\\s*,\\s*${CLUSTER_NODE})*\\s*$`);

const MODULE_NAME = `(${KNOWN_MODULES.join('|')})`;
/** `none`, or names separated by commas (blanks around them and empty entries are tolerated). */
const MODULE_LIST = new RegExp(`^\\s*(none|${MODULE_NAME}?(\\s*,\\s*${MODULE_NAME}?)*)\\s*$`);

const TRUSTED_RANGE_NAMES = ['loopback', 'linklocal', 'uniquelocal'];

/** An address or subnet Express's `trust proxy` (proxy-addr) accepts: it would throw at start-up. */
function isTrustedProxyEntry(entry: string): boolean {
  if (TRUSTED_RANGE_NAMES.includes(entry)) return true;
  const [address = '', prefix, ...rest] = entry.split('/');
  const version = isIP(address);
  if (version === 0 || rest.length > 0) return false;
  if (prefix === undefined) return true;
  return /^\d{1,3}$/.test(prefix) && Number(prefix) <= (version === 4 ? 32 : 128);
}

function parseTrustProxy(text: string): TrustProxy {
  const trimmed = text.trim();
  if (trimmed === 'false') return false;
  if (/^\d+$/.test(trimmed)) return Number(trimmed);
  return Object.freeze(trimmed.split(',').map((entry) => entry.trim()));
}

const trustProxySetting = Joi.string().custom((value: string, helpers) => {
  const parsed = parseTrustProxy(value);
  if (Array.isArray(parsed) && !parsed.every(isTrustedProxyEntry)) return helpers.error('any.invalid');
  return value;
});

/**
 * One row per variable: the README's configuration table is this schema. Descriptions are shown
 * in start-up errors, so an operator sees what a variable expects without opening the docs.
 */
const envSchema = Joi.object({
  NODE_ENV: Joi.string().valid('development', 'production', 'test').default('development'),
  PORT: Joi.number().integer().min(0).max(65535).default(8080).description('TCP port of the HTTP ingress'),
  HOST: Joi.string().default('0.0.0.0').description('address the HTTP ingress binds'),
  REDIS_URL: Joi.string()
    .uri({ scheme: ['redis', 'rediss'] })
    .default('redis://127.0.0.1:6379')
    .description('a redis:// or rediss:// URL'),
  REDIS_CLUSTER_NODES: Joi.string()
    .pattern(CLUSTER_NODE_LIST)
    .messages({ 'string.pattern.base': 'must be a comma-separated list of host:port' })
    .description('Redis Cluster nodes as host:port,host:port (any of the masters; wins over REDIS_URL)'),
  REDIS_KEY_PREFIX: Joi.string()
    .pattern(/^[A-Za-z0-9:_-]{1,64}$/)
    .default('fts:')
    .description('1-64 characters of letters, digits, ":", "_" or "-"'),
  LOG_LEVEL: Joi.string()
    .valid(...LOG_LEVELS)
    .default('info'),
  ADMIN_EMAIL: Joi.string().email({ tlds: false }).description('the bootstrap administrator e-mail'),
  ADMIN_PASSWORD: Joi.string().min(12).max(1024).description('at least 12 characters'),
  JWT_SECRET: Joi.string().min(32).description('at least 32 characters'),
  JWT_PREVIOUS_SECRET: Joi.string()
    .min(32)
    .invalid(Joi.ref('JWT_SECRET'))
    .description('at least 32 characters, different from JWT_SECRET'),
  JWT_PREVIOUS_SECRET_UNTIL: Joi.date().iso().description('an ISO 8601 instant such as 2026-12-01T12:00:00Z'),
  TRUST_PROXY: trustProxySetting
    .default('false')
    .description(
      '"false", a hop count such as 1, or comma-separated proxy addresses/CIDRs or loopback, linklocal, uniquelocal',
    ),
  MODULES: Joi.string()
    .pattern(MODULE_LIST)
    .default('sport-core')
    .description(`"none" or a comma-separated list of: ${KNOWN_MODULES.join(', ')}`),
  BODY_LIMIT: Joi.string()
    .pattern(/^\d+(b|kb|mb)?$/i)
    .default('1mb')
    .description('a size such as 1048576, 512kb or 1mb'),
  // A full import (IMPORT_MAX_ROWS players of about 450 bytes each) is several megabytes.
  IMPORT_BODY_LIMIT: Joi.string()
    .pattern(/^\d+(b|kb|mb)?$/i)
    .default('16mb')
    .description('the body limit of POST /api/import, a size such as 16mb'),
  SHUTDOWN_TIMEOUT_MS: Joi.number().integer().min(0).max(600_000).default(10_000),
  WORKER_CONCURRENCY: Joi.number().integer().min(1).max(256).default(4),
  JWT_ISSUER: Joi.string().max(200).default('fantasy-team-service'),
  JWT_AUDIENCE: Joi.string().max(200).default('fantasy-team-api'),
  JWT_TTL_SECONDS: Joi.number().integer().min(60).max(86_400).default(3_600),
  AUTH_CACHE_TTL_SECONDS: Joi.number().integer().min(0).max(3_600).default(60),
  AUTH_MAX_FAILURES_PER_ACCOUNT: Joi.number().integer().min(1).max(10_000).default(10),
  AUTH_MAX_FAILURES_PER_ADDRESS: Joi.number().integer().min(1).max(100_000).default(100),
  AUTH_FAILURE_WINDOW_SECONDS: Joi.number().integer().min(1).max(86_400).default(900),
  RATE_LIMIT_PER_ACCOUNT: Joi.number()
    .integer()
    .min(0)
    .max(1_000_000_000)
    .default(3_000)
    .description('requests per account per window, 0 for no limit'),
  RATE_LIMIT_WINDOW_SECONDS: Joi.number().integer().min(1).max(86_400).default(60),
  LOCK_TTL_MS: Joi.number().integer().min(100).max(60_000).default(5_000),
  LOCK_WAIT_MS: Joi.number().integer().min(0).max(60_000).default(2_000),
  IMPORT_MAX_ROWS: Joi.number().integer().min(1).max(1_000_000).default(10_000),
  IMPORT_COMMAND_CONCURRENCY: Joi.number().integer().min(1).max(64).default(4),
  IMPORT_JOB_LOCK_MS: Joi.number().integer().min(1_000).max(600_000).default(30_000),
  IMPORT_KEEP_COMPLETED_JOBS: Joi.number().integer().min(0).max(1_000_000).default(1_000),
  IMPORT_KEEP_FAILED_JOBS: Joi.number().integer().min(0).max(1_000_000).default(5_000),
  IMPORT_RESULT_TTL_SECONDS: Joi.number()
    .integer()
    .min(60)
    .max(365 * 86_400)
    .default(30 * 86_400),
  METRICS_TOKEN: Joi.string()
    .min(16)
    .max(1024)
    .pattern(/^[\x21-\x7e]+$/)
    .description('16-1024 visible ASCII characters, sent as "Authorization: Bearer <token>"'),
  // 0 (the default) opens no listener, so replicas on one host never collide on a port.
  METRICS_PORT: Joi.number()
    .integer()
    .min(0)
    .max(65535)
    .default(0)
    .description('TCP port of the /metrics listener, 0 for none'),
  METRICS_HOST: Joi.string().default('0.0.0.0').description('address the /metrics listener binds'),
})
  .and('ADMIN_EMAIL', 'ADMIN_PASSWORD')
  .with('JWT_PREVIOUS_SECRET', 'JWT_SECRET')
  .with('JWT_PREVIOUS_SECRET_UNTIL', 'JWT_PREVIOUS_SECRET')
  .unknown(true);

/** Thrown when the environment does not validate; its message names each bad variable. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}

const SIZE_UNITS: Record<string, number> = { b: 1, kb: 1024, mb: 1024 * 1024 };

function parseSize(text: string): number {
  const match = /^(\d+)(b|kb|mb)?$/i.exec(text);
  const unit = (match?.[2] ?? 'b').toLowerCase();
  return Number(match?.[1]) * (SIZE_UNITS[unit] ?? 1);
}

/** `10.0.0.1:7000, [::1]:7001` -> addresses (brackets dropped, as ioredis takes IPv6 hosts). */
function parseClusterNodes(list: string): RedisNodeAddress[] {
  return list
    .split(',')
    .map((node) => node.trim())
    .map((node) => {
      const colon = node.lastIndexOf(':');
      return { host: node.slice(0, colon).replace(/^\[(.*)\]$/, '$1'), port: Number(node.slice(colon + 1)) };
    });
}

function describe(detail: Joi.ValidationErrorItem): string {
  const variable = String(detail.path[0] ?? detail.context?.label ?? 'environment');
  if (detail.type === 'object.and') {
    return `ADMIN_EMAIL and ADMIN_PASSWORD must be set together`;
  }
  if (detail.type === 'object.with') {
    return `${String(detail.context?.main)} needs ${String(detail.context?.peer)} to be set`;
  }
  const expected = envSchema.extract(variable).describe().flags as { description?: string } | undefined;
  const hint = expected?.description ? ` (expected ${expected.description})` : '';
  return `${variable}: ${detail.message.replace(/^"[^"]+" /, '')}${hint}`;
}

/** Validates the environment once; the result is frozen so nothing changes settings at run time. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  // Empty strings are how shells and compose files say "unset".
  const present = Object.fromEntries(Object.entries(env).filter(([, value]) => value !== ''));
  const result = envSchema.validate(present, { abortEarly: false, convert: true });
  if (result.error) {
    throw new ConfigError(`Invalid configuration: ${result.error.details.map(describe).join('; ')}`);
  }
  const v = result.value as Record<string, string | number | Date | undefined>;
  const modules = String(v.MODULES)
    .split(',')
    .map((name) => name.trim())
    .filter((name): name is ModuleName => (KNOWN_MODULES as readonly string[]).includes(name));
  return Object.freeze({
    nodeEnv: v.NODE_ENV as Config['nodeEnv'],
    port: Number(v.PORT),
    host: String(v.HOST),
    redis: Object.freeze(
      v.REDIS_CLUSTER_NODES === undefined
        ? { kind: 'standalone' as const, url: String(v.REDIS_URL) }
        : {
            kind: 'cluster' as const,
            nodes: Object.freeze(
              parseClusterNodes(String(v.REDIS_CLUSTER_NODES)).map((n) => Object.freeze(n)),
            ),
          },
    ),
    redisKeyPrefix: String(v.REDIS_KEY_PREFIX),
    logLevel: v.LOG_LEVEL as LogLevel,
    adminEmail: v.ADMIN_EMAIL === undefined ? undefined : String(v.ADMIN_EMAIL),
    adminPassword: v.ADMIN_PASSWORD === undefined ? undefined : String(v.ADMIN_PASSWORD),
    jwtSecret: v.JWT_SECRET === undefined ? undefined : String(v.JWT_SECRET),
    jwtPreviousSecret:
      v.JWT_PREVIOUS_SECRET === undefined
        ? undefined
        : Object.freeze({
            secret: String(v.JWT_PREVIOUS_SECRET),
            until: (v.JWT_PREVIOUS_SECRET_UNTIL as Date | undefined) ?? undefined,
          }),
    trustProxy: parseTrustProxy(String(v.TRUST_PROXY)),
    modules: Object.freeze([...new Set(modules)]),
    bodyLimitBytes: parseSize(String(v.BODY_LIMIT)),
    importBodyLimitBytes: parseSize(String(v.IMPORT_BODY_LIMIT)),
    shutdownTimeoutMs: Number(v.SHUTDOWN_TIMEOUT_MS),
    workerConcurrency: Number(v.WORKER_CONCURRENCY),
    jwt: Object.freeze({
      issuer: String(v.JWT_ISSUER),
      audience: String(v.JWT_AUDIENCE),
      ttlSeconds: Number(v.JWT_TTL_SECONDS),
    }),
    auth: Object.freeze({
      cacheTtlSeconds: Number(v.AUTH_CACHE_TTL_SECONDS),
      maxFailuresPerAccount: Number(v.AUTH_MAX_FAILURES_PER_ACCOUNT),
      maxFailuresPerAddress: Number(v.AUTH_MAX_FAILURES_PER_ADDRESS),
      failureWindowSeconds: Number(v.AUTH_FAILURE_WINDOW_SECONDS),
    }),
    rateLimit: Object.freeze({
      requestsPerAccount: Number(v.RATE_LIMIT_PER_ACCOUNT),
      windowSeconds: Number(v.RATE_LIMIT_WINDOW_SECONDS),
    }),
    lock: Object.freeze({ ttlMs: Number(v.LOCK_TTL_MS), waitMs: Number(v.LOCK_WAIT_MS) }),
    imports: Object.freeze({
      maxRows: Number(v.IMPORT_MAX_ROWS),
      commandConcurrency: Number(v.IMPORT_COMMAND_CONCURRENCY),
      jobLockMs: Number(v.IMPORT_JOB_LOCK_MS),
      keepCompletedJobs: Number(v.IMPORT_KEEP_COMPLETED_JOBS),
      keepFailedJobs: Number(v.IMPORT_KEEP_FAILED_JOBS),
      resultTtlSeconds: Number(v.IMPORT_RESULT_TTL_SECONDS),
    }),
    metrics: Object.freeze({
      token: v.METRICS_TOKEN === undefined ? undefined : String(v.METRICS_TOKEN),
      port: Number(v.METRICS_PORT),
      host: String(v.METRICS_HOST),
    }),
  });
}
