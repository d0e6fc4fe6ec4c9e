/**
 * docs/operators.md, "From a fresh machine": every command block of the walk-through, run in order by
 * bash in a clone of this repository, and docker-compose.yml brought up by them. What differs from
 * an operator's machine, and only that (docs/operators.md, "What the deployment tests run"):
 * - `docker compose` is Debian's docker-compose (1.29) over podman's Docker API, with `--compatibility`
 *   so that it honours `deploy.replicas` as Compose v2 does, `exec -T` (no terminal here), and, where a
 *   command names no service, the services this machine can build; `docker` is podman;
 * - images no registry here gives stand in under their compose names: the service's image built from
 *   the Dockerfile by the image test's build (so `--build` becomes `--no-build`), and Debian's
 *   redis-server, nginx (1.22) and prometheus (2.42) on the local base (scripts/image/stand-ins/);
 *   Jaeger and Grafana have no package here and are not started;
 * - the proxy's configuration loses what nginx 1.22 and podman's DNS lack: `resolve` on the upstream
 *   server (nginx 1.27.3) and Docker's resolver address 127.0.0.11 (each must match exactly once), so
 *   after the ingress replicas are recreated the test restarts the proxy, which re-resolves them;
 * - `curl` to https://localhost reaches the proxy on the test's port; Prometheus is published on a
 *   loopback port so that the test can ask it;
 * - podman runs healthchecks from systemd timers, and this machine has none: while a block runs, the
 *   test runs each starting container's own healthcheck (`podman healthcheck run`) every second.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

import { Agent, fetch } from 'undici';
import { parse } from 'yaml';

import { buildTestImage } from '../../scripts/image/build';
import { podman, podmanEnv, run } from '../../scripts/image/podman';
import { ensureStandIns } from '../../scripts/image/stand-ins';
import { freePort } from '../../scripts/lib/free-port';
import { guideBlocks, guideProse } from '../helpers/operators-guide';
import { eventually, PROJECT_ROOT } from '../helpers/processes';
import { replaceOnce } from '../helpers/replace-once';

/** The walk-through's own administrator (deploy/example.env's ADMIN_EMAIL) and the password step 2 sets. */
const ADMIN = { email: 'admin@example.com', password: 'walk-through-admin-password' };
/** What this machine can build and start (Jaeger and Grafana have no Debian package). */
const STARTED = ['redis', 'ingress', 'worker', 'proxy', 'prometheus'];
/** Long enough for a busy machine (`up` takes about 40 s here). */
const BLOCK_TIMEOUT_MS = 300_000;

/** .env as step 2 asks it to be filled in. */
function fillEnv(file: string, values: Record<string, string>): void {
  let text = readFileSync(file, 'utf8');
  for (const [key, value] of Object.entries(values)) {
    const line = new RegExp(`^${key}=.*$`, 'm');
    text = line.test(text) ? text.replace(line, `${key}=${value}`) : `${text}${key}=${value}\n`;
  }
  writeFileSync(file, text);
}

/** The `docker` and `curl` the blocks run, as the header of this file says. */
const SHIMS = `
docker() {
  if [ "$1" != compose ]; then command podman "$@"; return; fi
  shift
  local args=() named=0 sub="$1"
  for arg in "$@"; do
    case "$arg" in
      --build) args+=(--no-build) ;;
      *) args+=("$arg") ;;
    esac
  done
  if [ "$sub" = exec ] || [ "$sub" = run ]; then args=("$sub" -T "\${args[@]:1}"); fi
  if [ "$sub" = up ]; then
    for arg in "\${args[@]:1}"; do case "$arg" in -*|*=*) ;; *) named=1 ;; esac; done
    if [ "$named" = 0 ]; then args+=(${STARTED.join(' ')}); fi
  fi
  command docker-compose --compatibility -p "$FTS_PROJECT" -f docker-compose.yml -f docker-compose.test.yml "\${args[@]}"
}
curl() { command curl --connect-to "localhost:443:127.0.0.1:$FTS_HTTPS_PORT" "$@"; }
set -euo pipefail
`;

