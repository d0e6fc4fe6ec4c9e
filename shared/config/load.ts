import Joi from 'joi';

import type { ComputedDefault, DerivedLeavesOf, LeavesOf, ProcessRole, Setting, TreeOf } from './setting';
import { DERIVED, isLocalDevelopment, SETTINGS, type SettingsEnv } from './settings';

/**
 * The validated, frozen configuration of one process, as the rows of ./settings.ts make it up:
 * every setting comes from the environment.
 */
export type Config = TreeOf<LeavesOf<typeof SETTINGS> | DerivedLeavesOf<typeof DERIVED>>;

/** How long an HTTP listener waits on a client, in milliseconds (HTTP_*_TIMEOUT_MS). */
export type HttpTimeouts = Config['http'];

/** Thrown when the environment does not validate; its message names each bad variable. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}

/** What loadConfig hands joi beside the environment: the role a computed default may ask for. */
interface LoadContext {
  readonly role: ProcessRole;
}

/** A row's schema with its default; a computed one gets the loading process's role from joi's context. */
function withDefault(row: Setting): Joi.Schema {
  if (row.default === undefined) return row.joi;
  if (typeof row.default !== 'function') return row.joi.default(row.default);
  const computed = row.default as ComputedDefault<unknown>;
  return row.joi.default((env: Readonly<Record<string, unknown>>, helpers: Joi.CustomHelpers) =>
    computed(env, (helpers.prefs.context as LoadContext).role),
  );
}

/** The schema the rows make up, with the rules that tie variables together. */
const envSchema = Joi.object(Object.fromEntries(SETTINGS.map((row) => [row.env, withDefault(row)])))
  .and('ADMIN_EMAIL', 'ADMIN_PASSWORD')
  .with('JWT_PREVIOUS_SECRET', 'JWT_SECRET')
  .with('JWT_PREVIOUS_SECRET_UNTIL', 'JWT_PREVIOUS_SECRET')
  .unknown(true);

/** One line of a start-up error; a variable's joi description is shown as what it expects. */
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

/**
 * Without DATA_ENCRYPTION_KEY, sealed data (queued imports, webhook signing secrets, which live as
 * long as their subscription) is keyed by JWT_SECRET, so the rotation that retires the old secret
 * would leave every subscription sealed before it unable to sign (ADR 0044). The old JWT_SECRET as
 * DATA_ENCRYPTION_KEY derives the very key that sealed them.
 */
export const ROTATION_NEEDS_DATA_KEY =
  'JWT_PREVIOUS_SECRET needs DATA_ENCRYPTION_KEY when NODE_ENV=production: without it, import jobs and webhook signing secrets are sealed under a key derived from JWT_SECRET and stop opening once the old secret is removed; set DATA_ENCRYPTION_KEY, on every ingress and worker, to the JWT_SECRET in use before this rotation (docs/operators.md, "Rotating JWT_SECRET")';

/**
 * What production refuses that development allows. Without JWT_SECRET the ingress would sign with
 * a secret it generated and kept in Redis: anyone who can read Redis (a backup, a replica, a
 * MONITOR) could then mint tokens, and the secret cannot be rotated with a grace period. An old
 * secret with no end would be accepted for as long as someone forgets to remove it.
 */
function productionProblems(env: Readonly<Record<string, string | undefined>>): string[] {
  if (env.NODE_ENV !== 'production') return [];
  const problems: string[] = [];
  if (env.JWT_SECRET === undefined) {
    problems.push(
      'JWT_SECRET must be set when NODE_ENV=production (at least 32 characters, e.g. `openssl rand -base64 48`); a secret generated and kept in Redis is for development only',
    );
  }
  if (env.JWT_PREVIOUS_SECRET !== undefined && env.JWT_PREVIOUS_SECRET_UNTIL === undefined) {
    problems.push(
      'JWT_PREVIOUS_SECRET needs JWT_PREVIOUS_SECRET_UNTIL when NODE_ENV=production (the instant the previous secret stops being accepted, e.g. now + JWT_TTL_SECONDS)',
    );
  }
  if (env.JWT_PREVIOUS_SECRET !== undefined && env.DATA_ENCRYPTION_KEY === undefined) {
    problems.push(ROTATION_NEEDS_DATA_KEY);
  }
  return problems;
}

