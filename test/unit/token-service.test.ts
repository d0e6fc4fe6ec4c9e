import { TokenService } from '../../ingress/auth/token-service';
import type { Account } from '../../shared/accounts/account';
import { loadConfig } from '../../shared/config';
import { createKeys } from '../../shared/redis/keys';

const account = {
  userId: '11111111-1111-4111-8111-111111111111',
  email: 'member@example.com',
  roles: ['Member'],
} as unknown as Account;

describe('TokenService', () => {
  afterEach(() => jest.useRealTimers());

  it('refuses a token once it expires, even after it was verified (and remembered) while valid', async () => {
    jest.useFakeTimers({ now: new Date('2026-05-01T12:00:00Z') });
    const config = loadConfig({
      JWT_SECRET: 'a-token-service-test-secret-of-32-chars!',
      JWT_TTL_SECONDS: '60',
    });
    // With JWT_SECRET set, Redis is never asked for a generated one.
    const tokens = await TokenService.create(config, undefined as never, createKeys('unit:'));
    const { access_token: token } = tokens.issue(account);

    expect(tokens.verify(token)?.sub).toBe(account.userId);
    expect(tokens.verify(token)?.sub).toBe(account.userId); // the remembered verification
    jest.setSystemTime(new Date('2026-05-01T12:01:01Z'));
    expect(tokens.verify(token)).toBeNull();
  });

  it('remembers nothing of a token that fails verification', async () => {
    const config = loadConfig({ JWT_SECRET: 'a-token-service-test-secret-of-32-chars!' });
    const tokens = await TokenService.create(config, undefined as never, createKeys('unit:'));
    const { access_token: token } = tokens.issue(account);
    const tampered = `${token.slice(0, -2)}xx`;
    expect(tokens.verify(tampered)).toBeNull();
    expect(tokens.verify(tampered)).toBeNull();
    expect(tokens.verify(token)?.sub).toBe(account.userId);
  });
});

describe('TokenService during a JWT_SECRET rotation', () => {
  const OLD = 'the-secret-before-the-rotation-of-32-chars';
  const NEW = 'the-secret-after-the-rotation-of-32-chars!';
  const serviceWith = (env: Record<string, string>) =>
    TokenService.create(loadConfig(env), undefined as never, createKeys('unit:'));

  afterEach(() => jest.useRealTimers());

  it('accepts a token signed with JWT_PREVIOUS_SECRET, so rotating signs nobody out', async () => {
    const before = await serviceWith({ JWT_SECRET: OLD });
    const after = await serviceWith({ JWT_SECRET: NEW, JWT_PREVIOUS_SECRET: OLD });
    const { access_token: oldToken } = before.issue(account);
    expect(after.verify(oldToken)?.sub).toBe(account.userId);
    // New tokens are signed with the new secret only: the old configuration refuses them.
    expect(before.verify(after.issue(account).access_token)).toBeNull();
  });

  it('accepts new-secret tokens on replicas still signing with the old one when they list it as previous', async () => {
    // Step 1 of a rolling rotation: every replica learns the new secret before any signs with it.
    const learning = await serviceWith({ JWT_SECRET: OLD, JWT_PREVIOUS_SECRET: NEW });
    const after = await serviceWith({ JWT_SECRET: NEW, JWT_PREVIOUS_SECRET: OLD });
    expect(learning.verify(after.issue(account).access_token)?.sub).toBe(account.userId);
  });

  it('refuses a previous-secret token once JWT_PREVIOUS_SECRET_UNTIL has passed, even one verified before', async () => {
    jest.useFakeTimers({ now: new Date('2026-05-01T12:00:00Z') });
    const before = await serviceWith({ JWT_SECRET: OLD });
    const after = await serviceWith({
      JWT_SECRET: NEW,
      JWT_PREVIOUS_SECRET: OLD,
      JWT_PREVIOUS_SECRET_UNTIL: '2026-05-01T12:10:00Z',
    });
    const { access_token: oldToken } = before.issue(account);
    expect(after.verify(oldToken)?.sub).toBe(account.userId);
    jest.setSystemTime(new Date('2026-05-01T12:10:00Z'));
    expect(after.verify(oldToken)).toBeNull();
    expect(after.verify(after.issue(account).access_token)?.sub).toBe(account.userId);
  });

  it('refuses a token signed with a secret that is neither current nor previous', async () => {
    const stranger = await serviceWith({ JWT_SECRET: 'a-secret-nobody-configured-of-32-chars!!' });
    const after = await serviceWith({ JWT_SECRET: NEW, JWT_PREVIOUS_SECRET: OLD });
    expect(after.verify(stranger.issue(account).access_token)).toBeNull();
  });

  it('refuses an expired previous-secret token', async () => {
    jest.useFakeTimers({ now: new Date('2026-05-01T12:00:00Z') });
    const before = await serviceWith({ JWT_SECRET: OLD, JWT_TTL_SECONDS: '60' });
    const after = await serviceWith({ JWT_SECRET: NEW, JWT_PREVIOUS_SECRET: OLD });
    const { access_token: oldToken } = before.issue(account);
    jest.setSystemTime(new Date('2026-05-01T12:01:01Z'));
    expect(after.verify(oldToken)).toBeNull();
  });
});
