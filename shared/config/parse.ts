import { BlockList, isIP } from 'node:net';

import Joi from 'joi';

/** 127.0.0.0/8 and ::1; BlockList also matches their IPv4-mapped and long IPv6 spellings. */
const LOOPBACK = new BlockList();
LOOPBACK.addSubnet('127.0.0.0', 8, 'ipv4');
LOOPBACK.addAddress('::1', 'ipv6');

/**
 * Whether binding `host` keeps a listener on this machine: an address of 127.0.0.0/8, ::1 (in any
 * spelling, or IPv4-mapped), or the name `localhost`. Any other name counts as not loopback:
 * what it resolves to is not known here, and a wrong "yes" would expose the sandbox.
 */
export function isLoopbackHost(host: string): boolean {
  if (host.toLowerCase() === 'localhost') return true;
  const family = isIP(host);
  return family !== 0 && LOOPBACK.check(host, family === 4 ? 'ipv4' : 'ipv6');
}

/** Modules an operator can switch on with MODULES; `sport-core` gates the sport-data queries. */
export const KNOWN_MODULES = ['sport-core'] as const;
export type ModuleName = (typeof KNOWN_MODULES)[number];

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

/** A TCP port 1-65535, spelled without leading zeros. */
const PORT_NUMBER = '([1-9]\\d{0,3}|[1-5]\\d{4}|6[0-4]\\d{3}|65[0-4]\\d{2}|655[0-2]\\d|6553[0-5])';
/** `host:port` with a host name, an IPv4 address or a bracketed IPv6 address. */
const CLUSTER_NODE = `(\\[[0-9A-Fa-f:.]+\\]|[A-Za-z0-9.-]+):${PORT_NUMBER}`;
export const CLUSTER_NODE_LIST = new RegExp(`^\\s*${CLUSTER_NODE}(\\s*,\\s*${CLUSTER_NODE})*\\s*$`);

/** `10.0.0.1:7000, [::1]:7001` -> addresses (brackets dropped, as ioredis takes IPv6 hosts). */
export function parseClusterNodes(list: string): readonly RedisNodeAddress[] {
  return Object.freeze(
    list
      .split(',')
      .map((node) => node.trim())
      .map((node) => {
        const colon = node.lastIndexOf(':');
        return Object.freeze({
          host: node.slice(0, colon).replace(/^\[(.*)\]$/, '$1'),
          port: Number(node.slice(colon + 1)),
        });
      }),
  );
}

/** True when a redis:// URL carries a password (`redis://:pw@host` or `redis://user:pw@host`). */
export function urlHasPassword(url: string): boolean {
  try {
    return new URL(url).password !== '';
  } catch {
    return false;
  }
}

const MODULE_NAME = `(${KNOWN_MODULES.join('|')})`;
/** `none`, or names separated by commas (blanks around them and empty entries are tolerated). */
export const MODULE_LIST = new RegExp(`^\\s*(none|${MODULE_NAME}?(\\s*,\\s*${MODULE_NAME}?)*)\\s*$`);

/** The modules a validated MODULES names, each once (`none` names none). */
export function parseModules(list: string): readonly ModuleName[] {
  const modules = list
    .split(',')
    .map((name) => name.trim())
    .filter((name): name is ModuleName => (KNOWN_MODULES as readonly string[]).includes(name));
  return Object.freeze([...new Set(modules)]);
}

/** What a worker process can run: the projector, webhook delivery, the import queue's consumer. */
export const WORKER_CONSUMERS = ['projections', 'webhooks', 'imports'] as const;
export type WorkerConsumer = (typeof WORKER_CONSUMERS)[number];

const CONSUMER_NAME = `(${WORKER_CONSUMERS.join('|')})`;
/** One or more consumer names separated by commas (blanks around them tolerated). */
export const CONSUMER_LIST = new RegExp(`^\\s*${CONSUMER_NAME}(\\s*,\\s*${CONSUMER_NAME})*\\s*$`);

