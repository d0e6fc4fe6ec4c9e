/**
 * docs/operators.md, "Deployment": the commands outside the compose walk-through, each block run by
 * bash as an operator runs it, in a copy of the repository's tracked files: "Without Docker" (from
 * `npm ci` on), the rebuilds "from a checkout", "On Redis Cluster" and "Container image". What differs
 * from an operator's machine, and only that (docs/operators.md, "What the deployment tests run"):
 * - the placeholders (`<32+ characters>`, `<Redis's requirepass>`, `redis.internal:6379`, the
 *   cluster's `10.0.0.x` nodes) become this test's secrets, Redis and cluster on loopback;
 * - the shell also has PORT (a free port: 8080 may be taken here), HOST=127.0.0.1 and the first
 *   administrator (ADMIN_EMAIL, ADMIN_PASSWORD), so that the test can send a command;
 * - a line that starts a service (the block says to run it in a terminal of its own) runs in the
 *   background of the block's shell, which the test stops afterwards;
 * - `docker` is podman: `docker build` with npm's download cache and the machine's trust
 *   (scripts/image/build.ts), `docker run` on the host's network without `-p` (the container listens
 *   on PORT), each container labelled so that the test removes it.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

import { ensureBaseImage, withLock } from '../../scripts/image/base';
import { copyTrackedFiles, machineBuildArgs } from '../../scripts/image/build';
import { podman, podmanEnv, pruneUnnamedImages, run } from '../../scripts/image/podman';
import { freePort } from '../../scripts/lib/free-port';
import { type LocalRedisCluster, startLocalRedisCluster } from '../../scripts/lib/redis-cluster';
import { type LocalRedis, startLocalRedis } from '../../scripts/lib/redis-server';
import { bearerToken, commandBody, exchange } from '../helpers/http-client';
import { guideBlocks, guideProse } from '../helpers/operators-guide';
import { eventually, isAlive, type ServiceProcess, watchedProcess } from '../helpers/processes';

const ADMIN = { email: 'checkout-admin@example.com', password: 'checkout-admin-password' };
/** `npm ci` and `npm run build` take about a minute here; a busy machine, several. */
const START_TIMEOUT_MS = 480_000;
/** How long a block's ingress may take to be ready: a minute less than the test, for the rest of it. */
const READY_WITHIN_MS = START_TIMEOUT_MS - 60_000;
/** The image the "Container image" block builds, as podman names `-t fantasy-team-service`. */
const GUIDE_IMAGE = 'localhost/fantasy-team-service:latest';

/** The `docker` the blocks run, as the header of this file says. */
const SHIMS = `
docker() {
  local sub="$1"; shift
  case "$sub" in
    build) command podman build --pull=never $FTS_BUILD_ARGS "$@" ;;
    run)
      local args=() skip=0
      for arg in "$@"; do
        if [ "$skip" = 1 ]; then skip=0; continue; fi
        if [ "$arg" = -p ]; then skip=1; continue; fi
        args+=("$arg")
      done
      command podman run --rm --network host --label "$FTS_LABEL" -e PORT="$PORT" -e HOST="$HOST" "\${args[@]}" ;;
    *) command podman "$sub" "$@" ;;
  esac
}
set -euo pipefail
`;

