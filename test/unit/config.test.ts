import { ConfigError, isLoopbackHost, loadConfig, ROTATION_NEEDS_DATA_KEY } from '../../shared/config';
import { SETTINGS } from '../../shared/config/settings';

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

  it('When no HTTP_*_TIMEOUT_MS is set, then a request has 30 s, its headers 10 s, an idle keep-alive connection 5 s', () => {
    expect(loadConfig({}).http).toEqual({
      requestTimeoutMs: 30_000,
      headersTimeoutMs: 10_000,
      keepAliveTimeoutMs: 5_000,
    });
    expect(
      loadConfig({
        HTTP_REQUEST_TIMEOUT_MS: '2000',
        HTTP_HEADERS_TIMEOUT_MS: '500',
        HTTP_KEEP_ALIVE_TIMEOUT_MS: '300',
      }).http,
    ).toEqual({ requestTimeoutMs: 2_000, headersTimeoutMs: 500, keepAliveTimeoutMs: 300 });
  });

  it('When the headers timeout is longer than the request timeout, or a timeout is 0, then loading fails naming it', () => {
    expect(() => loadConfig({ HTTP_REQUEST_TIMEOUT_MS: '1000', HTTP_HEADERS_TIMEOUT_MS: '2000' })).toThrow(
      /HTTP_HEADERS_TIMEOUT_MS: .*expected .*at most HTTP_REQUEST_TIMEOUT_MS/,
    );
    expect(() => loadConfig({ HTTP_KEEP_ALIVE_TIMEOUT_MS: '0' })).toThrow(/HTTP_KEEP_ALIVE_TIMEOUT_MS/);
    expect(() => loadConfig({ HTTP_REQUEST_TIMEOUT_MS: '0' })).toThrow(/HTTP_REQUEST_TIMEOUT_MS/);
  });

  it('When WRITE_DURABILITY is unset, then it is local with a 500 ms wait; replicated is taken, and an unknown mode or a wait the 2 s command timeout would cut is refused naming it', () => {
    expect(loadConfig({}).writeDurability).toEqual({ mode: 'local', timeoutMs: 500 });
    expect(
      loadConfig({ WRITE_DURABILITY: 'replicated', WRITE_DURABILITY_TIMEOUT_MS: '1500' }).writeDurability,
    ).toEqual({ mode: 'replicated', timeoutMs: 1500 });
    expect(() => loadConfig({ WRITE_DURABILITY: 'quorum' })).toThrow(
      /WRITE_DURABILITY: .*"local" or "replicated"/,
    );
    expect(() => loadConfig({ WRITE_DURABILITY_TIMEOUT_MS: '2000' })).toThrow(/WRITE_DURABILITY_TIMEOUT_MS/);
  });

  it("When no AUTH_* is set, then failures count 10 per account and address, 100 per address, and 16 verifications may wait (4 x libuv's 4 threads)", () => {
    expect(loadConfig({}).auth).toEqual({
      cacheTtlSeconds: 60,
      maxFailuresPerAccountAndAddress: 10,
      maxFailuresPerAddress: 100,
      failureWindowSeconds: 900,
      accountWarningFailures: 50,
      maxPendingVerifications: 16,
    });
  });

  it('When UV_THREADPOOL_SIZE sizes the hashing pool, then the default bound on waiting verifications is 4 x its threads', () => {
    expect(loadConfig({ UV_THREADPOOL_SIZE: '6' }).auth.maxPendingVerifications).toBe(24);
    expect(loadConfig({ UV_THREADPOOL_SIZE: '5000' }).auth.maxPendingVerifications).toBe(4 * 1024);
    expect(
      loadConfig({ UV_THREADPOOL_SIZE: '6', AUTH_MAX_PENDING_VERIFICATIONS: '3' }).auth
        .maxPendingVerifications,
    ).toBe(3);
    expect(() => loadConfig({ AUTH_MAX_PENDING_VERIFICATIONS: '0' })).toThrow(
      /AUTH_MAX_PENDING_VERIFICATIONS/,
    );
  });

  it('When only the old AUTH_MAX_FAILURES_PER_ACCOUNT is set, then it is the limit per account and address; the new name wins over it', () => {
    expect(loadConfig({ AUTH_MAX_FAILURES_PER_ACCOUNT: '7' }).auth.maxFailuresPerAccountAndAddress).toBe(7);
    expect(
      loadConfig({ AUTH_MAX_FAILURES_PER_ACCOUNT: '7', AUTH_MAX_FAILURES_PER_ACCOUNT_AND_ADDRESS: '4' }).auth
        .maxFailuresPerAccountAndAddress,
    ).toBe(4);
  });

  it('When LOG_RETENTION is unset, forever, or a duration, then the log is kept forever (null) or for that many ms; anything else names it', () => {
    expect(loadConfig({}).logRetentionMs).toBeNull();
    expect(loadConfig({ LOG_RETENTION: 'forever' }).logRetentionMs).toBeNull();
    expect(loadConfig({ LOG_RETENTION: '30d' }).logRetentionMs).toBe(30 * 86_400_000);
    expect(loadConfig({ LOG_RETENTION: '12h' }).logRetentionMs).toBe(12 * 3_600_000);
    expect(() => loadConfig({ LOG_RETENTION: 'a month' })).toThrow(/LOG_RETENTION/);
    // A bare number would be milliseconds: "30" meant as days would trim everything at once.
    expect(() => loadConfig({ LOG_RETENTION: '30' })).toThrow(/LOG_RETENTION/);
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

  it('When DATA_ENCRYPTION_KEY is unset, then it is undefined; shorter than 32 characters, loading fails naming it', () => {
    expect(loadConfig({}).dataEncryptionKey).toBeUndefined();
    const key = 'a-data-encryption-key-of-32-chars-or-more';
    expect(loadConfig({ DATA_ENCRYPTION_KEY: key }).dataEncryptionKey).toBe(key);
    expect(() => loadConfig({ DATA_ENCRYPTION_KEY: 'short' })).toThrow(
      /DATA_ENCRYPTION_KEY: .*at least 32 characters/,
    );
  });

  it('When MAX_PENDING_IMPORTS_PER_USER is unset, then 10; 0 or a fraction is refused', () => {
    expect(loadConfig({}).imports.maxPendingPerUser).toBe(10);
    expect(loadConfig({ MAX_PENDING_IMPORTS_PER_USER: '3' }).imports.maxPendingPerUser).toBe(3);
    expect(() => loadConfig({ MAX_PENDING_IMPORTS_PER_USER: '0' })).toThrow(/MAX_PENDING_IMPORTS_PER_USER/);
    expect(() => loadConfig({ MAX_PENDING_IMPORTS_PER_USER: '1.5' })).toThrow(/MAX_PENDING_IMPORTS_PER_USER/);
  });

  it('When no METRICS_* is set, then no metrics are exposed: no token, no listener', () => {
    expect(loadConfig({}).metrics).toEqual({ token: undefined, port: 0, host: '127.0.0.1' });
  });

  it('When METRICS_HOST is unset, then the metrics listener binds loopback; set, it binds what it says', () => {
    expect(loadConfig({ METRICS_PORT: '9464' }).metrics.host).toBe('127.0.0.1');
    expect(loadConfig({ METRICS_PORT: '9464', METRICS_HOST: '0.0.0.0' }).metrics.host).toBe('0.0.0.0');
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

  it('When MAX_TEAMS_PER_OWNER is unset, then an owner may hold 100 teams; a set value is taken, 0 is refused', () => {
    expect(loadConfig({}).teams.maxPerOwner).toBe(100);
    expect(loadConfig({ MAX_TEAMS_PER_OWNER: '3' }).teams.maxPerOwner).toBe(3);
    expect(() => loadConfig({ MAX_TEAMS_PER_OWNER: '0' })).toThrow(/MAX_TEAMS_PER_OWNER/);
  });

  describe('development stays on the developer machine (issue 29)', () => {
    const secret = 's'.repeat(32);
    const BEYOND_LOOPBACK =
      /^Invalid configuration: HOST=0\.0\.0\.0 is not a loopback address: a development start that listens beyond this machine has no sandbox administrator and needs JWT_SECRET \(at least 32 characters, e\.g\. `openssl rand -base64 48`\); leave HOST unset to listen on 127\.0\.0\.1 only$/;

    it.each([
      [{}, '127.0.0.1', true],
      [{ NODE_ENV: 'development' }, '127.0.0.1', true],
      [{ NODE_ENV: 'test' }, '127.0.0.1', true],
      [{ NODE_ENV: 'production', JWT_SECRET: secret }, '0.0.0.0', false],
    ])(
      'When HOST is unset and the environment is %j, then the ingress binds %s (local development: %s)',
      (env, host, local) => {
        const config = loadConfig(env);
        expect(config.host).toBe(host);
        expect(config.localDevelopment).toBe(local);
      },
    );

    it.each([
      ['127.0.0.1', true],
      ['127.5.6.7', true],
      ['::1', true],
      ['0:0:0:0:0:0:0:1', true],
      ['::ffff:127.0.0.1', true],
      ['localhost', true],
      ['0.0.0.0', false],
      ['::', false],
      ['192.0.2.2', false],
      ['::ffff:10.0.0.1', false],
      ['dev-box.example.com', false],
      ['localhost.example.com', false],
    ])('When a development start sets HOST=%s, then it is local development: %s', (host, local) => {
      const config = loadConfig({ NODE_ENV: 'development', HOST: host, JWT_SECRET: secret });
      expect(config.host).toBe(host);
      expect(config.localDevelopment).toBe(local);
      expect(isLoopbackHost(host)).toBe(local);
    });

    it('When NODE_ENV=production, then no HOST makes a start local development, loopback included', () => {
      expect(
        loadConfig({ NODE_ENV: 'production', HOST: '127.0.0.1', JWT_SECRET: secret }).localDevelopment,
      ).toBe(false);
    });

    it.each([
      [{}, true],
      [{ NODE_ENV: 'test' }, true],
      [{ NODE_ENV: 'development', HOST: '::1' }, true],
      [{ NODE_ENV: 'development', HOST: 'localhost' }, true],
      [{ NODE_ENV: 'development', HOST: '0.0.0.0', JWT_SECRET: secret }, false],
      [{ NODE_ENV: 'development', HOST: '192.0.2.2', JWT_SECRET: secret }, false],
      [{ NODE_ENV: 'production', JWT_SECRET: secret }, false],
      [{ NODE_ENV: 'production', HOST: '127.0.0.1', JWT_SECRET: secret }, false],
    ])(
      'When WEBHOOK_ALLOW_PRIVATE_TARGETS is unset and the ingress environment is %j, then private targets are allowed: %s',
      (env, allowed) => {
        expect(loadConfig(env, 'ingress').webhooks.allowPrivateTargets).toBe(allowed);
      },
    );

    it.each([
      [{}],
      [{ NODE_ENV: 'development' }],
      [{ NODE_ENV: 'test' }],
      [{ NODE_ENV: 'development', HOST: '127.0.0.1' }],
      [{ NODE_ENV: 'production', JWT_SECRET: secret }],
    ])(
      'When WEBHOOK_ALLOW_PRIVATE_TARGETS is unset and a worker or a script loads %j, then private targets are refused: it binds nothing, so HOST proves nothing',
      (env) => {
        expect(loadConfig(env, 'worker').webhooks.allowPrivateTargets).toBe(false);
        expect(loadConfig(env, 'script').webhooks.allowPrivateTargets).toBe(false);
        expect(loadConfig(env).webhooks.allowPrivateTargets).toBe(false);
        // The rest of local development still follows NODE_ENV and HOST in every process.
        expect(loadConfig(env, 'worker').localDevelopment).toBe(loadConfig(env, 'ingress').localDevelopment);
      },
    );

    it('When WEBHOOK_ALLOW_PRIVATE_TARGETS is set, then it wins over the derived default either way, in every process', () => {
      for (const role of ['ingress', 'worker', 'script'] as const) {
        expect(
          loadConfig({ WEBHOOK_ALLOW_PRIVATE_TARGETS: 'false' }, role).webhooks.allowPrivateTargets,
        ).toBe(false);
        expect(loadConfig({ WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' }, role).webhooks.allowPrivateTargets).toBe(
          true,
        );
        expect(
          loadConfig(
            { NODE_ENV: 'production', JWT_SECRET: secret, WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' },
            role,
          ).webhooks.allowPrivateTargets,
        ).toBe(true);
      }
    });

    it('When a development start is asked to listen on 0.0.0.0 without JWT_SECRET, then loading fails with one line saying it has no sandbox and needs JWT_SECRET', () => {
      expect(() => loadConfig({ HOST: '0.0.0.0' })).toThrow(ConfigError);
      expect(() => loadConfig({ NODE_ENV: 'development', HOST: '0.0.0.0' })).toThrow(BEYOND_LOOPBACK);
      expect(() => loadConfig({ NODE_ENV: 'test', HOST: '0.0.0.0', JWT_SECRET: '' })).toThrow(
        BEYOND_LOOPBACK,
      );
      expect(() => loadConfig({ HOST: '192.0.2.2' })).toThrow(
        /^Invalid configuration: HOST=192\.0\.2\.2 is not a loopback/,
      );
    });

    it('When a development start listens beyond loopback with JWT_SECRET, or on loopback without it, then it loads', () => {
      expect(loadConfig({ HOST: '0.0.0.0', JWT_SECRET: secret }).jwtSecret).toBe(secret);
      expect(loadConfig({ HOST: '127.0.0.1' }).jwtSecret).toBeUndefined();
      expect(loadConfig({ HOST: '' }).host).toBe('127.0.0.1');
    });
  });

  describe('with NODE_ENV=production', () => {
    const secret = 's'.repeat(32);
    const previous = 'p'.repeat(32);

    it('When JWT_SECRET is unset, then loading fails with one line saying production needs it', () => {
      expect(() => loadConfig({ NODE_ENV: 'production' })).toThrow(ConfigError);
      expect(() => loadConfig({ NODE_ENV: 'production', JWT_SECRET: '' })).toThrow(
        /^Invalid configuration: JWT_SECRET must be set when NODE_ENV=production \(at least 32 characters.*\); a secret generated and kept in Redis is for development only$/,
      );
    });

    it('When JWT_SECRET is set, then production starts; development and test may still go without it', () => {
      expect(loadConfig({ NODE_ENV: 'production', JWT_SECRET: secret }).jwtSecret).toBe(secret);
      expect(loadConfig({ NODE_ENV: 'development' }).jwtSecret).toBeUndefined();
      expect(loadConfig({ NODE_ENV: 'test' }).jwtSecret).toBeUndefined();
      expect(loadConfig({}).jwtSecret).toBeUndefined();
    });

    it('When JWT_SECRET is too short, then the message is the usual one, not the production one', () => {
      expect(() => loadConfig({ NODE_ENV: 'production', JWT_SECRET: 'short' })).toThrow(
        /^Invalid configuration: JWT_SECRET: length must be at least 32 characters long \(expected at least 32 characters\)$/,
      );
    });

    it('When JWT_PREVIOUS_SECRET is set without JWT_PREVIOUS_SECRET_UNTIL, then loading fails; with it, it loads', () => {
      expect(() =>
        loadConfig({ NODE_ENV: 'production', JWT_SECRET: secret, JWT_PREVIOUS_SECRET: previous }),
      ).toThrow(
        /^Invalid configuration: JWT_PREVIOUS_SECRET needs JWT_PREVIOUS_SECRET_UNTIL when NODE_ENV=production/,
      );
      expect(
        loadConfig({
          NODE_ENV: 'production',
          JWT_SECRET: secret,
          JWT_PREVIOUS_SECRET: previous,
          JWT_PREVIOUS_SECRET_UNTIL: '2026-12-01T12:00:00Z',
          DATA_ENCRYPTION_KEY: previous,
        }).jwtPreviousSecret,
      ).toEqual({ secret: previous, until: new Date('2026-12-01T12:00:00Z') });
      // Outside production an open-ended grace period stays allowed (a developer's rotation drill).
      expect(loadConfig({ JWT_SECRET: secret, JWT_PREVIOUS_SECRET: previous }).jwtPreviousSecret).toEqual({
        secret: previous,
        until: undefined,
      });
    });

    it('When JWT_PREVIOUS_SECRET is set without DATA_ENCRYPTION_KEY in production, then loading fails saying which secret to set it to; outside production it loads', () => {
      const rotating = {
        JWT_SECRET: secret,
        JWT_PREVIOUS_SECRET: previous,
        JWT_PREVIOUS_SECRET_UNTIL: '2026-12-01T12:00:00Z',
      };
      expect(() => loadConfig({ NODE_ENV: 'production', ...rotating })).toThrow(
        `Invalid configuration: ${ROTATION_NEEDS_DATA_KEY}`,
      );
      expect(ROTATION_NEEDS_DATA_KEY).toContain('to the JWT_SECRET in use before this rotation');
      expect(
        loadConfig({ NODE_ENV: 'production', ...rotating, DATA_ENCRYPTION_KEY: secret }).dataEncryptionKey,
      ).toBe(secret);
      expect(loadConfig(rotating).jwtPreviousSecret?.secret).toBe(previous);
    });

    it('When several settings are bad, then the production rules are named beside the others', () => {
      const load = () => loadConfig({ NODE_ENV: 'production', PORT: 'eighty' });
      expect(load).toThrow(/PORT: must be a number.*; JWT_SECRET must be set when NODE_ENV=production/);
    });
  });

  describe('REDIS_PASSWORD', () => {
    const password = 'a pässword with "quotes" and spaces';

    it('When it is set with a cluster, then every cluster connection gets it', () => {
      expect(loadConfig({ REDIS_CLUSTER_NODES: '10.0.0.1:7000', REDIS_PASSWORD: password }).redis).toEqual({
        kind: 'cluster',
        nodes: [{ host: '10.0.0.1', port: 7000 }],
        password,
      });
    });

    it('When it is set with a REDIS_URL that carries no password, then the connection gets it', () => {
      expect(loadConfig({ REDIS_URL: 'redis://redis:6379', REDIS_PASSWORD: password }).redis).toEqual({
        kind: 'standalone',
        url: 'redis://redis:6379',
        password,
      });
    });

    it("When REDIS_URL carries a password of its own, then the URL's is the one used", () => {
      const redis = loadConfig({ REDIS_URL: 'redis://:from-url@redis:6379', REDIS_PASSWORD: password }).redis;
      expect(redis).toEqual({ kind: 'standalone', url: 'redis://:from-url@redis:6379' });
      expect(redis).not.toHaveProperty('password');
    });

    it('When it is unset or empty, then no password is sent', () => {
      expect(loadConfig({}).redis).not.toHaveProperty('password');
      expect(loadConfig({ REDIS_PASSWORD: '' }).redis).not.toHaveProperty('password');
    });

    it('When it is too long, then the message names the variable but never shows the value', () => {
      const tooLong = 'x'.repeat(1025);
      expect(() => loadConfig({ REDIS_PASSWORD: tooLong })).toThrow(/REDIS_PASSWORD: length must be/);
      try {
        loadConfig({ REDIS_PASSWORD: tooLong });
      } catch (error) {
        expect((error as Error).message).not.toContain('xxxxxxxx');
      }
    });
  });

  it('When loaded, then the configuration cannot be changed', () => {
    const config = loadConfig({});
    expect(Object.isFrozen(config)).toBe(true);
    expect(Object.isFrozen(config.modules)).toBe(true);
    const cluster = loadConfig({ REDIS_CLUSTER_NODES: '10.0.0.1:7000' }).redis;
    expect(Object.isFrozen(cluster)).toBe(true);
    expect(cluster.kind === 'cluster' && Object.isFrozen(cluster.nodes[0])).toBe(true);
  });

  it('When any setting holds a value it refuses, then the start-up error names the variable but never quotes the value', () => {
    const secret = 'never-log-me-4f7c2a9e with blanks \u0001';
    // HOST is an address, never a secret: its error names it to say why it is refused.
    const quoted: string[] = [];
    for (const { env } of SETTINGS.filter((setting) => setting.env !== 'HOST')) {
      try {
        loadConfig({ [env]: secret, [`${env}_UNTIL`]: '2026-01-01T00:00:00Z' });
      } catch (error) {
        const message = error instanceof Error ? error.message : String(error);
        if (message.includes('never-log-me')) quoted.push(`${env}: ${message}`);
      }
    }
    expect(quoted).toEqual([]);
  });
});
