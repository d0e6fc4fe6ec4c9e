/**
 * docker-compose.yml, read and brought up here: Debian's docker-compose (1.29) over podman's Docker
 * API, with every service this machine can build. What differs from an operator's `docker compose up`
 * (docs/operators.md, "Deployment"), and only that:
 * - images no registry here gives stand in under their compose names: the service's image built from
 *   the Dockerfile, and Debian's redis-server, nginx (1.22) and prometheus (2.42) on the local base
 *   (scripts/image/stand-ins/); Jaeger and Grafana have no package here and are not started;
 * - the proxy's configuration loses what nginx 1.22 and podman's DNS lack: `resolve` on the upstream
 *   server (nginx 1.27.3) and Docker's resolver address 127.0.0.11 (each must match exactly once);
 * - Prometheus is published on a loopback port so that the test can ask it;
 * - `--compatibility`, so that docker-compose 1.x honours `deploy.replicas` as Compose v2 does;
 * - podman runs healthchecks from systemd timers, and this machine has none: the test runs each
 *   starting container's own healthcheck (`podman healthcheck run`) every second, as the timer would.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

import { Agent, fetch } from 'undici';
import { parse } from 'yaml';

import { buildTestImage, copyTrackedFiles } from '../../scripts/image/build';
import { podman, podmanEnv, run } from '../../scripts/image/podman';
import { ensureStandIns } from '../../scripts/image/stand-ins';
import { freePort } from '../../scripts/lib/redis-server';
import { eventually } from '../helpers/processes';
import { selfSignedCertificate } from '../helpers/self-signed';

const ADMIN = { email: 'compose-admin@example.com', password: 'compose-admin-password' };
/** What this machine cannot build (no Debian package): named by the file, not started here. */
const NOT_STARTED = ['jaeger', 'grafana'];
/** Long enough for a busy machine (it takes about 40 s here), short of the hook's own timeout. */
const UP_TIMEOUT_MS = 240_000;

function replaceOnce(text: string, from: string, to: string): string {
  if (text.split(from).length !== 2) {
    throw new Error(`deploy/nginx.conf must hold "${from}" exactly once: update this test with it`);
  }
  return text.replace(from, to);
}

/** deploy/example.env with `values` filled in: what an operator's .env holds after step one. */
function envFile(example: string, values: Record<string, string>): string {
  let text = example;
  for (const [key, value] of Object.entries(values)) {
    const line = new RegExp(`^${key}=.*$`, 'm');
    text = line.test(text) ? text.replace(line, `${key}=${value}`) : `${text}${key}=${value}\n`;
  }
  return text;
}

