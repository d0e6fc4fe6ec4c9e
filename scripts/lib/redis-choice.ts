import { describeRedisTarget } from '../../shared/redis/connections';

/**
 * Which Redis `npm start` uses. Only what the operator gave counts: a cluster or a URL they named,
 * else a private redis-server of its own. A Redis that merely answers on 127.0.0.1:6379 is never
 * picked: it may hold another project's data (ADR 0027).
 */
export type RedisChoice =
  | { readonly kind: 'cluster'; readonly nodes: string }
  | { readonly kind: 'url'; readonly url: string }
  | { readonly kind: 'private'; readonly dataDir: string };

/** The choice from the environment; an empty value counts as unset, as in the configuration. */
export function chooseRedis(
  env: Readonly<Record<string, string | undefined>>,
  privateDataDir: string,
): RedisChoice {
  // A cluster is the operator's to run: the children read REDIS_CLUSTER_NODES, which wins anyway.
  if (env.REDIS_CLUSTER_NODES) return { kind: 'cluster', nodes: env.REDIS_CLUSTER_NODES };
  if (env.REDIS_URL) return { kind: 'url', url: env.REDIS_URL };
  return { kind: 'private', dataDir: privateDataDir };
}

/** What a private redis-server turned out to be, once started. */
export interface PrivateRedisFacts {
  readonly url: string;
  readonly pid: number;
}

/** The one line `npm start` prints about the Redis it uses; never a password. */
export function redisChoiceLine(choice: RedisChoice, started?: PrivateRedisFacts): string {
  switch (choice.kind) {
    case 'cluster':
      return `[start] Redis: the cluster at ${choice.nodes} (REDIS_CLUSTER_NODES)`;
    case 'url':
      return `[start] Redis: ${describeRedisTarget({ kind: 'standalone', url: choice.url })} (REDIS_URL)`;
    case 'private':
      return `[start] Redis: a private redis-server at ${started?.url ?? '(not started)'}, pid ${started?.pid ?? '-'}, data in ${choice.dataDir} (set REDIS_URL to use another)`;
    default: {
      const _exhaustive: never = choice;
      return _exhaustive;
    }
  }
}
