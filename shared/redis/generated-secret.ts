import { randomBytes } from 'node:crypto';

import type { RedisClient } from './connections';
import type { Keys } from './keys';

/**
 * The secret generated once when JWT_SECRET is unset, kept in Redis so every replica agrees: for
 * development only (anyone who can read Redis can read it). The first process to ask creates it.
 */
export async function sharedGeneratedSecret(redis: RedisClient, keys: Keys): Promise<string> {
  const key = keys.generatedJwtSecret();
  await redis.set(key, randomBytes(48).toString('base64url'), 'NX');
  const secret = await redis.get(key);
  if (!secret) throw new Error('could not read the generated JWT secret from Redis');
  return secret;
}
