import { hash, randomBytes } from 'node:crypto';

import { LRUCache } from 'lru-cache';

import type { Account } from '../../shared/accounts/account';
import type { AccountService } from '../../shared/accounts/account.service';
import { AppError, serviceUnavailable } from '../../shared/errors';
import type { SignInMetrics } from '../../shared/metrics/metrics';
import type { PasswordHasher } from '../../shared/user/password-hasher';
import type { AccountCache } from './account-cache';
import { parseBasicCredentials } from './basic-header';
import type { SignInAttempt, SignInThrottle } from './sign-in-throttle';

interface CachedVerification {
  readonly userId: string;
  /**
   * The security stamp the credentials were verified under. Every change that could make them
   * wrong (a password change or set, a roles change, a disable, an erasure) gives the account a
   * new stamp, which is what kills the entry; changes that cannot (an enable) leave it standing.
   */
  readonly securityStamp: string;
}

const MAX_CACHED_VERIFICATIONS = 10_000;

/** The detail of the 503 answered while AUTH_MAX_PENDING_VERIFICATIONS checks are under way. */
export const VERIFICATIONS_BUSY_MESSAGE = 'Too many sign-ins are being checked at once. Try again shortly.';
/** A verification takes tens of milliseconds: a second is enough for the queue to move on. */
const VERIFICATIONS_BUSY_RETRY_AFTER_SECONDS = 1;

/** What the verifier needs beyond its collaborators. */
export interface VerifierSettings {
  /** 0 turns the verification cache off: every check then hashes. */
  readonly cacheTtlSeconds: number;
  /** Real verifications allowed to run or wait at once in this process (AUTH_MAX_PENDING_VERIFICATIONS). */
  readonly maxPendingVerifications: number;
  /**
   * Accounts whose credentials are refused as a disabled account's are: the sandbox and demo
   * accounts on a start that is not a local development one (refusedSandboxAccounts, ADR 0037).
   */
  readonly refusedUserIds?: ReadonlySet<string>;
}

/**
 * Checks an e-mail and password. Hashing is costly, so successful checks are remembered briefly,
 * under a keyed hash of the credentials (never the credentials), tied to the account's security
 * stamp; a Basic header already verified is recalled by a keyed hash of its text (ADR 0005, ADR
 * 0022). A disabled account's credentials are refused, right or wrong, in the same words and time
 * as a wrong password, and its right password counts as a failed sign-in.
 */
export class CredentialVerifier {
  /** Absent when AUTH_CACHE_TTL_SECONDS is 0: every check then hashes. */
  private readonly cache: LRUCache<string, CachedVerification> | undefined;
  /**
   * Basic Authorization headers whose credentials were verified here, by a keyed hash of the
   * header's exact text (headerKeyOf), each to its credentials' cache key: what parsing the header
   * and cacheKeyOf would give, remembered so that a client's next request with the same header
   * costs one hash instead of the strict parse and the key (see recallBasic). An alias proves
   * nothing on its own: a recall through it stands only while the entry it names does. Absent with
   * the cache.
   */
  private readonly headerAliases: LRUCache<string, string> | undefined;
  /**
   * The per-process random secret the cache keys are derived under (see cacheKeyOf): 32 random
   * bytes, as text, made once, never written anywhere, gone with the process.
   */
  private readonly cacheKeySecret = randomBytes(32).toString('base64');
  /** Checks under way, by the same key as the cache: identical credentials wait for the same one. */
  private readonly inFlight = new Map<string, Promise<Account | null>>();
  /** Real verifications running or waiting for a hashing thread (see check()). */
  private pendingVerifications = 0;
  private readonly maxPendingVerifications: number;
  private readonly refusedUserIds: ReadonlySet<string>;

  private constructor(
    private readonly accounts: AccountService,
    private readonly accountCache: AccountCache,
    private readonly hasher: PasswordHasher,
    private readonly throttle: SignInThrottle,
    /** Verified against for unknown e-mails, so they cost what a wrong password costs. */
    private readonly decoyHash: string,
    { cacheTtlSeconds, maxPendingVerifications, refusedUserIds }: VerifierSettings,
    private readonly metrics?: SignInMetrics,
  ) {
    this.maxPendingVerifications = maxPendingVerifications;
    this.refusedUserIds = refusedUserIds ?? new Set();
    metrics?.collectPendingVerifications(() => this.pendingVerifications);
    this.cache =
      cacheTtlSeconds > 0
        ? new LRUCache({ max: MAX_CACHED_VERIFICATIONS, ttl: cacheTtlSeconds * 1000 })
        : undefined;
    // Bounded and aged as the cache is: many headers can name one entry (an e-mail's case, the
    // blanks around the token), and they must not grow the process, nor crowd verifications out.
    this.headerAliases =
      cacheTtlSeconds > 0
        ? new LRUCache({ max: MAX_CACHED_VERIFICATIONS, ttl: cacheTtlSeconds * 1000 })
        : undefined;
  }

