import type { LRUCache } from 'lru-cache';

import type { AccountCache } from '../../ingress/auth/account-cache';
import * as basicHeader from '../../ingress/auth/basic-header';
import { CredentialVerifier } from '../../ingress/auth/credential-verifier';
import type { SignInThrottle } from '../../ingress/auth/sign-in-throttle';
import type { Account } from '../../shared/accounts/account';
import type { AccountService } from '../../shared/accounts/account.service';
import type { PasswordHasher } from '../../shared/user/password-hasher';

/**
 * The Basic verification cache's key (ADR 0005): two different e-mail and password pairs never
 * share one, however their characters fall; and the aliases of Basic headers in front of it. The
 * collaborators are plain stand-ins: what is under test is the cache inside the verifier, not
 * Redis or the hash.
 */

const EMAIL = 'member@example.com';
const PASSWORD = 'pass\0word-with-a-nul';
const account = {
  userId: 'a3f1c2d4-0000-4000-8000-000000000001',
  email: EMAIL,
  disabled: false,
  securityStamp: 'stamp-1',
} as unknown as Account;

/** What the stand-in throttle does when a real verification begins. */
type ThrottleAnswer = 'allow' | 'refuse';

async function verifierKnowing(throttleAnswer: ThrottleAnswer = 'allow'): Promise<CredentialVerifier> {
  const accounts = {
    userIds: {
      idFor: (email: string) => Promise.resolve(email === EMAIL ? account.userId : `id-of-${email}`),
    },
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
    begin: () =>
      throttleAnswer === 'allow'
        ? Promise.resolve({ succeeded: done, failed: done, abandoned: done })
        : Promise.reject(new Error('throttled')),
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

function basic(email: string, password: string, scheme = 'Basic'): string {
  return `${scheme} ${Buffer.from(`${email}:${password}`, 'utf8').toString('base64')}`;
}

/**
 * The header with the case of one base64 letter of the password's part changed: other bytes, so
 * other credentials (or none), that a key which ignored the case would take for the original.
 */
function withOneLetterFlipped(header: string): string {
  const at = [...header].findLastIndex((character) => /[A-Za-z]/.test(character));
  const letter = header.charAt(at);
  const flipped = letter === letter.toUpperCase() ? letter.toLowerCase() : letter.toUpperCase();
  return `${header.slice(0, at)}${flipped}${header.slice(at + 1)}`;
}

/** The verifier's header aliases, read for the one rule no answer shows: what the process keeps. */
function headerAliasesOf(verifier: CredentialVerifier): LRUCache<string, string> {
  return (verifier as unknown as { headerAliases: LRUCache<string, string> }).headerAliases;
}

describe('the aliases of Basic headers', () => {
  const header = basic(EMAIL, PASSWORD);

  afterEach(() => jest.restoreAllMocks());

  it('When a header was verified, then that header is recalled without being parsed again, and a header with the same credentials written otherwise is parsed and recalled', async () => {
    const verifier = await verifierKnowing();
    expect(await verifier.verifyBasic(header, '127.0.0.1')).toBe(account);

    const parse = jest.spyOn(basicHeader, 'parseBasicCredentials');
    expect(await verifier.recallBasic(header)).toBe(account);
    expect(parse).not.toHaveBeenCalled();
    // The same credentials in another header: the strict parse runs, then the entry is found.
    expect(await verifier.recallBasic(basic(EMAIL.toUpperCase(), PASSWORD, 'basic'))).toBe(account);
    expect(parse).toHaveBeenCalledTimes(1);
  });

  it('When a header was never verified, then it is not recalled, however near a verified one it is written', async () => {
    const verifier = await verifierKnowing();
    expect(await verifier.verifyBasic(header, '127.0.0.1')).toBe(account);

    const verified = basicHeader.parseBasicCredentials(header);
    const near = [
      withOneLetterFlipped(header),
      header.slice(0, -1),
      `${header}AA==`,
      basic(EMAIL, `${PASSWORD}!`),
    ];
    for (const text of near) {
      // Each carries other credentials, or none: otherwise this test would prove nothing.
      expect(basicHeader.parseBasicCredentials(text)).not.toEqual(verified);
      expect(verifier.recallBasic(text)).toBeUndefined();
    }
  });

  it('When a check fails (a wrong password, a header that does not parse, a throttled attempt), then neither the credentials nor the header are recalled afterwards', async () => {
    const verifier = await verifierKnowing();
    const wrong = basic(EMAIL, 'not-the-password');
    expect(await verifier.verifyBasic(wrong, '127.0.0.1')).toBeNull();
    expect(verifier.recallBasic(wrong)).toBeUndefined();
    expect(verifier.recall(EMAIL, 'not-the-password')).toBeUndefined();
    expect(await verifier.verifyBasic('Basic !!!!', '127.0.0.1')).toBeNull();

    const throttled = await verifierKnowing('refuse');
    await expect(throttled.verifyBasic(header, '127.0.0.1')).rejects.toThrow('throttled');
    expect(throttled.recallBasic(header)).toBeUndefined();
    expect(headerAliasesOf(verifier).size + headerAliasesOf(throttled).size).toBe(0);
  });

  it('When headers are remembered, then the process keeps neither their text nor the credentials, and another process keys them differently', async () => {
    const [one, another] = [await verifierKnowing(), await verifierKnowing()];
    const headers = [header, basic(EMAIL.toUpperCase(), PASSWORD)];
    for (const verifier of [one, another]) {
      for (const each of headers) expect(await verifier.verifyBasic(each, '127.0.0.1')).toBe(account);
    }

    const kept = (verifier: CredentialVerifier) => [...headerAliasesOf(verifier).entries()].flat();
    expect(kept(one)).toHaveLength(4);
    for (const text of kept(one)) {
      for (const secret of [...headers, ...headers.map((each) => each.slice('Basic '.length)), PASSWORD])
        expect(text).not.toContain(secret);
    }
    // Keyed by a per-process secret: the same header has another key in another process.
    expect(new Set([...headerAliasesOf(one).keys(), ...headerAliasesOf(another).keys()]).size).toBe(4);
  });
});
