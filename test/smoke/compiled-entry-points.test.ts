import { spawn } from 'node:child_process';

import { testRedisEnv, uniquePrefix } from '../helpers/app-fixture';
import { killAll, PROJECT_ROOT, type ServiceProcess, startServiceProcess } from '../helpers/processes';

/** `npm run build`, without blocking this process's event loop (pooled sockets would die). */
function build(): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn('npm', ['run', 'build'], { cwd: PROJECT_ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.once('exit', (code) => resolve({ code, output }));
  });
}

/**
 * `npm start` runs the compiled entry points on plain node, which resolves packages by their
 * `exports` maps more strictly than tsx does (a deep import without its `.js` once stopped the
 * compiled ingress at start while every tsx-run test passed). These start them as `npm start` does.
 */
describe('The compiled entry points (npm start)', () => {
  const started: ServiceProcess[] = [];
  const env = () => ({
    ...testRedisEnv(),
    REDIS_KEY_PREFIX: uniquePrefix(),
    PORT: '0',
    HOST: '127.0.0.1',
    METRICS_PORT: '',
  });

  beforeAll(async () => {
    const { code, output } = await build();
    if (code !== 0) throw new Error(`npm run build failed (${code}):\n${output}`);
  }, 180_000);

  afterEach(async () => {
    await killAll(...started.splice(0));
  });

  it('When dist/ingress/main.js starts, then it listens, serves its routes and the dashboard, and stops cleanly on SIGTERM', async () => {
    const ingress = startServiceProcess('dist/ingress/main.js', env());
    started.push(ingress);
    await ingress.waitForOutput('"message":"ingress listening"', 30_000);
    const line = ingress
      .stdout()
      .split('\n')
      .find((text) => text.includes('"message":"ingress listening"'));
    const { port } = JSON.parse(line ?? '{}') as { port: number };
    expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(200);
    expect((await fetch(`http://127.0.0.1:${port}/admin/queues`)).status).toBe(401);
    ingress.child.kill('SIGTERM');
    expect(await ingress.exited).toBe(0);
  });

  it('When dist/workers/main.js starts, then it is ready and stops cleanly on SIGTERM', async () => {
    const worker = startServiceProcess('dist/workers/main.js', env());
    started.push(worker);
    await worker.waitForOutput('"message":"worker ready"', 30_000);
    worker.child.kill('SIGTERM');
    expect(await worker.exited).toBe(0);
  });
});