/**
 * What a development start refuses when it is asked to listen beyond this machine (HOST not
 * loopback): the sandbox administrator and the generated JWT secret are for a start only its own
 * machine reaches, so it has neither and must be given JWT_SECRET, as production is.
 */
function developmentBeyondLoopbackProblems(env: Readonly<Record<string, string | undefined>>): string[] {
  if (env.NODE_ENV === 'production' || env.JWT_SECRET !== undefined || isLocalDevelopment(env)) return [];
  return [
    `${developmentBeyondLoopback(env.HOST ?? '')} (at least 32 characters, e.g. \`openssl rand -base64 48\`); leave HOST unset to listen on 127.0.0.1 only`,
  ];
}

/**
 * What a development start listening on `host` (not loopback) is told: the start-up refusal
 * without JWT_SECRET begins with it, and the ingress prints it when it has one.
 */
export function developmentBeyondLoopback(host: string): string {
  return `HOST=${host} is not a loopback address: a development start that listens beyond this machine has no sandbox administrator and needs JWT_SECRET`;
}

/** Sets `value` at a dotted path of `target`, creating the groups on the way. */
function place(target: Record<string, unknown>, path: string, value: unknown): void {
  const keys = path.split('.');
  const last = keys.pop() ?? path;
  let group = target;
  for (const key of keys) {
    group[key] ??= {};
    group = group[key] as Record<string, unknown>;
  }
  group[last] = value;
}

/** Freezes plain objects and arrays all the way down (a Date stays a Date). */
function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !(value instanceof Date)) {
    Object.values(value).forEach(deepFreeze);
    Object.freeze(value);
  }
  return value;
}

/**
 * joi's pattern messages quote the value; a start-up error never does, since the value may be a
 * secret (METRICS_TOKEN, JWT_SECRET, a password in REDIS_URL) and the error goes to the log.
 */
const VALUE_FREE_MESSAGES: Joi.LanguageMessages = {
  'string.pattern.base': '{{#label}} fails to match the required pattern: {{#regex}}',
  'string.pattern.name': '{{#label}} fails to match the {{#name}} pattern',
  'string.pattern.invert.base': '{{#label}} matches the inverted pattern: {{#regex}}',
  'string.pattern.invert.name': '{{#label}} matches the inverted {{#name}} pattern',
};

/**
 * Validates the environment once; the result is frozen so nothing changes settings at run time.
 * `role` is the process it is loaded for: a default that trusts where the process runs is taken
 * only by the ingress, which binds HOST; any other role (a script, unless it says) gets the strict one.
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env, role: ProcessRole = 'script'): Config {
  // Empty strings are how shells and compose files say "unset".
  const present = Object.fromEntries(Object.entries(env).filter(([, value]) => value !== ''));
  const context: LoadContext = { role };
  const result = envSchema.validate(present, {
    abortEarly: false,
    convert: true,
    context,
    messages: VALUE_FREE_MESSAGES,
  });
  const problems = [
    ...(result.error?.details.map(describe) ?? []),
    ...productionProblems(present),
    ...developmentBeyondLoopbackProblems(present),
  ];
  if (problems.length > 0) {
    throw new ConfigError(`Invalid configuration: ${problems.join('; ')}`);
  }
  // joi has checked every variable against its row, so the value has the rows' types.
  const validated = result.value as SettingsEnv & Readonly<Record<string, unknown>>;
  const config: Record<string, unknown> = {};
  const rows: readonly Setting[] = SETTINGS;
  for (const row of rows) {
    if (row.path === undefined) continue;
    const value = validated[row.env];
    place(config, row.path, row.parse === undefined ? value : row.parse(value));
  }
  for (const derived of DERIVED) place(config, derived.path, derived.from(validated));
  return deepFreeze(config as Config);
}
