import { createHmac, randomBytes } from 'node:crypto';

import { ConfigError } from '../config';
import type { EventStore } from '../event-store/event-store';
import type { RedisClient } from '../redis/connections';
import type { Keys } from '../redis/keys';
import { userDecider } from '../user/user.decider';
import { legacyUserIdForEmail, normalizeEmail } from '../user/user-id';

/** The length of the user id key; Redis keeps it as base64url text. */
export const USER_ID_KEY_BYTES = 32;

/**
 * A new account's id: HMAC-SHA256 of the normalised e-mail under `key`, its first 16 bytes as a
 * UUID of version 4 (it looks like, and without the key is as opaque as, a random one).
 */
export function keyedUserId(key: Buffer, email: string): string {
  return asUuid(createHmac('sha256', key).update(normalizeEmail(email), 'utf8').digest());
}

function asUuid(bytes: Buffer): string {
  const b = Buffer.from(bytes.subarray(0, 16));
  b[6] = ((b[6] ?? 0) & 0x0f) | 0x40;
  b[8] = ((b[8] ?? 0) & 0x3f) | 0x80;
  const hex = b.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/**
 * Which id an e-mail's account has (ADR 0035). A new account's id is HMAC-SHA256 of the normalised
 * e-mail under a secret generated once, on the first start, and kept in Redis beside the data (the
 * first process to ask writes it, SET NX; every process and restart reads the same one; it is never
 * logged). It stays deterministic, so two concurrent registrations of one e-mail still race on one
 * stream and the version fence lets exactly one win (ADR 0004), but nobody without the secret can
 * compute or confirm it from a guessed e-mail. An account written before ADR 0035 keeps its id
 * (UUIDv5 of the e-mail) and its stream: an e-mail resolves to that id while its stream exists and
 * no keyed one does. No new stream is ever written under a UUIDv5 id, so the answer never changes.
 */
export class UserIds {
  private key: Promise<Buffer> | undefined;

  constructor(
    private readonly redis: RedisClient,
    private readonly keys: Keys,
    private readonly store: EventStore,
  ) {}

  /** The id a new account of this e-mail is created under: keyed, not computable without the secret. */
  async newIdFor(email: string): Promise<string> {
    return keyedUserId(await this.secret(), email);
  }

  /**
   * The id of the account that holds (or held: an erased account keeps its id) this e-mail, else the
   * id a new one would get. Both streams are asked at once: one round trip per lookup.
   */
  async idFor(email: string): Promise<string> {
    const keyed = await this.newIdFor(email);
    const legacy = legacyUserIdForEmail(email);
    const { aggregateType } = userDecider;
    const [keyedLength, legacyLength] = await Promise.all([
      this.store.streamLength(aggregateType, keyed),
      this.store.streamLength(aggregateType, legacy),
    ]);
    return keyedLength === 0 && legacyLength > 0 ? legacy : keyed;
  }

  private secret(): Promise<Buffer> {
    this.key ??= this.loadSecret().catch((error: unknown) => {
      this.key = undefined;
      throw error;
    });
    return this.key;
  }

  /**
   * Loads the key now (a process calls it at start): a store that lost it, or holds another one
   * than its accounts were keyed under, stops the start with a ConfigError instead of going on.
   */
  async verifyKey(): Promise<void> {
    await this.secret();
  }

  private async loadSecret(): Promise<Buffer> {
    const name = this.keys.userIdKey();
    const fingerprintName = this.keys.userIdKeyFingerprint();
    let [stored, fingerprint] = await Promise.all([this.redis.get(name), this.redis.get(fingerprintName)]);
    if (stored === null) {
      // A fingerprint without its key: accounts were keyed under a key this store has lost.
      if (fingerprint !== null) throw new ConfigError(USER_ID_KEY_MESSAGES.lost(name));
      await this.redis.set(name, randomBytes(USER_ID_KEY_BYTES).toString('base64url'), 'NX');
      stored = await this.redis.get(name);
    }
    const bytes = Buffer.from(stored ?? '', 'base64url');
    if (bytes.length !== USER_ID_KEY_BYTES)
      throw new Error('the user id key in Redis is missing or malformed');
    const expected = keyFingerprint(bytes);
    if (fingerprint === null) {
      // The first start, or a store keyed before fingerprints: the key in place is the one.
      await this.redis.set(fingerprintName, expected, 'NX');
      fingerprint = await this.redis.get(fingerprintName);
    }
    if (fingerprint !== expected) throw new ConfigError(USER_ID_KEY_MESSAGES.replaced(name));
    return bytes;
  }
}

/** What a start that cannot trust the user id key says (one line, exit 78). */
export const USER_ID_KEY_MESSAGES = {
  lost: (name: string) =>
    `the user id key ${name} is missing from Redis, though accounts were keyed under it (its fingerprint is there): restore it from the backup of this data; a new key would lock those accounts out (docs/operators.md, "Upgrading a deployment that already has accounts")`,
  replaced: (name: string) =>
    `the user id key ${name} is not the one this data's accounts were keyed under (its fingerprint differs): restore the key of this data's backup`,
} as const;

/** An HMAC under the key, which says whether a key is the one without saying anything of it. */
function keyFingerprint(key: Buffer): string {
  return createHmac('sha256', key).update('fantasy-team-service user id key fingerprint').digest('base64url');
}
