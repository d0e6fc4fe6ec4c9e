import { ConfigError, loadConfig } from '../../shared/config';

describe('loadConfig', () => {
  it('When nothing is set, then every setting has its documented default', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({
      port: 8080,
      redisUrl: 'redis://127.0.0.1:6379',
      logLevel: 'info',
      modules: ['sport-core'],
      bodyLimitBytes: 1024 * 1024,
      importBodyLimitBytes: 16 * 1024 * 1024,
      adminEmail: undefined,
      jwtSecret: undefined,
    });
  });

  it('When PORT is not a number, then loading fails with a message naming PORT', () => {
    expect(() => loadConfig({ PORT: 'eighty' })).toThrow(ConfigError);
    expect(() => loadConfig({ PORT: 'eighty' })).toThrow(/PORT: must be a number/);
  });

  it('When several variables are bad, then the message names each of them', () => {
    const load = () => loadConfig({ PORT: '70000', REDIS_URL: 'http://x', LOG_LEVEL: 'loud' });
    expect(load).toThrow(/PORT/);
    expect(load).toThrow(/REDIS_URL: .*expected a redis:\/\/ or rediss:\/\/ URL/);
    expect(load).toThrow(/LOG_LEVEL/);
  });

  it('When ADMIN_EMAIL is set without ADMIN_PASSWORD, then loading fails saying they go together', () => {
    expect(() => loadConfig({ ADMIN_EMAIL: 'admin@example.com' })).toThrow(
      /ADMIN_EMAIL and ADMIN_PASSWORD must be set together/,
    );
  });

  it('When JWT_SECRET is too short, then loading fails saying what it expects', () => {
    expect(() => loadConfig({ JWT_SECRET: 'short' })).toThrow(/JWT_SECRET: .*at least 32 characters/);
  });

  it('When MODULES names an unknown module, then loading fails listing the known ones', () => {
    expect(() => loadConfig({ MODULES: 'sport-core,chess' })).toThrow(/MODULES: .*sport-core/);
  });

  it('When MODULES is none, then no module is enabled', () => {
    expect(loadConfig({ MODULES: 'none' }).modules).toEqual([]);
    expect(loadConfig({ MODULES: ' sport-core , ' }).modules).toEqual(['sport-core']);
    expect(loadConfig({ MODULES: '' }).modules).toEqual(['sport-core']); // empty means unset
  });

  it('When BODY_LIMIT carries a unit, then it is converted to bytes', () => {
    expect(loadConfig({ BODY_LIMIT: '512kb' }).bodyLimitBytes).toBe(512 * 1024);
    expect(loadConfig({ BODY_LIMIT: '2048' }).bodyLimitBytes).toBe(2048);
    expect(() => loadConfig({ BODY_LIMIT: 'lots' })).toThrow(/BODY_LIMIT/);
  });

  it('When loaded, then the configuration cannot be changed', () => {
    const config = loadConfig({});
    expect(Object.isFrozen(config)).toBe(true);
    expect(Object.isFrozen(config.modules)).toBe(true);
  });
});
