/**
 * The service's settings: every one is a row of ./settings.ts, which yields the joi schema, the
 * typed Config and the configuration table of docs/operators.md (`npm run docs:config`).
 */
export {
  type Config,
  ConfigError,
  developmentBeyondLoopback,
  type HttpTimeouts,
  loadConfig,
  ROTATION_NEEDS_DATA_KEY,
} from './load';
export {
  isLoopbackHost,
  KNOWN_MODULES,
  type ModuleName,
  type RedisNodeAddress,
  type TrustProxy,
} from './parse';
export type { ProcessRole } from './setting';
export {
  HTTP_TIMEOUT_DEFAULTS,
  LOG_LEVELS,
  type LogLevel,
  type NodeEnv,
  type PreviousJwtSecret,
  type RedisTarget,
  type WriteDurabilityMode,
} from './settings';