  static async create(
    accounts: AccountService,
    accountCache: AccountCache,
    hasher: PasswordHasher,
    throttle: SignInThrottle,
    settings: VerifierSettings,
    metrics?: SignInMetrics,
  ): Promise<CredentialVerifier> {
    const decoyHash = await hasher.hash(randomBytes(24).toString('base64url'));
    return new CredentialVerifier(accounts, accountCache, hasher, throttle, decoyHash, settings, metrics);
  }

  /**
   * The account for credentials this process verified before, while that verification stands
   * (cached, the account's security stamp unchanged since, the account enabled): null when it no
   * longer does, undefined when these credentials were never verified here (or the cache is off).
   * Never hashes, never throttles, and costs no Redis round trip while the account is cached.
   */
  recall(email: string, password: string): Promise<Account | null> | undefined {
    const cacheKey = this.cacheKeyOf(email, password);
    return cacheKey === undefined ? undefined : this.recallByKey(cacheKey);
  }

  /**
   * {@link recall} for a Basic Authorization header, as it came. A header seen with verified
   * credentials before is found by a keyed hash of its text, which names the credentials' cache
   * entry; the entry then stands or not exactly as for {@link recall} (stamp, disabled). Any other
   * header is parsed strictly (RFC 7617, basic-header.ts), and once its credentials are recalled
   * the header is remembered as naming their entry. Undefined for a header that does not parse,
   * or whose credentials were never verified here.
   */
  recallBasic(header: string): Promise<Account | null> | undefined {
    if (!this.headerAliases) return undefined;
    const headerKey = this.headerKeyOf(header);
    const aliased = this.headerAliases.get(headerKey);
    if (aliased !== undefined) return this.recallByKey(aliased);
    const credentials = parseBasicCredentials(header);
    const cacheKey = credentials ? this.cacheKeyOf(credentials.userId, credentials.password) : undefined;
    if (cacheKey === undefined) return undefined;
    return this.recallByKey(cacheKey)?.then((account) => {
      if (account) this.headerAliases?.set(headerKey, cacheKey);
      return account;
    });
  }

  /**
   * {@link verify} for a Basic Authorization header, as it came: null when it does not parse
   * (RFC 7617, basic-header.ts; nothing counted, nothing hashed). Once its credentials are
   * verified, the header is remembered as naming their cache entry (see {@link recallBasic}).
   */
  async verifyBasic(header: string | undefined, clientAddress: string): Promise<Account | null> {
    const credentials = parseBasicCredentials(header);
    if (!header || !credentials) return null;
    const { userId: email, password } = credentials;
    const cacheKey = this.cacheKeyOf(email, password);
    if (cacheKey === undefined) return null;
    const account = await this.verifyByKey(email, password, clientAddress, cacheKey);
    // Only a verified header is remembered: a refusal, or a 429 or 503 thrown above, leaves none.
    if (account) this.headerAliases?.set(this.headerKeyOf(header), cacheKey);
    return account;
  }

  /**
   * Whether `password` is the account's current password, for a caller that must prove it again
   * (ChangePassword's current password): `CurrentPasswordCheck` of the account commands. It is
   * {@link verify}: a wrong password counts as a failed sign-in of `email` from `clientAddress`,
   * and throws the 429 problem once that pair or address is throttled, as a sign-in would.
   */
  async matches(email: string, password: string, clientAddress: string): Promise<boolean> {
    return (await this.verify(email, password, clientAddress)) !== null;
  }

  /**
   * Hashes a password being set (ChangePassword, SetUserPassword): `NewPasswordHasher` of the
   * account commands. It takes a place among the pending verifications, since it takes a hashing
   * thread as a verification does: past AUTH_MAX_PENDING_VERIFICATIONS it throws the same 503
   * problem, so password changes cannot queue sign-ins behind them.
   */
  async hash(password: string): Promise<string> {
    if (this.pendingVerifications >= this.maxPendingVerifications) {
      this.metrics?.recordSignIn('busy');
      throw serviceUnavailable(VERIFICATIONS_BUSY_MESSAGE, VERIFICATIONS_BUSY_RETRY_AFTER_SECONDS);
    }
    this.pendingVerifications += 1;
    try {
      return await this.hasher.hash(password);
    } finally {
      this.pendingVerifications -= 1;
    }
  }

