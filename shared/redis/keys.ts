/**
 * Every Redis key the service uses is built here and nowhere else, so the key layout (and its
 * Redis Cluster hash tags) can be read in one place. `prefix` separates deployments and test runs.
 */
export function createKeys(prefix: string) {
  return Object.freeze({
    prefix,
  });
}

export type Keys = ReturnType<typeof createKeys>;
