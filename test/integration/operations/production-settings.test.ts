import { networkInterfaces } from 'node:os';

import { freePort } from '../../../scripts/lib/free-port';
import { testRedisEnv, uniquePrefix } from '../../helpers/app-fixture';
import { exchange } from '../../helpers/http-client';
import { logLines } from '../../helpers/import-workers';
import {
  killAll,
  type ServiceProcess,
  startIngressProcess,
  startServiceProcess,
} from '../../helpers/processes';

const SECRET = 'production-settings-test-secret-0123456789';

/**
 * What a production process refuses at start-up, and where its metrics listener binds by default,
 * checked on the real entry points (exit code, stderr line, listening address).
 */
describe('production settings', () => {
  const started: ServiceProcess[] = [];
  const track = (service: ServiceProcess) => {
    started.push(service);
    return service;
  };
  // Blank, so nothing from the caller's shell decides the outcome.
  const env = (extra: Record<string, string>) => ({
    ...testRedisEnv(),
    REDIS_KEY_PREFIX: uniquePrefix(),
    PORT: '0',
    JWT_SECRET: '',
    JWT_PREVIOUS_SECRET: '',
    JWT_PREVIOUS_SECRET_UNTIL: '',
    METRICS_PORT: '',
    METRICS_HOST: '',
    ...extra,
  });

  afterEach(async () => {
    await killAll(...started.splice(0));
  });

  it.each([
    ['ingress/main.ts', 'ingress'],
    ['workers/main.ts', 'worker'],
  ])(
    'When NODE_ENV=production and JWT_SECRET is unset, then %s exits 78 with one line saying it is required',
    async (entry, role) => {
      const service = track(startServiceProcess(entry, env({ NODE_ENV: 'production' })));
      expect(await service.exited).toBe(78);
      expect(service.stderr()).toBe(
        `[${role}] Invalid configuration: JWT_SECRET must be set when NODE_ENV=production (at least 32 characters, e.g. \`openssl rand -base64 48\`); a secret generated and kept in Redis is for development only\n`,
      );
      expect(service.stdout()).toBe('');
    },
  );

  it('When NODE_ENV=production and JWT_SECRET is unset, then `npm start` exits 78 before starting anything', async () => {
    const supervisor = track(startServiceProcess('scripts/start-all.ts', env({ NODE_ENV: 'production' })));
    expect(await supervisor.exited).toBe(78);
    expect(supervisor.stderr()).toMatch(
      /^\[start\] Invalid configuration: JWT_SECRET must be set when NODE_ENV=production .*\n$/,
    );
    expect(supervisor.stdout()).toBe('');
  });

  it('When NODE_ENV=production and JWT_PREVIOUS_SECRET has no JWT_PREVIOUS_SECRET_UNTIL, then the ingress exits 78 saying so', async () => {
    const service = track(
      startServiceProcess(
        'ingress/main.ts',
        env({ NODE_ENV: 'production', JWT_SECRET: SECRET, JWT_PREVIOUS_SECRET: `previous-${SECRET}` }),
      ),
    );
    expect(await service.exited).toBe(78);
    expect(service.stderr()).toMatch(
      /^\[ingress\] Invalid configuration: JWT_PREVIOUS_SECRET needs JWT_PREVIOUS_SECRET_UNTIL when NODE_ENV=production .*\n$/,
    );
  });

  it('When NODE_ENV=production and JWT_SECRET is set, then the ingress starts and serves', async () => {
    const ingress = await startIngressProcess(env({ NODE_ENV: 'production', JWT_SECRET: SECRET }));
    track(ingress.process);
    expect(await exchange(ingress.baseUrl, 'GET', '/readyz')).toMatchObject({ ok: true, status: 200 });
  }, 60_000);

  it('When METRICS_PORT is set and METRICS_HOST is not, then the metrics listener binds loopback only', async () => {
    const metricsPort = await freePort();
    const ingress = await startIngressProcess(env({ METRICS_PORT: String(metricsPort) }));
    track(ingress.process);

    const [listening] = logLines(ingress.process.stdout(), 'metrics listening');
    expect(listening).toMatchObject({ port: metricsPort, host: '127.0.0.1' });
    expect(await exchange(`http://127.0.0.1:${metricsPort}`, 'GET', '/metrics')).toMatchObject({
      ok: true,
      status: 200,
    });
    // Any address of this machine that is not loopback: nothing listens there on that port.
    const external = Object.values(networkInterfaces())
      .flat()
      .find((address) => address && !address.internal && address.family === 'IPv4');
    if (external) {
      const reached = await exchange(`http://${external.address}:${metricsPort}`, 'GET', '/metrics', {
        timeoutMs: 2_000,
      });
      expect(reached.ok).toBe(false);
    }
  }, 60_000);
});