  /**
   * The account when the credentials are right and the account is enabled, else null; throws the
   * 429 problem while throttled and the 503 problem while too many verifications are under way.
   */
  async verify(email: string, password: string, clientAddress: string): Promise<Account | null> {
    // No account holds a lone surrogate: its e-mail would not derive an id, and its password
    // would hash as U+FFFD, matching another text. Such input has no cache key and is refused.
    const cacheKey = this.cacheKeyOf(email, password);
    if (cacheKey === undefined) return null;
    return this.verifyByKey(email, password, clientAddress, cacheKey);
  }

  private async verifyByKey(
    email: string,
    password: string,
    clientAddress: string,
    cacheKey: string,
  ): Promise<Account | null> {
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

  /**
   * The verification cache's key: SHA-256 over the per-process secret, the normalised e-mail with
   * its length in front (so the pair's encoding is injective) and the password. Keyed, so the cache
   * holds nothing a guess could be checked against without the secret. Not an HMAC: the key is never
   * sent or shown, so length extension gives nothing, and one hash call is cheaper (ADR 0022).
   * Input that is not well-formed UTF-16 has no key (it would hash as U+FFFD, as another text).
   */
  private cacheKeyOf(email: string, password: string): string | undefined {
    if (!email.isWellFormed() || !password.isWellFormed()) return undefined;
    const account = email.trim().toLowerCase();
    return hash('sha256', `${this.cacheKeySecret}${account.length}:${account}${password}`, 'base64url');
  }

  /**
   * The key of a Basic Authorization header among the header aliases: SHA-256 over the same
   * per-process secret and the header's exact text, for the reasons cacheKeyOf gives (the header
   * carries the password, so it is never kept as it came). Different texts are different keys,
   * even for the same credentials ("Basic" or "basic", an e-mail's case): each is its own alias.
   * Node reads header values as Latin-1 and only headers that parse (ASCII) are ever aliased, so
   * no text that is not well-formed Unicode can hash as an aliased header.
   */
  private headerKeyOf(header: string): string {
    return hash('sha256', `${this.cacheKeySecret}${header}`, 'base64url');
  }

  /** Enabled, and not a sandbox or demo account this start refuses. */
  private usable(account: Account): boolean {
    return !account.disabled && !this.refusedUserIds.has(account.userId);
  }

  private recallByKey(cacheKey: string): Promise<Account | null> | undefined {
    const cached = this.cache?.get(cacheKey);
    if (!cached) return undefined;
    return this.accountCache.findById(cached.userId).then((account) => {
      if (account && this.usable(account) && account.securityStamp === cached.securityStamp) return account;
      this.cache?.delete(cacheKey);
      return null;
    });
  }

  /**
   * One real verification: a throttle point, a place among the pending verifications, the account,
   * the hash. argon2 runs on libuv's small thread pool, where a flood of guesses would queue every
   * sign-in behind it: at most AUTH_MAX_PENDING_VERIFICATIONS run or wait here, past that a fast 503
   * with Retry-After and the throttle points given back. The throttle comes first, so an address
   * over its limit gets its 429 and holds no place.
   */
  private async check(
    email: string,
    password: string,
    clientAddress: string,
    cacheKey: string,
  ): Promise<Account | null> {
    const accountKey = await this.accounts.userIds.idFor(email);
    // The attempt counts as a failure from here on unless it proves right (see SignInThrottle).
    let attempt: SignInAttempt;
    try {
      attempt = await this.throttle.begin(accountKey, clientAddress);
    } catch (error) {
      if (error instanceof AppError && error.status === 429) this.metrics?.recordSignIn('throttled');
      throw error;
    }
    if (this.pendingVerifications >= this.maxPendingVerifications) {
      this.metrics?.recordSignIn('busy');
      await attempt.abandoned().catch(() => undefined);
      throw serviceUnavailable(VERIFICATIONS_BUSY_MESSAGE, VERIFICATIONS_BUSY_RETRY_AFTER_SECONDS);
    }
    this.pendingVerifications += 1;
    let verified: Account | null;
    try {
      const { account, credential } = await this.accounts.findWithCredential(email);
      // Always one full verification, against a decoy when there is no credential: no timing oracle.
      const matches = await this.hasher.verify(credential ?? this.decoyHash, password);
      // A disabled account's right password is refused as a wrong one, and counts as one below: an
      // answer (or a throttle) that differed would tell a guesser the password was right.
      // A refused sandbox account's is refused the same way (ADR 0037).
      verified = account && this.usable(account) && credential && matches ? account : null;
    } catch (error) {
      await attempt.abandoned().catch(() => undefined);
      throw error;
    } finally {
      this.pendingVerifications -= 1;
    }
    if (!verified) {
      this.metrics?.recordSignIn('failed');
      await attempt.failed();
      return null;
    }
    this.metrics?.recordSignIn('succeeded');
    await attempt.succeeded();
    this.cache?.set(cacheKey, { userId: verified.userId, securityStamp: verified.securityStamp });
    return verified;
  }
}
