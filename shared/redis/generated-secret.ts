import { randomBytes } from 'node:crypto';

import { type Config, ConfigError } from '../config';
import type { RedisClient } from './connections';
import type { Keys } from './keys';

/**
 * The secret generated once when JWT_SECRET is unset, kept in Redis so every replica agrees: for a
 * development start on loopback only (anyone who can read Redis can read it, and mint tokens with
 * it). loadConfig already refuses any other start without JWT_SECRET; this refuses again here, at
 * the one place the secret is written. The first process to ask creates it.
 */
export async function sharedGeneratedSecret(
  config: Pick<Config, 'localDevelopment'>,
  redis: RedisClient,
  keys: Keys,
): Promise<string> {
  if (!config.localDevelopment) {
    throw new ConfigError(
      'JWT_SECRET must be set: a generated secret is kept in Redis only by a development start on loopback',
    );
  }
  const key = keys.generatedJwtSecret();
  await redis.set(key, randomBytes(48).toString('base64url'), 'NX');
  const secret = await redis.get(key);
  if (!secret) throw new Error('could not read the generated JWT secret from Redis');
  return secret;
}
