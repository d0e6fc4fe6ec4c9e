import { randomBytes } from 'node:crypto';

import { type JobDataCipher, UnreadableJobData } from '../importers/job-data-cipher';

/**
 * The record field (an attachment: never in an event) holding a subscription's signing secrets,
 * sealed with AES-256-GCM under a key derived from DATA_ENCRYPTION_KEY (else JWT_SECRET), bound
 * to the subscription's id.
 */
export const SECRETS_FIELD = 'webhookSecrets';

/** Random bytes in a secret: Standard Webhooks asks for 24 to 64. */
const SECRET_BYTES = 32;

/** `whsec_` + base64 of 32 random bytes: the form Standard Webhooks libraries take. */
export function newSigningSecret(): string {
  return `whsec_${randomBytes(SECRET_BYTES).toString('base64')}`;
}

/** What the sealed field holds: the secret that signs, and the one rotated out (until its time). */
export interface SigningSecrets {
  readonly current: string;
  readonly previous: string | null;
}

/** Seals and opens a subscription's secrets; nothing else ever sees them in the clear. */
export class WebhookSecrets {
  constructor(private readonly cipher: JobDataCipher) {}

  seal(subscriptionId: string, secrets: SigningSecrets): string {
    return this.cipher.seal(secrets, `webhook:${subscriptionId.toLowerCase()}`);
  }

  open(subscriptionId: string, sealed: string): SigningSecrets {
    return this.cipher.open(sealed, `webhook:${subscriptionId.toLowerCase()}`) as SigningSecrets;
  }

  /**
   * The secrets, or null when no configured key opens them: sealed under a DATA_ENCRYPTION_KEY (or
   * JWT_SECRET) replaced since, after a leak. A rotation then starts afresh rather than failing.
   */
  openIfReadable(subscriptionId: string, sealed: string): SigningSecrets | null {
    try {
      return this.open(subscriptionId, sealed);
    } catch (error) {
      if (error instanceof UnreadableJobData) return null;
      throw error;
    }
  }
}