/** The consumers a validated WORKER_CONSUMERS names, each once. */
export function parseConsumers(list: string): readonly WorkerConsumer[] {
  const names = list.split(',').map((name) => name.trim());
  return Object.freeze(WORKER_CONSUMERS.filter((consumer) => names.includes(consumer)));
}

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

export function parseTrustProxy(text: string): TrustProxy {
  const trimmed = text.trim();
  if (trimmed === 'false') return false;
  if (/^\d+$/.test(trimmed)) return Number(trimmed);
  return Object.freeze(trimmed.split(',').map((entry) => entry.trim()));
}

/** TRUST_PROXY's schema: the forms parseTrustProxy reads, with addresses Express would accept. */
export const trustProxySchema = Joi.string().custom((value: string, helpers) => {
  const parsed = parseTrustProxy(value);
  if (Array.isArray(parsed) && !parsed.every(isTrustedProxyEntry)) return helpers.error('any.invalid');
  return value;
});

/** A size in bytes, or with a unit: `1048576`, `512kb`, `1mb` (1 kb = 1024 bytes). */
export const SIZE = /^(\d+)(b|kb|mb)?$/i;
const SIZE_UNITS: Record<string, number> = { b: 1, kb: 1024, mb: 1024 * 1024 };

export function parseSize(text: string): number {
  const match = SIZE.exec(text);
  const unit = (match?.[2] ?? 'b').toLowerCase();
  return Number(match?.[1]) * (SIZE_UNITS[unit] ?? 1);
}

/** libuv's default thread pool size, and its upper bound (uv_threadpool_init). */
const LIBUV_DEFAULT_THREADS = 4;
const LIBUV_MAX_THREADS = 1024;
/** Verifications allowed to run or wait per hashing thread. */
const PENDING_VERIFICATIONS_PER_THREAD = 4;

/**
 * 4 x the threads argon2 hashes on: @node-rs/argon2 runs each hash as a napi async task, that is on
 * libuv's thread pool, whose size is UV_THREADPOOL_SIZE (default 4, at most 1024).
 */
export function defaultMaxPendingVerifications(env: Readonly<Record<string, unknown>>): number {
  const size = env.UV_THREADPOOL_SIZE;
  const threads =
    typeof size === 'string' || typeof size === 'number' ? Number.parseInt(String(size), 10) : 0;
  const pool = threads > 0 ? Math.min(threads, LIBUV_MAX_THREADS) : LIBUV_DEFAULT_THREADS;
  return PENDING_VERIFICATIONS_PER_THREAD * pool;
}

/** A duration: a number of milliseconds, or a number with a unit `ms`, `s`, `m`, `h` or `d`. */
export const DURATION = /^(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?$/i;
const DURATION_UNITS: Readonly<Record<string, number>> = {
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
};

/** LOG_RETENTION: `forever`, or a duration (`30d`, `12h`). */
/** `forever` or a duration with its unit: a bare number (30 meaning 30 ms, not 30 days) is refused. */
export const RETENTION = /^(?:forever|\d+(?:\.\d+)?\s*(?:ms|s|m|h|d))$/i;

/** `forever` as null (nothing is trimmed), else the duration in milliseconds. */
export function parseRetention(text: string): number | null {
  if (text.trim().toLowerCase() === 'forever') return null;
  return parseDurationList(text)[0] ?? null;
}

/** A comma-separated list of durations (`0,5s,5m,30m`), each 0 or more. */
export const DURATION_LIST =
  /^\s*\d+(?:\.\d+)?\s*(?:ms|s|m|h|d)?\s*(?:,\s*\d+(?:\.\d+)?\s*(?:ms|s|m|h|d)?\s*)*$/i;

/** `0,5s,5m` as milliseconds: [0, 5000, 300000]. */
export function parseDurationList(text: string): number[] {
  return text.split(',').map((part) => {
    const match = DURATION.exec(part.trim());
    const unit = (match?.[2] ?? 'ms').toLowerCase();
    return Math.round(Number(match?.[1]) * (DURATION_UNITS[unit] ?? 1));
  });
}
