import { createHmac, createSecretKey, randomBytes } from 'node:crypto';
import { LRUCache } from 'lru-cache';

import type { Account } from '../../shared/accounts/account';
import type { AccountCache } from '../../shared/accounts/account-cache';
import type { AccountService } from '../../shared/accounts/account.service';
import { userIdForEmail } from '../../shared/domain/user/user-id';
import type { PasswordHasher } from '../../shared/domain/user/password-hasher';
import type { SignInThrottle } from './sign-in-throttle';

interface CachedVerification {
  readonly userId: string;
  /** The account version it was verified against: any change to the account invalidates it. */
  readonly version: number;
}

const MAX_CACHED_VERIFICATIONS = 10_000;

/**
 * Checks an e-mail and password. Hashing costs ~16 ms of a core, so a Basic caller sending the
 * same credentials on every request would cap throughput at the hash rate; successful checks are
 * therefore remembered for a short time, keyed by an HMAC of the credentials (never the
 * credentials themselves) under a per-process random key, and tied to the account's version.
 */
export class CredentialVerifier {
  /** Absent when AUTH_CACHE_TTL_SECONDS is 0: every check then hashes. */
  private readonly cache: LRUCache<string, CachedVerification> | undefined;
  /**
   * A KeyObject made once: given a Buffer, createHmac prepares a key on every call, which took
   * 9 us a call on Node 24 (1.4 us with this).
   */
  private readonly cacheKeySecret = createSecretKey(randomBytes(32));
  /** Checks under way, by the same key as the cache: identical credentials wait for the same one. */
  private readonly inFlight = new Map<string, Promise<Account | null>>();

  private constructor(
    private readonly accounts: AccountService,
    private readonly accountCache: AccountCache,
    private readonly hasher: PasswordHasher,
    private readonly throttle: SignInThrottle,
    /** Verified against for unknown e-mails, so they cost what a wrong password costs. */
    private readonly decoyHash: string,
    cacheTtlSeconds: number,
  ) {
    this.cache =
      cacheTtlSeconds > 0
        ? new LRUCache({ max: MAX_CACHED_VERIFICATIONS, ttl: cacheTtlSeconds * 1000 })
        : undefined;
  }

  static async create(
    accounts: AccountService,
    accountCache: AccountCache,
    hasher: PasswordHasher,
    throttle: SignInThrottle,
    cacheTtlSeconds: number,
  ): Promise<CredentialVerifier> {
    const decoyHash = await hasher.hash(randomBytes(24).toString('base64url'));
    return new CredentialVerifier(accounts, accountCache, hasher, throttle, decoyHash, cacheTtlSeconds);
  }

  /**
   * The account for credentials this process verified before, while that verification stands
   * (cached, and the account unchanged since): null when it no longer does, undefined when these
   * credentials were never verified here (or the cache is off). Never hashes, never throttles.
   */
  recall(email: string, password: string): Promise<Account | null> | undefined {
    return this.recallByKey(this.cacheKeyOf(email, password));
  }

  /** The account when the credentials are right, else null; throws the 429 while throttled. */
  async verify(email: string, password: string, clientAddress: string): Promise<Account | null> {
    const cacheKey = this.cacheKeyOf(email, password);
    const recalled = await this.recallByKey(cacheKey);
    if (recalled) return recalled;

    // Identical credentials arriving together share one check: a client's first burst of parallel
    // requests is one sign-in, not one each. Each would take a point of the throttle before its
    // hash (20 right passwords at once were refused with 429 past AUTH_MAX_FAILURES_PER_ACCOUNT),
    // and a hash of its own. Parallel guesses differ in their password, so each still counts.
    const pending = this.inFlight.get(cacheKey);
    if (pending) return pending;
    const check = this.check(email, password, clientAddress, cacheKey).finally(() =>
      this.inFlight.delete(cacheKey),
    );
    this.inFlight.set(cacheKey, check);
    return check;
  }

  private cacheKeyOf(email: string, password: string): string {
    return createHmac('sha256', this.cacheKeySecret)
      .update(email.trim().toLowerCase())
      .update('\0')
      .update(password)
      .digest('base64url');
  }

  private recallByKey(cacheKey: string): Promise<Account | null> | undefined {
    const cached = this.cache?.get(cacheKey);
    if (!cached) return undefined;
    return this.accountCache.findById(cached.userId).then((account) => {
      if (account && account.version === cached.version) return account;
      this.cache?.delete(cacheKey);
      return null;
    });
  }

  /** One real verification: a throttle point, the account, the hash. */
  private async check(
    email: string,
    password: string,
    clientAddress: string,
    cacheKey: string,
  ): Promise<Account | null> {
    const accountKey = userIdForEmail(email);
    // The attempt counts as a failure from here on unless it proves right (see SignInThrottle).
    const attempt = await this.throttle.begin(accountKey, clientAddress);
    let verified: Account | null;
    try {
      const { account, credential } = await this.accounts.findWithCredential(email);
      // Always one full verification, against a decoy when there is no credential: no timing oracle.
      const matches = await this.hasher.verify(credential ?? this.decoyHash, password);
      verified = account && credential && matches ? account : null;
    } catch (error) {
      await attempt.abandoned().catch(() => undefined);
      throw error;
    }
    if (!verified) return null;
    await attempt.succeeded();
    this.cache?.set(cacheKey, { userId: verified.userId, version: verified.version });
    return verified;
  }
}
