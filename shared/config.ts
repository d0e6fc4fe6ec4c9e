import Joi from 'joi';

/** Modules an operator can switch on with MODULES; `sport-core` gates the sport-data queries. */
export const KNOWN_MODULES = ['sport-core'] as const;
export type ModuleName = (typeof KNOWN_MODULES)[number];

export const LOG_LEVELS = ['error', 'warn', 'info', 'http', 'verbose', 'debug', 'silly'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** The validated, frozen configuration of one process. Every setting comes from the environment. */
export interface Config {
  readonly nodeEnv: 'development' | 'production' | 'test';
  readonly port: number;
  readonly host: string;
  readonly redisUrl: string;
  /** Prefix of every key this service writes, so several deployments (or test runs) can share a Redis. */
  readonly redisKeyPrefix: string;
  readonly logLevel: LogLevel;
  readonly adminEmail: string | undefined;
  readonly adminPassword: string | undefined;
  readonly jwtSecret: string | undefined;
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
}

const MODULE_NAME = `(${KNOWN_MODULES.join('|')})`;
/** `none`, or names separated by commas (blanks around them and empty entries are tolerated). */
const MODULE_LIST = new RegExp(`^\\s*(none|${MODULE_NAME}?(\\s*,\\s*${MODULE_NAME}?)*)\\s*$`);

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
})
  .and('ADMIN_EMAIL', 'ADMIN_PASSWORD')
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

function describe(detail: Joi.ValidationErrorItem): string {
  const variable = String(detail.path[0] ?? detail.context?.label ?? 'environment');
  if (detail.type === 'object.and') {
    return `ADMIN_EMAIL and ADMIN_PASSWORD must be set together`;
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
  const v = result.value as Record<string, string | number | undefined>;
  const modules = String(v.MODULES)
    .split(',')
    .map((name) => name.trim())
    .filter((name): name is ModuleName => (KNOWN_MODULES as readonly string[]).includes(name));
  return Object.freeze({
    nodeEnv: v.NODE_ENV as Config['nodeEnv'],
    port: Number(v.PORT),
    host: String(v.HOST),
    redisUrl: String(v.REDIS_URL),
    redisKeyPrefix: String(v.REDIS_KEY_PREFIX),
    logLevel: v.LOG_LEVEL as LogLevel,
    adminEmail: v.ADMIN_EMAIL === undefined ? undefined : String(v.ADMIN_EMAIL),
    adminPassword: v.ADMIN_PASSWORD === undefined ? undefined : String(v.ADMIN_PASSWORD),
    jwtSecret: v.JWT_SECRET === undefined ? undefined : String(v.JWT_SECRET),
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
    lock: Object.freeze({ ttlMs: Number(v.LOCK_TTL_MS), waitMs: Number(v.LOCK_WAIT_MS) }),
    imports: Object.freeze({
      maxRows: Number(v.IMPORT_MAX_ROWS),
      commandConcurrency: Number(v.IMPORT_COMMAND_CONCURRENCY),
      jobLockMs: Number(v.IMPORT_JOB_LOCK_MS),
      keepCompletedJobs: Number(v.IMPORT_KEEP_COMPLETED_JOBS),
      keepFailedJobs: Number(v.IMPORT_KEEP_FAILED_JOBS),
      resultTtlSeconds: Number(v.IMPORT_RESULT_TTL_SECONDS),
    }),
  });
}