describe('docs/operators.md "From a fresh machine", run', () => {
  const blocks = [...guideBlocks('From a fresh machine'), ...guideBlocks('Scaling and draining workers')];
  /** The lines of the rebuild sections that run in compose (the others run from a checkout). */
  const inCompose = ['Rebuilding projections', 'Rebuilding snapshots'].map((heading) =>
    guideBlocks(heading)
      .join('\n')
      .split('\n')
      .filter((line) => line.endsWith('# in compose'))
      .join('\n'),
  );
  let base: string;
  let checkout: string;
  let api: ChildProcess;
  let env: NodeJS.ProcessEnv;
  let project: string;
  let https: string;
  let prometheus: string;
  let agent: Agent | undefined;
  /** The JWT_SECRET step 2 puts in .env. */
  let jwtSecret: string;
  /** The team the first command through the proxy creates, and its version. */
  let teamId: string;
  let teamVersion: number;

  /** Runs one block (by its index in `blocks`, or its text) by bash in `cwd`, running starting containers' healthchecks meanwhile. */
  const runBlock = async (block: number | string, cwd: string) => {
    const label = typeof block === 'number' ? `block ${block + 1}` : 'the commands';
    const script = (typeof block === 'number' ? blocks[block]! : block)
      .replaceAll('<this repository>', PROJECT_ROOT)
      .replaceAll('<ADMIN_PASSWORD>', ADMIN.password)
      .replaceAll('<container>', '"${FTS_PROJECT}_worker_1"');
    let finished = false;
    const ran = run('bash', ['-c', `${SHIMS}\n${script}`], { cwd, env }).finally(() => (finished = true));
    const deadline = Date.now() + BLOCK_TIMEOUT_MS;
    while (!finished && Date.now() < deadline) {
      const starting = (
        await run(
          'podman',
          [
            'ps',
            '--filter',
            `label=com.docker.compose.project=${project}`,
            '--format',
            '{{.Names}} {{.Status}}',
          ],
          { env },
        )
      ).stdout
        .split('\n')
        .filter((line) => line.includes('(starting)') || line.includes('(unhealthy)'))
        .map((line) => line.split(' ')[0]!);
      await Promise.all(starting.map((name) => run('podman', ['healthcheck', 'run', name], { env })));
      await new Promise((resolve) => setTimeout(resolve, 1_000));
    }
    if (!finished) throw new Error(`${label} had not finished after ${BLOCK_TIMEOUT_MS} ms:\n${script}`);
    const result = await ran;
    if (result.code !== 0) {
      throw new Error(`${label} exited ${result.code}:\n${script}\n${result.stdout}\n${result.stderr}`);
    }
    return result.stdout;
  };
  /**
   * Runs `script` by bash in the checkout for `ms`, then stops it and everything it started (a
   * command that follows until stopped, as `logs -f`); its output.
   */
  const followFor = async (script: string, ms: number) => {
    const child = spawn('bash', ['-c', `${SHIMS}\n${script}`], { cwd: checkout, env, detached: true });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const exited = once(child, 'exit');
    await new Promise((resolve) => setTimeout(resolve, ms));
    if (child.exitCode === null && child.pid) process.kill(-child.pid, 'SIGTERM');
    await exited;
    return output;
  };
  /** A bearer token for the administrator, asked of the proxy. */
  const adminToken = async () => {
    const answer = await fetch(`${https}/api/auth/token`, {
      dispatcher: agent,
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ grant_type: 'password', username: ADMIN.email, password: ADMIN.password }),
    });
    if (answer.status !== 200) throw new Error(`the token endpoint answered ${answer.status}`);
    return ((await answer.json()) as { access_token: string }).access_token;
  };
  /** The status of `CurrentUser` asked through the proxy with `token`. */
  const currentUser = async (token: string) => {
    const answer = await fetch(`${https}/api/readmodel`, {
      dispatcher: agent,
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify({ query: { queryType: 'CurrentUser' } }),
    });
    await answer.body?.cancel();
    return answer.status;
  };
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
      { cwd: checkout, env },
    );

  beforeAll(async () => {
    const image = await buildTestImage();
    await ensureStandIns();
    base = mkdtempSync(path.join(tmpdir(), 'fts-compose-'));
    checkout = path.join(base, 'fantasy-team-service');
    project = `fts${randomUUID().slice(0, 8)}`;
    const [httpsPort, httpPort, prometheusPort] = [await freePort(), await freePort(), await freePort()];
    https = `https://127.0.0.1:${httpsPort}`;
    prometheus = `http://127.0.0.1:${prometheusPort}`;
    // The service's image under the name the compose file gives it, as `docker compose build` tags it.
    // The ingress has it through the `<<: *service` merge key, which YAML 1.2 reads only when asked.
    const composed = parse(readFileSync(path.join(PROJECT_ROOT, 'docker-compose.yml'), 'utf8'), {
      merge: true,
    }) as { services: Record<string, { image?: string }> };
    const serviceImage = composed.services.ingress?.image;
    if (!serviceImage) throw new Error('docker-compose.yml names no image for the ingress');
    await podman(['tag', image, `localhost/${serviceImage}`]);

    // podman's Docker API on a socket of this test's own.
    const socket = path.join(base, 'podman.sock');
    api = spawn('podman', ['system', 'service', '--time=0', `unix://${socket}`], {
      env: podmanEnv(),
      stdio: 'ignore',
    });
    env = {
      ...podmanEnv(),
      DOCKER_HOST: `unix://${socket}`,
      FTS_PROJECT: project,
      FTS_HTTPS_PORT: String(httpsPort),
      FTS_HTTP_PORT: String(httpPort),
      FTS_PROMETHEUS_PORT: String(prometheusPort),
    };
    await eventually(async () => (await run('docker-compose', ['version'], { env })).code === 0, 30_000);
  }, 900_000);

  afterAll(async () => {
    if (project && checkout) await compose('down', '--volumes', '--timeout', '20').catch(() => undefined);
    if (api && api.exitCode === null) {
      api.kill('SIGTERM');
      await once(api, 'exit');
    }
    await agent?.close();
    if (base) rmSync(base, { recursive: true, force: true });
  }, 120_000);

  it('When the guide is read, then its walk-through has the six command blocks this test runs, and scaling one', () => {
    expect(blocks).toHaveLength(7);
  });

  it('When step 2 runs (clone, copy the settings), and .env is filled in as it says with the secrets its commands make, then docker-compose reads the file, and refuses it without JWT_SECRET', async () => {
    await runBlock(0, base);
    // Each secret made by the command step 2 names for it.
    const secrets = Object.fromEntries(
      [
        ...guideProse('From a fresh machine').matchAll(/`([A-Z_]+)`(?: too)? \(`(openssl rand [^`]+)`\)/g),
      ].map(([, name, command]) => [
        name!,
        execFileSync('bash', ['-c', command!], { encoding: 'utf8' }).trim(),
      ]),
    );
    expect(Object.keys(secrets).sort()).toEqual([
      'DATA_ENCRYPTION_KEY',
      'JWT_SECRET',
      'METRICS_TOKEN',
      'REDIS_PASSWORD',
    ]);
    jwtSecret = secrets.JWT_SECRET!;
    fillEnv(path.join(checkout, '.env'), {
      ADMIN_PASSWORD: ADMIN.password,
      ...secrets,
      HTTPS_PORT: env.FTS_HTTPS_PORT!,
      HTTP_PORT: env.FTS_HTTP_PORT!,
      // Jaeger is not started here.
      OTEL_SDK_DISABLED: 'true',
    });
    let nginxConf = readFileSync(path.join(checkout, 'deploy', 'nginx.conf'), 'utf8');
    nginxConf = replaceOnce(nginxConf, 'resolver 127.0.0.11 valid=10s ipv6=off;', '');
    nginxConf = replaceOnce(nginxConf, 'server ingress:8080 resolve;', 'server ingress:8080;');
    writeFileSync(path.join(checkout, 'deploy', 'nginx.test.conf'), nginxConf);
    writeFileSync(
      path.join(checkout, 'docker-compose.test.yml'),
      [
        'services:',
        '  proxy:',
        '    volumes:',
        '      - ./deploy/nginx.test.conf:/etc/nginx/nginx.conf:ro',
        '  prometheus:',
        '    ports:',
        `      - '127.0.0.1:${env.FTS_PROMETHEUS_PORT}:9090'`,
        '',
      ].join('\n'),
    );

    const config = await compose('config');
    expect(config.code).toBe(0);
    expect(Object.keys((parse(config.stdout) as { services: object }).services).sort()).toEqual([
      'grafana',
      'ingress',
      'jaeger',
      'prometheus',
      'proxy',
      'redis',
      'worker',
    ]);
    // An empty variable in the environment wins over .env, as it would for an operator.
    const refused = await run('docker-compose', ['-f', 'docker-compose.yml', 'config', '--quiet'], {
      cwd: checkout,
      env: { ...env, JWT_SECRET: '' },
    });
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('set JWT_SECRET in .env');
  }, 120_000);

  it('When step 3 runs, then the proxy has a certificate', async () => {
    await runBlock(1, checkout);
    agent = new Agent({
      connect: { ca: readFileSync(path.join(checkout, 'deploy', 'tls', 'cert.pem'), 'utf8') },
    });
  }, 60_000);

  it(
    'When step 4 runs, then the services start and the proxy answers ready, with two ingress and three worker replicas',
    async () => {
      const output = await runBlock(2, checkout);
      expect(output).toContain('{"status":"ready"}');
      const running = (
        await podman([
          'ps',
          '--filter',
          `label=com.docker.compose.project=${project}`,
          '--format',
          '{{.Labels}}',
        ])
      ).match(/com\.docker\.compose\.service:\w+/g);
      const count = (service: string) =>
        running?.filter((label) => label.endsWith(`:${service}`)).length ?? 0;
      expect(Object.fromEntries([...STARTED, 'jaeger', 'grafana'].map((s) => [s, count(s)]))).toEqual({
        redis: 1,
        ingress: 2,
        worker: 3,
        proxy: 1,
        prometheus: 1,
        jaeger: 0,
        grafana: 0,
      });
    },
    BLOCK_TIMEOUT_MS + 60_000,
  );

  it('When step 5 runs, then the administrator is signed in', async () => {
    const output = await runBlock(3, checkout);
    expect(JSON.parse(output)).toMatchObject({
      queryType: 'CurrentUser',
      data: [{ name: ADMIN.email, roles: ['Admin'] }],
    });
  }, 60_000);

  it('When a client sends a command over HTTPS through the proxy, then a worker projects it and the read at its version answers 200', async () => {
    const authorization = `Bearer ${await adminToken()}`;
    const post = (route: string, body: unknown) =>
      fetch(`${https}${route}`, {
        dispatcher: agent,
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization },
        body: JSON.stringify(body),
      });
    teamId = randomUUID();
    const created = await post('/api/command', {
      commandType: 'CreateFantasyTeam',
      command: { aggregateRootId: teamId, name: 'Compose United' },
      requestId: randomUUID(),
    });
    expect(created.status).toBe(200);
    ({ version: teamVersion } = (await created.json()) as { version: number });
    const version = teamVersion;
    let read: { status: number; body: unknown } | undefined;
    await eventually(async () => {
      const answer = await post('/api/readmodel', {
        query: { queryType: 'GetFantasyTeam', id: teamId, minVersion: version },
      });
      read = { status: answer.status, body: await answer.json() };
      return read.status === 200;
    }, 60_000);
    expect(read?.body).toMatchObject({ results: [{ id: teamId, name: 'Compose United' }] });
  }, 120_000);

  it(
    'When JWT_SECRET is rotated in the three steps of "Rotating JWT_SECRET", then a token signed before stays accepted until the old secret is removed, and one signed after stays accepted',
    async () => {
      const rotation = guideProse('Rotating JWT_SECRET');
      const steps = [
        '`JWT_SECRET=<old>`, `JWT_PREVIOUS_SECRET=<new>`, `JWT_PREVIOUS_SECRET_UNTIL=<an instant after step 2, e.g. tomorrow>`',
        '`JWT_SECRET=<new>`, `JWT_PREVIOUS_SECRET=<old>`, `JWT_PREVIOUS_SECRET_UNTIL=<now + JWT_TTL_SECONDS>`',
        'remove `JWT_PREVIOUS_SECRET` and `JWT_PREVIOUS_SECRET_UNTIL` at the next deployment',
      ];
      for (const step of steps) expect(rotation).toContain(step);
      expect(rotation.split('`docker compose up -d ingress`')).toHaveLength(3);

      const [oldSecret, newSecret] = [jwtSecret, randomUUID() + randomUUID()];
      /** `docker compose up -d ingress` with .env as a step leaves it, then the proxy again (see the header). */
      const deploy = async (settings: Record<string, string>) => {
        fillEnv(path.join(checkout, '.env'), settings);
        await runBlock('docker compose up -d ingress', checkout);
        await runBlock('docker compose restart proxy', checkout);
        await eventually(
          async () => [200, 401].includes(await currentUser(signedBefore).catch(() => 0)),
          120_000,
          500,
        );
      };
      const signedBefore = await adminToken();

      await deploy({
        JWT_SECRET: oldSecret,
        JWT_PREVIOUS_SECRET: newSecret,
        JWT_PREVIOUS_SECRET_UNTIL: new Date(Date.now() + 86_400_000).toISOString(),
      });
      expect(await currentUser(signedBefore)).toBe(200);

      await deploy({
        JWT_SECRET: newSecret,
        JWT_PREVIOUS_SECRET: oldSecret,
        JWT_PREVIOUS_SECRET_UNTIL: new Date(Date.now() + 3_600_000).toISOString(),
      });
      const signedAfter = await adminToken();
      expect([await currentUser(signedBefore), await currentUser(signedAfter)]).toEqual([200, 200]);

      await deploy({ JWT_PREVIOUS_SECRET: '', JWT_PREVIOUS_SECRET_UNTIL: '' });
      expect([await currentUser(signedBefore), await currentUser(signedAfter)]).toEqual([401, 200]);
    },
    BLOCK_TIMEOUT_MS * 2,
  );

  it(
    'When REDIS_PASSWORD is changed in .env and the block of "Redis password" runs, then Redis refuses the old password, every process reconnects with the new one, and the team written before reads back',
    async () => {
      const [block] = guideBlocks('Redis password');
      const oldPassword = readFileSync(path.join(checkout, '.env'), 'utf8').match(
        /^REDIS_PASSWORD=(.*)$/m,
      )![1]!;
      const newPassword = randomUUID() + randomUUID();
      fillEnv(path.join(checkout, '.env'), { REDIS_PASSWORD: newPassword });
      await runBlock(block!, checkout);
      // nginx 1.22 resolves the recreated ingress replicas only when it starts (see the header).
      await runBlock('docker compose restart proxy', checkout);
      const ping = async (password: string) => {
        const answer = await compose(
          'exec',
          '-T',
          'redis',
          'sh',
          '-c',
          `REDISCLI_AUTH='${password}' redis-cli ping`,
        );
        return `${answer.stdout}${answer.stderr}`;
      };
      // The new password answers, so the old one's refusal is Redis's, not a failed exec.
      expect(await ping(newPassword)).toContain('PONG');
      expect(await ping(oldPassword)).not.toContain('PONG');
      const authorization = `Bearer ${await adminToken()}`;
      let read: { status: number; body: unknown } | undefined;
      await eventually(
        async () => {
          const answer = await fetch(`${https}/api/readmodel`, {
            dispatcher: agent,
            method: 'POST',
            headers: { 'content-type': 'application/json', authorization },
            body: JSON.stringify({
              query: { queryType: 'GetFantasyTeam', id: teamId, minVersion: teamVersion },
            }),
          }).catch(() => undefined);
          read = answer && { status: answer.status, body: await answer.json() };
          return read?.status === 200;
        },
        120_000,
        500,
      );
      expect(read?.body).toMatchObject({ results: [{ id: teamId, name: 'Compose United' }] });
    },
    BLOCK_TIMEOUT_MS * 2,
  );

  it('When step 8 follows the logs of the ingress and the workers, then their start lines are there', async () => {
    const command = 'docker compose logs -f ingress worker';
    expect(guideProse('From a fresh machine')).toContain(`follow the processes with \`${command}\``);
    const output = await followFor(command, 5_000);
    expect(output).toContain('"message":"ingress listening"');
    expect(output).toContain('"message":"worker ready"');
  }, 60_000);

  it(
    'When steps 6 and 7 run, then five workers run and Prometheus scrapes all seven replicas with METRICS_TOKEN, and its alert rules load',
    async () => {
      await runBlock(4, checkout);
      let targets: { labels: { job: string }; health: string }[] = [];
      // Prometheus finds new replicas by DNS within 30 s and scrapes every 15 s: step 7 waits for that.
      await eventually(
        async () => {
          const answer = (await (await fetch(`${prometheus}/api/v1/targets?state=active`)).json()) as {
            data: { activeTargets: typeof targets };
          };
          targets = answer.data.activeTargets;
          return targets.length === 7 && targets.every((target) => target.health === 'up');
        },
        120_000,
        1_000,
      );
      const output = await runBlock(5, checkout);
      expect(output).toMatch(/\{job="fts-ingress"\} => 2 /);
      expect(output).toMatch(/\{job="fts-worker"\} => 5 /);
      const rules = (await (await fetch(`${prometheus}/api/v1/rules`)).json()) as {
        data: { groups: { rules: { health: string }[] }[] };
      };
      const loaded = rules.data.groups.flatMap((group) => group.rules);
      expect(loaded.length).toBeGreaterThan(10);
      expect(loaded.filter((rule) => rule.health === 'err')).toEqual([]);
    },
    BLOCK_TIMEOUT_MS + 180_000,
  );

  it(
    'When the block of "Scaling and draining workers" runs, then workers scale out and in, and every worker stopped drains and exits 0',
    async () => {
      await runBlock(6, checkout);
      const workers = (
        await podman([
          'ps',
          '--all',
          '--filter',
          `label=com.docker.compose.project=${project}`,
          '--filter',
          'label=com.docker.compose.service=worker',
          '--format',
          '{{.Status}}',
        ])
      )
        .trim()
        .split('\n');
      // Scaled in to two, then both stopped: each drained (exit 0), none killed at the grace period's end.
      expect(workers).toHaveLength(2);
      expect(workers.filter((status) => !status.startsWith('Exited (0)'))).toEqual([]);
    },
    BLOCK_TIMEOUT_MS,
  );

  it(
    'When the rebuild commands of the guide run in compose, then the projections and the snapshots are rebuilt in a one-off worker container',
    async () => {
      expect(inCompose.map((lines) => lines.split('\n').length)).toEqual([1, 1]);
      const projections = await runBlock(inCompose[0]!, checkout);
      const snapshots = await runBlock(inCompose[1]!, checkout);
      expect(projections).toContain('"message":"projection rebuilt"');
      expect(snapshots).toContain('"message":"snapshots rebuilt"');
    },
    BLOCK_TIMEOUT_MS,
  );
});
