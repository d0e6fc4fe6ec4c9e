import request from 'supertest';

import { listen } from '../../../shared/http/server';
import { createTestApp, testRedisEnv, uniquePrefix } from '../../helpers/app-fixture';
import { startServiceProcess } from '../../helpers/processes';

describe('Graceful shutdown', () => {
  it('When the server closes during a request, then that request still completes and new ones are refused', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const subject = await createTestApp(
      {},
      {
        extraRoutes: (routes) =>
          routes.add('get', '/test/slow', async (_req, res) => {
            await gate;
            res.json({ finished: true });
          }),
      },
    );
    const running = await listen(subject.app, 0, '127.0.0.1');
    const base = `http://127.0.0.1:${running.port}`;

    const inFlight = fetch(`${base}/test/slow`);
    await new Promise((resolve) => setTimeout(resolve, 100));
    const closed = running.close(5_000);
    await expect(fetch(`${base}/healthz`)).rejects.toThrow();

    release();
    const res = await inFlight;
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ finished: true });
    await closed;
    await subject.close();
  });

  it('When the ingress process gets SIGTERM, then it drains and exits 0', async () => {
    const ingress = startServiceProcess('ingress/main.ts', {
      PORT: '0',
      HOST: '127.0.0.1',
      ...testRedisEnv(),
      REDIS_KEY_PREFIX: uniquePrefix(),
    });
    await ingress.waitForOutput('ingress listening');
    const port = (
      JSON.parse(
        ingress
          .stdout()
          .split('\n')
          .find((l) => l.includes('ingress listening')) ?? '{}',
      ) as { port: number }
    ).port;
    expect((await request(`http://127.0.0.1:${port}`).get('/healthz')).status).toBe(200);

    ingress.child.kill('SIGTERM');
    expect(await ingress.exited).toBe(0);
    expect(ingress.stdout()).toContain('"message":"stopped"');
  });

  it('When the worker process gets SIGTERM, then it closes and exits 0', async () => {
    const worker = startServiceProcess('workers/main.ts', {
      ...testRedisEnv(),
      REDIS_KEY_PREFIX: uniquePrefix(),
    });
    await worker.waitForOutput('worker ready');
    worker.child.kill('SIGTERM');
    expect(await worker.exited).toBe(0);
  });

  it('When a setting is invalid, then the process exits at once with one line naming the variable', async () => {
    const ingress = startServiceProcess('ingress/main.ts', { PORT: 'not-a-port', ...testRedisEnv() });
    expect(await ingress.exited).toBe(78);
    expect(ingress.stderr().trim().split('\n')).toHaveLength(1);
    expect(ingress.stderr()).toMatch(/^\[ingress\] Invalid configuration: PORT: must be a number/);
  });
});
