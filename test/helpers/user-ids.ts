import { keyedUserId, USER_ID_KEY_BYTES } from '../../shared/accounts/user-ids';
import type { RedisClient } from '../../shared/redis/connections';
import { createKeys } from '../../shared/redis/keys';

/**
 * The user id key the test fixtures write before a test's first account (a service's first start
 * generates its own, ADR 0035): tests can then name an account's id from its e-mail without asking
 * the service. Nothing in production knows this value.
 */
const TEST_USER_ID_KEY = Buffer.alloc(USER_ID_KEY_BYTES, 0x5a);

/** The id the service gives a new account of `email` under the test fixtures' key. */
export function userIdForEmail(email: string): string {
  return keyedUserId(TEST_USER_ID_KEY, email);
}

/** Writes the test key under `prefix` unless a key is there already (SET NX, as the service does). */
export async function seedTestUserIdKey(redis: RedisClient, prefix: string): Promise<void> {
  await redis.set(createKeys(prefix).userIdKey(), TEST_USER_ID_KEY.toString('base64url'), 'NX');
}
