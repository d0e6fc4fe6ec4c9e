import { ConfigError, loadConfig } from '../../shared/config';

describe('loadConfig', () => {
  it('When nothing is set, then every setting has its documented default', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({
      port: 8080,
      redis: { kind: 'standalone', url: 'redis://127.0.0.1:6379' },
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

  it('When TRUST_PROXY is unset, then no proxy is believed; a hop count or a list is taken as given', () => {
    expect(loadConfig({}).trustProxy).toBe(false);
    expect(loadConfig({ TRUST_PROXY: '1' }).trustProxy).toBe(1);
    expect(loadConfig({ TRUST_PROXY: 'loopback, 10.0.0.0/8, fd00::/8' }).trustProxy).toEqual([
      'loopback',
      '10.0.0.0/8',
      'fd00::/8',
    ]);
  });

  it('When TRUST_PROXY holds an address Express would reject, then loading fails naming TRUST_PROXY', () => {
    for (const bad of ['true', '999.0.0.1', '10.0.0.0/33', 'proxy.internal']) {
      expect(() => loadConfig({ TRUST_PROXY: bad })).toThrow(/TRUST_PROXY: .*hop count/);
    }
  });

  it('When JWT_PREVIOUS_SECRET is set, then it needs JWT_SECRET, must differ from it, and may end at an instant', () => {
    const previous = 'p'.repeat(32);
    const current = 'c'.repeat(32);
    expect(() => loadConfig({ JWT_PREVIOUS_SECRET: previous })).toThrow(
      /JWT_PREVIOUS_SECRET needs JWT_SECRET to be set/,
    );
    expect(() => loadConfig({ JWT_SECRET: current, JWT_PREVIOUS_SECRET: current })).toThrow(
      /JWT_PREVIOUS_SECRET: .*different from JWT_SECRET/,
    );
    expect(() =>
      loadConfig({ JWT_SECRET: current, JWT_PREVIOUS_SECRET: previous, JWT_PREVIOUS_SECRET_UNTIL: 'soon' }),
    ).toThrow(/JWT_PREVIOUS_SECRET_UNTIL: .*ISO 8601/);
    expect(
      loadConfig({
        JWT_SECRET: current,
        JWT_PREVIOUS_SECRET: previous,
        JWT_PREVIOUS_SECRET_UNTIL: '2026-12-01T12:00:00Z',
      }).jwtPreviousSecret,
    ).toEqual({ secret: previous, until: new Date('2026-12-01T12:00:00Z') });
  });

  it('When no METRICS_* is set, then no metrics are exposed: no token, no listener', () => {
    expect(loadConfig({}).metrics).toEqual({ token: undefined, port: 0, host: '0.0.0.0' });
  });

  it('When METRICS_TOKEN is short or METRICS_PORT is not a port, then loading fails naming them', () => {
    expect(() => loadConfig({ METRICS_TOKEN: 'short' })).toThrow(/METRICS_TOKEN: .*16-1024 visible ASCII/);
    expect(() => loadConfig({ METRICS_TOKEN: 'a token with spaces in it' })).toThrow(/METRICS_TOKEN/);
    expect(() => loadConfig({ METRICS_PORT: '70000' })).toThrow(/METRICS_PORT/);
    expect(loadConfig({ METRICS_PORT: '9464', METRICS_TOKEN: 'x'.repeat(16) }).metrics).toMatchObject({
      port: 9464,
      token: 'x'.repeat(16),
    });
  });

  it('When REDIS_CLUSTER_NODES lists nodes, then the service targets that cluster and REDIS_URL is not used', () => {
    const config = loadConfig({
      REDIS_URL: 'redis://elsewhere:6379',
      REDIS_CLUSTER_NODES: ' 10.0.0.1:7000, redis-b.internal:7001 ,[::1]:7002',
    });
    expect(config.redis).toEqual({
      kind: 'cluster',
      nodes: [
        { host: '10.0.0.1', port: 7000 },
        { host: 'redis-b.internal', port: 7001 },
        { host: '::1', port: 7002 },
      ],
    });
    expect(loadConfig({ REDIS_CLUSTER_NODES: '' }).redis.kind).toBe('standalone'); // empty means unset
  });

  it.each(['10.0.0.1', '10.0.0.1:70000', '10.0.0.1:7000,', 'redis://10.0.0.1:7000', '10.0.0.1:0', 'a:1;b:2'])(
    'When REDIS_CLUSTER_NODES is %j, then loading fails saying it expects host:port entries',
    (nodes) => {
      expect(() => loadConfig({ REDIS_CLUSTER_NODES: nodes })).toThrow(
        /^Invalid configuration: REDIS_CLUSTER_NODES: must be a comma-separated list of host:port \(expected Redis Cluster nodes/,
      );
    },
  );

  it('When loaded, then the configuration cannot be changed', () => {
    const config = loadConfig({});
    expect(Object.isFrozen(config)).toBe(true);
    expect(Object.isFrozen(config.modules)).toBe(true);
    const cluster = loadConfig({ REDIS_CLUSTER_NODES: '10.0.0.1:7000' }).redis;
    expect(Object.isFrozen(cluster)).toBe(true);
    expect(cluster.kind === 'cluster' && Object.isFrozen(cluster.nodes[0])).toBe(true);
  });
});
