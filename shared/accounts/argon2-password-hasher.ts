import { hash, verify } from '@node-rs/argon2';

import type { PasswordHasher } from '../user/password-hasher';

/**
 * argon2id at OWASP's minimum (19 MiB, 2 passes, 1 lane). The parameters are encoded in every
 * stored string ($argon2id$v=19$m=19456,t=2,p=1$...), so raising them later only affects new
 * hashes. @node-rs/argon2 hashes on libuv's thread pool: the event loop stays free.
 */
export const ARGON2_PARAMETERS = {
  // Algorithm.Argon2id; the package exports it as a const enum, which isolatedModules cannot read.
  algorithm: 2,
  memoryCost: 19_456,
  timeCost: 2,
  parallelism: 1,
} as const;

export class Argon2PasswordHasher implements PasswordHasher {
  hash(password: string): Promise<string> {
    return hash(password, ARGON2_PARAMETERS);
  }

  async verify(storedHash: string, password: string): Promise<boolean> {
    try {
      return await verify(storedHash, password);
    } catch {
      return false;
    }
  }
}
