import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';

import type { Config } from '../config';
import type { RedisClient } from '../redis/connections';
import { sharedGeneratedSecret } from '../redis/generated-secret';
import type { Keys } from '../redis/keys';

/** Where the data key came from: the report and the log say so, never the key itself. */
export type DataKeySource = 'DATA_ENCRYPTION_KEY' | 'JWT_SECRET' | 'generated (development only)';

const VERSION = 'v1';
const IV_BYTES = 12;
const TAG_BYTES = 16;
/**
 * What a key is for: its HKDF salt. Fixed forever: changing one makes everything sealed for that
 * purpose unreadable. Each purpose gets a key of its own from the same secret.
 */
export const SEALING_PURPOSES = {
  importJobData: 'fantasy-team-service/import-job-data',
  webhookSecrets: 'fantasy-team-service/webhook-secrets',
} as const;
export type SealingPurpose = keyof typeof SEALING_PURPOSES;
const HKDF_INFO = 'aes-256-gcm/v1';

/** Thrown by open() when no known key opens the data (a key changed, or the data was altered). */
export class UnreadableJobData extends Error {
  override readonly name = 'UnreadableJobData';
}

function deriveKey(secret: string, purpose: SealingPurpose): Buffer {
  const salt = SEALING_PURPOSES[purpose];
  return Buffer.from(hkdfSync('sha256', Buffer.from(secret, 'utf8'), salt, HKDF_INFO, 32));
}

/**
 * Seals data that must never be readable in Redis, and opens it again: an import's data (passwords
 * among it) before it goes into a BullMQ job, a webhook subscription's signing secrets in its
 * record. AES-256-GCM under a key derived with HKDF-SHA256 from a secret that is never written to
 * Redis (DATA_ENCRYPTION_KEY, else JWT_SECRET). The job id is the additional authenticated data, so a
 * sealed blob moved into another job does not open. Keys of other configured secrets are tried
 * when opening, so a job queued before a rotation (of JWT_SECRET into JWT_PREVIOUS_SECRET, or
 * before DATA_ENCRYPTION_KEY was set) still opens.
 */
export class JobDataCipher {
  private readonly sealingKey: Buffer;
  private readonly openingKeys: readonly Buffer[];

  constructor(
    secret: string,
    olderSecrets: readonly string[] = [],
    readonly source: DataKeySource = 'DATA_ENCRYPTION_KEY',
    purpose: SealingPurpose = 'importJobData',
  ) {
    this.sealingKey = deriveKey(secret, purpose);
    this.openingKeys = [
      this.sealingKey,
      ...[...new Set(olderSecrets)]
        .filter((older) => older !== secret)
        .map((older) => deriveKey(older, purpose)),
    ];
  }

  /**
   * DATA_ENCRYPTION_KEY, else JWT_SECRET, else (development only: production refuses to start
   * without JWT_SECRET) the generated secret kept in Redis, which protects nothing from a reader of
   * Redis but keeps the code path the same.
   */
  static async create(
    config: Config,
    redis: RedisClient,
    keys: Keys,
    purpose: SealingPurpose = 'importJobData',
  ): Promise<JobDataCipher> {
    const older = [config.jwtSecret, config.jwtPreviousSecret?.secret].filter(
      (secret): secret is string => secret !== undefined,
    );
    if (config.dataEncryptionKey)
      return new JobDataCipher(config.dataEncryptionKey, older, 'DATA_ENCRYPTION_KEY', purpose);
    if (config.jwtSecret) return new JobDataCipher(config.jwtSecret, older, 'JWT_SECRET', purpose);
    const generated = await sharedGeneratedSecret(config, redis, keys);
    return new JobDataCipher(generated, [], 'generated (development only)', purpose);
  }

  /** `v1.<base64url(iv | tag | ciphertext)>` of `value` as JSON, bound to `jobId` (any id: the AAD). */
  seal(value: unknown, jobId: string): string {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.sealingKey, iv);
    cipher.setAAD(Buffer.from(jobId.toLowerCase(), 'utf8'));
    const ciphertext = Buffer.concat([cipher.update(JSON.stringify(value), 'utf8'), cipher.final()]);
    return `${VERSION}.${Buffer.concat([iv, cipher.getAuthTag(), ciphertext]).toString('base64url')}`;
  }

  /** The value seal() was given; throws UnreadableJobData when no known key opens it. */
  open(sealed: string, jobId: string): unknown {
    const [version, body = ''] = sealed.split('.', 2);
    const bytes = Buffer.from(body, 'base64url');
    if (version !== VERSION || bytes.length < IV_BYTES + TAG_BYTES) {
      throw new UnreadableJobData('the job data is not sealed data this service wrote');
    }
    const iv = bytes.subarray(0, IV_BYTES);
    const tag = bytes.subarray(IV_BYTES, IV_BYTES + TAG_BYTES);
    const ciphertext = bytes.subarray(IV_BYTES + TAG_BYTES);
    for (const key of this.openingKeys) {
      try {
        const decipher = createDecipheriv('aes-256-gcm', key, iv);
        decipher.setAAD(Buffer.from(jobId.toLowerCase(), 'utf8'));
        decipher.setAuthTag(tag);
        const text = Buffer.concat([decipher.update(ciphertext), decipher.final()]).toString('utf8');
        return JSON.parse(text) as unknown;
      } catch {
        // Not this key: try the next.
      }
    }
    throw new UnreadableJobData('no configured key opens the job data (was the data key changed?)');
  }
}
