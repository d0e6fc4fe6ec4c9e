import { CredentialVerifier } from '../../ingress/auth/credential-verifier';
import type { SignInThrottle } from '../../ingress/auth/sign-in-throttle';
import type { Account } from '../../shared/accounts/account';
import type { AccountService } from '../../shared/accounts/account.service';
import type { AccountCache } from '../../shared/accounts/account-cache';
import type { PasswordHasher } from '../../shared/domain/user/password-hasher';

/**
 * The Basic verification cache's key (ADR 0005): two different e-mail and password pairs never
 * share one, however their characters fall. The collaborators are plain stand-ins: what is under
 * test is the cache inside the verifier, not Redis or the hash.
 */

const EMAIL = 'member@example.com';
const PASSWORD = 'pass\0word-with-a-nul';
const account = {
  userId: 'a3f1c2d4-0000-4000-8000-000000000001',
  email: EMAIL,
  disabled: false,
  securityStamp: 'stamp-1',
} as unknown as Account;

async function verifierKnowing(): Promise<CredentialVerifier> {
  const accounts = {
    findWithCredential: (email: string) =>
      Promise.resolve(
        email === EMAIL ? { account, credential: 'stored-hash' } : { account: null, credential: null },
      ),
  } as unknown as AccountService;
  const accountCache = { findById: () => Promise.resolve(account) } as unknown as AccountCache;
  const hasher: PasswordHasher = {
    hash: () => Promise.resolve('stored-hash'),
    verify: (_stored, password) => Promise.resolve(password === PASSWORD),
  };
  const done = () => Promise.resolve();
  const throttle = {
    begin: () => Promise.resolve({ succeeded: done, failed: done, abandoned: done }),
  } as unknown as SignInThrottle;
  return CredentialVerifier.create(accounts, accountCache, hasher, throttle, {
    cacheTtlSeconds: 60,
    maxPendingVerifications: 4,
  });
}

describe('the Basic verification cache key', () => {
  it('When the right credentials were verified, then they are recalled, and no other split of the same characters is', async () => {
    const verifier = await verifierKnowing();
    expect(await verifier.verify(EMAIL, PASSWORD, '127.0.0.1')).toBe(account);

    expect(await verifier.recall(EMAIL, PASSWORD)).toBe(account);
    expect(await verifier.recall(` ${EMAIL.toUpperCase()} `, PASSWORD)).toBe(account);
    // The pair split at its other NUL: the same characters, another e-mail and another password.
    expect(verifier.recall(`${EMAIL}\0pass`, 'word-with-a-nul')).toBeUndefined();
  });

  it('When the credentials hold a lone surrogate, then they have no key: never recalled, refused without a hash', async () => {
    const verifier = await verifierKnowing();

    expect(verifier.recall(EMAIL, 'pass\ud800')).toBeUndefined();
    expect(await verifier.verify(EMAIL, 'pass\ud800', '127.0.0.1')).toBeNull();
  });
});
