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