describe('docker-compose.yml, brought up', () => {
  let dir: string;
  let api: ChildProcess;
  let composeEnv: NodeJS.ProcessEnv;
  let project: string;
  let https: string;
  let prometheus: string;
  let agent: Agent;
  const compose = (...args: string[]) =>
    run(
      'docker-compose',
      [
        '--compatibility',
        '-p',
        project,
        '-f',
        'docker-compose.yml',
        '-f',
        'docker-compose.test.yml',
        ...args,
      ],
      { cwd: dir, env: composeEnv },
    );

  beforeAll(async () => {
    const image = await buildTestImage();
    await ensureStandIns();
    dir = mkdtempSync(path.join(tmpdir(), 'fts-compose-'));
    copyTrackedFiles(dir);
    project = `fts${randomUUID().slice(0, 8)}`;
    const ca = selfSignedCertificate(path.join(dir, 'deploy', 'tls'));
    agent = new Agent({ connect: { ca } });

    // The service's image under the name the compose file gives it, as `docker compose build` tags it.
    const composed = parse(readFileSync(path.join(dir, 'docker-compose.yml'), 'utf8')) as {
      services: Record<string, { image?: string }>;
    };
    await podman(['tag', image, `localhost/${composed.services.ingress!.image!}`]);

    const [httpsPort, httpPort, prometheusPort] = [await freePort(), await freePort(), await freePort()];
    https = `https://127.0.0.1:${httpsPort}`;
    prometheus = `http://127.0.0.1:${prometheusPort}`;
    writeFileSync(
      path.join(dir, '.env'),
      envFile(readFileSync(path.join(dir, 'deploy', 'example.env'), 'utf8'), {
        ADMIN_EMAIL: ADMIN.email,
        ADMIN_PASSWORD: ADMIN.password,
        JWT_SECRET: randomUUID() + randomUUID(),
        REDIS_PASSWORD: randomUUID(),
        METRICS_TOKEN: randomUUID(),
        HTTPS_PORT: String(httpsPort),
        HTTP_PORT: String(httpPort),
        // Jaeger is not started here.
        OTEL_SDK_DISABLED: 'true',
      }),
    );
    let nginxConf = readFileSync(path.join(dir, 'deploy', 'nginx.conf'), 'utf8');
    nginxConf = replaceOnce(nginxConf, 'resolver 127.0.0.11 valid=10s ipv6=off;', '');
    nginxConf = replaceOnce(nginxConf, 'server ingress:8080 resolve;', 'server ingress:8080;');
    writeFileSync(path.join(dir, 'deploy', 'nginx.test.conf'), nginxConf);
    writeFileSync(
      path.join(dir, 'docker-compose.test.yml'),
      [
        'services:',
        '  proxy:',
        '    volumes:',
        '      - ./deploy/nginx.test.conf:/etc/nginx/nginx.conf:ro',
        '  prometheus:',
        '    ports:',
        `      - '127.0.0.1:${prometheusPort}:9090'`,
        '',
      ].join('\n'),
    );

    // podman's Docker API on a socket of this test's own.
    const socket = path.join(dir, 'podman.sock');
    api = spawn('podman', ['system', 'service', '--time=0', `unix://${socket}`], {
      env: podmanEnv(),
      stdio: 'ignore',
    });
    composeEnv = { ...podmanEnv(), DOCKER_HOST: `unix://${socket}` };
    await eventually(
      async () => (await run('docker-compose', ['version'], { env: composeEnv })).code === 0,
      30_000,
    );
  }, 900_000);

  afterAll(async () => {
    if (project && dir) await compose('down', '--volumes', '--timeout', '20');
    if (api && api.exitCode === null) {
      api.kill('SIGTERM');
      await once(api, 'exit');
    }
    await agent?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  }, 120_000);

  it('When docker-compose reads it without JWT_SECRET, then it refuses with the line that says how to make one', async () => {
    const refused = await run('docker-compose', ['-f', 'docker-compose.yml', 'config', '--quiet'], {
      cwd: dir,
      env: { ...composeEnv, JWT_SECRET: '', REDIS_PASSWORD: 'set' },
    });
    // The .env holds a secret; an empty variable in the environment wins over it, as for an operator.
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('set JWT_SECRET in .env');
  });

  it('When docker-compose reads it with the .env of deploy/example.env filled in, then it is valid and names every service', async () => {
    const config = await compose('config');
    expect(config.code).toBe(0);
    const services = Object.keys((parse(config.stdout) as { services: object }).services).sort();
    expect(services).toEqual(['grafana', 'ingress', 'jaeger', 'prometheus', 'proxy', 'redis', 'worker']);
  });

  describe('Every service this machine can build, started', () => {
    beforeAll(async () => {
      const services = ['redis', 'ingress', 'worker', 'proxy', 'prometheus'];
      const up = compose('up', '--detach', '--no-build', ...services);
      let upDone = false;
      up.then(
        () => (upDone = true),
        () => (upDone = true),
      );
      // What podman's systemd timer would do: run the healthcheck of every container still starting.
      // A container that never turns healthy holds `up` for ever: give up after UP_TIMEOUT_MS.
      const deadline = Date.now() + UP_TIMEOUT_MS;
      while (!upDone) {
        if (Date.now() > deadline) {
          throw new Error(
            `docker-compose up had not finished after ${UP_TIMEOUT_MS} ms: ${await podman(['ps', '--all', '--filter', `label=com.docker.compose.project=${project}`, '--format', '{{.Names}} {{.Status}}'])}`,
          );
        }
        const starting = (
          await podman([
            'ps',
            '--filter',
            `label=com.docker.compose.project=${project}`,
            '--format',
            '{{.Names}} {{.Status}}',
          ])
        )
          .split('\n')
          .filter((line) => line.includes('(starting)') || line.includes('(unhealthy)'))
          .map((line) => line.split(' ')[0]!);
        await Promise.all(
          starting.map((name) => run('podman', ['healthcheck', 'run', name], { env: podmanEnv() })),
        );
        await new Promise((resolve) => setTimeout(resolve, 1_000));
      }
      const result = await up;
      if (result.code !== 0) throw new Error(`docker-compose up exited ${result.code}: ${result.stderr}`);
    }, 600_000);

    it('When it is up, then two ingress and three worker replicas run beside redis, the proxy and Prometheus', async () => {
      const running = (
        await podman([
          'ps',
          '--filter',
          `label=com.docker.compose.project=${project}`,
          '--format',
          '{{.Labels}}',
        ])
      ).match(/com\.docker\.compose\.service:(\w+)/g);
      const count = (service: string) =>
        running?.filter((label) => label.endsWith(`:${service}`)).length ?? 0;
      expect(
        Object.fromEntries(
          ['redis', 'ingress', 'worker', 'proxy', 'prometheus', ...NOT_STARTED].map((s) => [s, count(s)]),
        ),
      ).toEqual({
        redis: 1,
        ingress: 2,
        worker: 3,
        proxy: 1,
        prometheus: 1,
        jaeger: 0,
        grafana: 0,
      });
    });

    it('When a client signs in and sends a command over HTTPS through the proxy, then a worker projects it and the read at its version answers 200', async () => {
      await eventually(async () => {
        try {
          return (await fetch(`${https}/readyz`, { dispatcher: agent })).status === 200;
        } catch {
          return false;
        }
      }, 60_000);
      const token = await fetch(`${https}/api/auth/token`, {
        dispatcher: agent,
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ grant_type: 'password', username: ADMIN.email, password: ADMIN.password }),
      });
      expect(token.status).toBe(200);
      const authorization = `Bearer ${((await token.json()) as { access_token: string }).access_token}`;
      const post = (route: string, body: unknown) =>
        fetch(`${https}${route}`, {
          dispatcher: agent,
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization },
          body: JSON.stringify(body),
        });
      const teamId = randomUUID();
      const created = await post('/api/command', {
        commandType: 'CreateFantasyTeam',
        command: { aggregateRootId: teamId, name: 'Compose United' },
        requestId: randomUUID(),
      });
      expect(created.status).toBe(200);
      const { version } = (await created.json()) as { version: number };
      let read: { status: number; body: unknown } | undefined;
      await eventually(async () => {
        const answer = await post('/api/readmodel', {
          query: { queryType: 'GetFantasyTeam', id: teamId, minVersion: version },
        });
        read = { status: answer.status, body: await answer.json() };
        return read.status === 200;
      }, 60_000);
      expect(read?.body).toMatchObject({ results: [{ id: teamId, name: 'Compose United' }] });
    });

    it('When Prometheus has scraped, then it finds every ingress and worker replica by DNS, each up, with its METRICS_TOKEN, and its alert rules load', async () => {
      let targets: { labels: { job: string }; health: string }[] = [];
      await eventually(
        async () => {
          const answer = (await (await fetch(`${prometheus}/api/v1/targets?state=active`)).json()) as {
            data: { activeTargets: typeof targets };
          };
          targets = answer.data.activeTargets;
          return targets.length === 5 && targets.every((target) => target.health === 'up');
        },
        90_000,
        1_000,
      );
      expect(targets.map((target) => target.labels.job).sort()).toEqual([
        'fts-ingress',
        'fts-ingress',
        'fts-worker',
        'fts-worker',
        'fts-worker',
      ]);
      const rules = (await (await fetch(`${prometheus}/api/v1/rules`)).json()) as {
        data: { groups: { rules: { health: string }[] }[] };
      };
      const loaded = rules.data.groups.flatMap((group) => group.rules);
      expect(loaded.length).toBeGreaterThan(10);
      expect(loaded.filter((rule) => rule.health === 'err')).toEqual([]);
    }, 120_000);
  });
});