/** `line` with what starts a service sent to the background, before any comment. */
function inBackground(line: string): string {
  return /npm run start:|^docker run /.test(line) ? line.replace(/^([^#]*?)\s*(#.*)?$/, '$1 & $2') : line;
}

/** The shell an operator types in: this process's, without the suite's own settings of the service. */
function operatorShell(extra: Record<string, string>): NodeJS.ProcessEnv {
  const own = /^(npm_|REDIS_|JWT_|DATA_ENCRYPTION_KEY$|NODE_ENV$|PORT$|HOST$|METRICS_|ADMIN_|OTEL_|LOG_)/;
  return {
    ...Object.fromEntries(Object.entries(podmanEnv()).filter(([name]) => !own.test(name))),
    ...extra,
  };
}

describe('docs/operators.md "Deployment", the commands run from a checkout', () => {
  let base: string;
  let checkout: string;
  let redis: LocalRedis;
  let cluster: LocalRedisCluster | undefined;
  const label = `fts-guide-test=${randomUUID()}`;
  const jwtSecret = randomUUID() + randomUUID();
  const started: ServiceProcess[] = [];

  /** Starts `script` by bash in the checkout; it runs until it ends or the test stops it. */
  const startBlock = (script: string, env: NodeJS.ProcessEnv): ServiceProcess => {
    const child: ChildProcess = spawn('bash', ['-c', `${SHIMS}\n${script}\nwait`], {
      cwd: checkout,
      env,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const block = watchedProcess(child, 'the block', START_TIMEOUT_MS);
    started.push(block);
    return block;
  };
  /** SIGTERM to the block's whole process group (its shell and what it started), as Ctrl-C in each terminal. */
  const stopBlock = async (block: ServiceProcess) => {
    if (isAlive(block) && block.child.pid) process.kill(-block.child.pid, 'SIGTERM');
    await block.exited;
  };
  /** Waits until the ingress on `port` is ready, then sends it a command and reads the team back at its version. */
  const servesACommand = async (port: number, block: ServiceProcess) => {
    const baseUrl = `http://127.0.0.1:${port}`;
    await eventually(
      async () => {
        if (block.child.exitCode !== null) {
          throw new Error(`the block exited ${block.child.exitCode}:\n${block.stdout()}\n${block.stderr()}`);
        }
        const ready = await exchange(baseUrl, 'GET', '/readyz');
        return ready.ok && ready.status === 200;
      },
      READY_WITHIN_MS,
      1_000,
    ).catch((error: unknown) => {
      // Given up before jest's timeout, so the failure says what the block printed (a busy CI run
      // once timed out here with no word of why: an ingress that exited leaves its worker running).
      const printed = `${block.stdout()}\n${block.stderr()}`.slice(-6_000);
      throw new Error(
        `the ingress on ${port} was not ready (${String(error)}); the block printed:\n${printed}`,
      );
    });
    const authorization = await bearerToken(baseUrl, ADMIN.email, ADMIN.password);
    const teamId = randomUUID();
    const created = await exchange(baseUrl, 'POST', '/api/command', {
      authorization,
      body: commandBody('CreateFantasyTeam', { aggregateRootId: teamId, name: 'Checkout United' }),
    });
    expect(created).toMatchObject({ ok: true, status: 200 });
    const { version } = (created as { body: { version: number } }).body;
    let read: Awaited<ReturnType<typeof exchange>> | undefined;
    await eventually(
      async () => {
        read = await exchange(baseUrl, 'POST', '/api/readmodel', {
          authorization,
          body: { query: { queryType: 'GetFantasyTeam', id: teamId, minVersion: version } },
        });
        return read.ok && read.status === 200;
      },
      60_000,
      250,
    );
    expect(read).toMatchObject({ body: { results: [{ id: teamId, name: 'Checkout United' }] } });
  };
  /**
   * Runs the block of the guide's section `heading`, its placeholders replaced, until its ingress on
   * `port` serves a command that its worker projects; then stops it.
   */
  const blockServesACommand = async (
    heading: string,
    replacements: Record<string, string>,
    port: number,
    env: NodeJS.ProcessEnv,
  ) => {
    const [block] = guideBlocks(heading);
    let script = block!;
    for (const [placeholder, value] of Object.entries(replacements))
      script = script.replaceAll(placeholder, value);
    script = script.split('\n').map(inBackground).join('\n');
    // Each block starts an ingress and a worker.
    expect(script.match(/ & /g)).toHaveLength(2);
    const shell = startBlock(script, env);
    await servesACommand(port, shell);
    await stopBlock(shell);
  };
  const service = (port: number) => ({
    PORT: String(port),
    HOST: '127.0.0.1',
    ADMIN_EMAIL: ADMIN.email,
    ADMIN_PASSWORD: ADMIN.password,
  });

  beforeAll(async () => {
    base = mkdtempSync(path.join(tmpdir(), 'fts-checkout-'));
    checkout = path.join(base, 'fantasy-team-service');
    mkdirSync(checkout);
    copyTrackedFiles(checkout);
    redis = await startLocalRedis({ password: randomUUID() });
  }, 60_000);

  afterAll(async () => {
    // Each step whatever the others do: a Redis or a cluster left running would outlive the suite.
    await Promise.allSettled(started.map((block) => stopBlock(block)));
    await Promise.allSettled([
      (async () => {
        const left = (await podman(['ps', '--all', '--quiet', '--filter', `label=${label}`])).split('\n');
        for (const id of left.filter((line) => line !== '')) {
          await podman(['rm', '--force', '--time', '0', id]).catch(() => undefined);
        }
        await withLock('image-build', async () => {
          await podman(['rmi', GUIDE_IMAGE]).catch(() => undefined);
          await pruneUnnamedImages();
        });
      })(),
      cluster?.stop(),
      redis?.stop(),
    ]);
    if (base) rmSync(base, { recursive: true, force: true });
  }, 120_000);

  it(
    'When the block of "Without Docker" runs in a fresh checkout, then an ingress and a worker of the compiled dist/ serve a command and project it',
    async () => {
      const port = await freePort();
      await blockServesACommand(
        'Without Docker',
        {
          '<32+ characters>': jwtSecret,
          "<Redis's requirepass>": redis.password!,
          'redis.internal:6379': `127.0.0.1:${redis.port}`,
        },
        port,
        operatorShell(service(port)),
      );
    },
    START_TIMEOUT_MS + 120_000,
  );

  it(
    'When the rebuild commands "from a checkout" run (the projections, the users projection alone as on upgrade, the snapshots), then each ends with its rebuild done',
    async () => {
      const fromACheckout = ['Rebuilding projections', 'Rebuilding snapshots'].flatMap((heading) =>
        guideBlocks(heading)
          .join('\n')
          .split('\n')
          .filter((line) => line.startsWith('npm run ')),
      );
      expect(fromACheckout).toHaveLength(3);
      // The upgrade's step 2 runs the same command as the users line.
      expect(guideProse('Upgrading to the partitioned users projection')).toContain(
        'Run `npm run projections:rebuild -- users`',
      );
      const env = operatorShell({ REDIS_URL: redis.url, REDIS_PASSWORD: redis.password! });
      const outputs: string[] = [];
      for (const line of fromACheckout) {
        const result = await run('bash', ['-c', `set -euo pipefail\n${line}`], { cwd: checkout, env });
        if (result.code !== 0)
          throw new Error(`${line} exited ${result.code}:\n${result.stdout}\n${result.stderr}`);
        outputs.push(result.stdout);
      }
      expect(outputs[0]).toContain('"message":"projection rebuilt"');
      expect(outputs[1]).toContain('"message":"projection rebuilt"');
      expect(outputs[1]).toContain('"projection":"users"');
      expect(outputs[2]).toContain('"message":"snapshots rebuilt"');
    },
    START_TIMEOUT_MS,
  );

  it(
    'When the block of "On Redis Cluster" runs against a cluster with a password, then its ingress and worker serve a command and project it',
    async () => {
      const password = randomUUID();
      cluster = await startLocalRedisCluster({ password });
      const port = await freePort();
      await blockServesACommand(
        'On Redis Cluster',
        { '10.0.0.1:6379,10.0.0.2:6379,10.0.0.3:6379': cluster.nodeList },
        port,
        operatorShell({
          ...service(port),
          NODE_ENV: 'production',
          JWT_SECRET: jwtSecret,
          REDIS_PASSWORD: password,
        }),
      );
    },
    START_TIMEOUT_MS,
  );

  it(
    'When the block of "Container image" runs, then the image is built and its ingress and worker containers serve a command and project it',
    async () => {
      await ensureBaseImage();
      const port = await freePort();
      const work = path.join(base, 'build');
      mkdirSync(work);
      writeFileSync(
        path.join(checkout, 'service.env'),
        [
          `JWT_SECRET=${jwtSecret}`,
          `REDIS_PASSWORD=${redis.password!}`,
          `ADMIN_EMAIL=${ADMIN.email}`,
          `ADMIN_PASSWORD=${ADMIN.password}`,
          '',
        ].join('\n'),
      );
      // Under the lock the image tests build and prune under: a prune by another test file while
      // this build stood on a cached stage removed that stage ("image not known", a CI run).
      await withLock('image-build', () =>
        blockServesACommand(
          'Container image',
          { 'redis.internal:6379': `127.0.0.1:${redis.port}` },
          port,
          operatorShell({
            PORT: String(port),
            HOST: '127.0.0.1',
            FTS_LABEL: label,
            FTS_BUILD_ARGS: machineBuildArgs(work).join(' '),
          }),
        ),
      );
    },
    START_TIMEOUT_MS + 120_000,
  );
});
