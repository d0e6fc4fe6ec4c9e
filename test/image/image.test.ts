/**
 * The image operators run (Dockerfile), built here on a locally built base (scripts/image/base.ts)
 * from a clean build context, then run as docs/operators.md says: non-root, read-only, against a
 * real Redis. `npm run test:image` runs this folder; `npm test` includes it; `.ci/run` installs podman.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

import { dockerfileBase } from '../../scripts/image/base';
import { buildTestImage, PLANTED } from '../../scripts/image/build';
import { podman, run } from '../../scripts/image/podman';
import { freePort } from '../../scripts/lib/free-port';
import { testRedisEnv, uniquePrefix } from '../helpers/app-fixture';
import { type Container, removeContainers, runContainer, stopContainer } from '../helpers/containers';
import { bearerToken, commandBody, exchange } from '../helpers/http-client';
import { eventually, PROJECT_ROOT } from '../helpers/processes';

/**
 * What the service adds to its base image (compiled code and production node_modules), in bytes
 * as podman counts them: 93 MB when this was set (issue 40). docs/operators.md, "The image".
 */
const IMAGE_BUDGET_OVER_BASE = 120_000_000;
const JWT_SECRET = 'image-test-jwt-secret-0123456789-abcdefghij';
const ADMIN = { email: 'image-admin@example.com', password: 'image-admin-password' };
/** The default of SHUTDOWN_TIMEOUT_MS: SIGTERM must end each container within it. */
const SHUTDOWN_TIMEOUT_MS = 10_000;

const WORKER = ['node', 'dist/workers/main.js'] as const;

interface LockEntry {
  readonly dev?: boolean;
  readonly devOptional?: boolean;
  readonly optional?: boolean;
  /** A workspace (clients/typescript): the image neither needs nor holds it. */
  readonly link?: boolean;
}

/** Every path in the image, from `podman export` of a container made from it (never started). */
async function imageFiles(image: string): Promise<{ paths: string[]; holds: (text: string) => boolean }> {
  const name = `fts-files-${randomUUID().slice(0, 8)}`;
  const folder = mkdtempSync(path.join(tmpdir(), 'fts-image-files-'));
  const archive = path.join(folder, 'image.tar');
  await podman(['create', '--name', name, image]);
  try {
    await podman(['export', '--output', archive, name]);
    const listing = await run('tar', ['-tf', archive]);
    const exported = readFileSync(archive);
    return {
      paths: listing.stdout
        .split('\n')
        .filter((line) => line !== '')
        .map((file) => file.replace(/^\.?\//, '')),
      holds: (text) => exported.includes(text),
    };
  } finally {
    await podman(['rm', '--force', name]);
    rmSync(folder, { recursive: true, force: true });
  }
}

describe('The image (Dockerfile), built and run', () => {
  let image: string;

  beforeAll(async () => {
    image = await buildTestImage();
  }, 900_000);

  describe('What it holds', () => {
    let files: { paths: string[]; holds: (text: string) => boolean };
    beforeAll(async () => {
      files = await imageFiles(image);
    }, 120_000);

    it('When it runs, then it runs as the node user (uid 1000), never as root', async () => {
      expect((await podman(['image', 'inspect', '--format', '{{.Config.User}}', image])).trim()).toBe('node');
      const id = await podman(['run', '--rm', '--network', 'none', image, 'id', '-u']);
      expect(id.trim()).toBe('1000');
    });

    it('When its files are listed, then /app holds package.json, dist/ and node_modules/ only: no test, .env, var/, .git or stale build', () => {
      const app = files.paths.filter((file) => file.startsWith('app/'));
      expect([...new Set(app.map((file) => file.split('/')[1]).filter(Boolean))].sort()).toEqual([
        'dist',
        'node_modules',
        'package.json',
      ]);
      const planted = Object.keys(PLANTED).filter((file) =>
        app.some((inImage) => inImage.startsWith(`app/${file}`)),
      );
      expect(planted).toEqual([]);
      expect(
        app.filter(
          (file) => /^app\/(test|bench|\.git|var)\//.test(file) || /^app\/dist\/.*\.test\.js$/.test(file),
        ),
      ).toEqual([]);
      // The planted .env's secret is nowhere in the image, in no file under any name.
      expect(files.holds(PLANTED['.env'].split('=')[1]!.trim())).toBe(false);
    });

    it('When its node_modules are compared with the lockfile, then they hold every production package and no devDependency', () => {
      const lock = JSON.parse(readFileSync(path.join(PROJECT_ROOT, 'package-lock.json'), 'utf8')) as {
        packages: Record<string, LockEntry>;
      };
      const manifest = JSON.parse(readFileSync(path.join(PROJECT_ROOT, 'package.json'), 'utf8')) as {
        devDependencies: Record<string, string>;
      };
      const installed = new Set(
        files.paths
          .filter((file) => /^app\/(node_modules\/(@[^/]+\/)?[^/]+\/)+package\.json$/.test(file))
          .map((file) => file.slice('app/'.length, -'/package.json'.length))
          // a package's own nested package.json files (e.g. dist/esm/package.json) are not packages
          .filter((folder) => /(^|\/)node_modules\/(@[^/]+\/)?[^/]+$/.test(folder)),
      );
      const isDirectDevDependency = (folder: string) =>
        folder.split('node_modules/').length === 2 &&
        folder.slice('node_modules/'.length) in manifest.devDependencies;
      const devOnly = [...installed].filter((folder) => {
        const entry = lock.packages[folder];
        return entry?.dev === true || (entry?.devOptional === true && isDirectDevDependency(folder));
      });
      const unknown = [...installed].filter((folder) => !(folder in lock.packages));
      const missing = Object.entries(lock.packages)
        .filter(
          ([folder, entry]) =>
            folder.startsWith('node_modules/') &&
            !entry.dev &&
            !entry.devOptional &&
            !entry.optional &&
            !entry.link,
        )
        .map(([folder]) => folder)
        .filter((folder) => !installed.has(folder));
      expect({ devOnly, unknown, missing }).toEqual({ devOnly: [], unknown: [], missing: [] });
      expect(installed.size).toBeGreaterThan(100);
    });

    it(`When its size is measured, then the service adds at most ${IMAGE_BUDGET_OVER_BASE / 1e6} MB to its base`, async () => {
      const size = async (name: string) =>
        Number((await podman(['image', 'inspect', '--format', '{{.Size}}', name])).trim());
      const [own, base] = await Promise.all([size(image), size(dockerfileBase())]);
      expect(own - base).toBeLessThanOrEqual(IMAGE_BUDGET_OVER_BASE);
    });
  });

  describe('A bad setting', () => {
    it.each([
      [
        'the ingress',
        [] as string[],
        { SHUTDOWN_TIMEOUT_MS: 'soon', JWT_SECRET },
        /^\[ingress\] Invalid configuration: .*SHUTDOWN_TIMEOUT_MS/,
      ],
      [
        'a worker',
        [...WORKER],
        {},
        /^\[worker\] Invalid configuration: JWT_SECRET must be set when NODE_ENV=production/,
      ],
    ])(
      'When %s starts with a bad or missing setting, then it exits 78 with one line naming it',
      async (_role, command, env, line) => {
        const container = runContainer({ image, command, env: { ...testRedisEnv(), ...env } });
        try {
          expect(await container.exited).toBe(78);
          expect(container.stderr()).toMatch(line);
          expect(container.stderr().trimEnd().split('\n')).toHaveLength(1);
          expect(container.stdout()).toBe('');
        } finally {
          await removeContainers(container);
        }
      },
      120_000,
    );
  });

  describe('An ingress and a worker container on one Redis', () => {
    let ingress: Container;
    let worker: Container;
    let baseUrl: string;
    const env = () => ({
      ...testRedisEnv(),
      REDIS_KEY_PREFIX: uniquePrefix(),
      JWT_SECRET,
      ADMIN_EMAIL: ADMIN.email,
      ADMIN_PASSWORD: ADMIN.password,
    });

    beforeAll(async () => {
      const shared = env();
      const port = await freePort();
      baseUrl = `http://127.0.0.1:${port}`;
      ingress = runContainer({ image, env: { ...shared, PORT: String(port), HOST: '127.0.0.1' } });
      worker = runContainer({ image, command: WORKER, env: shared });
      await Promise.all([
        ingress.waitForOutput('"message":"ingress listening"', 120_000),
        worker.waitForOutput('worker ready', 120_000),
      ]);
    }, 300_000);

    afterAll(async () => {
      await removeContainers(ingress, worker);
    });

    it('When /healthz and /readyz are asked, then the ingress answers 200 from a read-only root with no tmpfs', async () => {
      const health = await exchange(baseUrl, 'GET', '/healthz');
      const ready = await exchange(baseUrl, 'GET', '/readyz');
      expect(health).toMatchObject({ ok: true, status: 200, body: { status: 'ok' } });
      expect(ready).toMatchObject({ ok: true, status: 200, body: { status: 'ready' } });
    });

    it('When the ingress accepts a command, then the worker container projects it: a read at its version answers 200', async () => {
      const authorization = await bearerToken(baseUrl, ADMIN.email, ADMIN.password);
      const teamId = randomUUID();
      const created = await exchange(baseUrl, 'POST', '/api/command', {
        authorization,
        body: commandBody('CreateFantasyTeam', { aggregateRootId: teamId, name: 'Image Rovers' }),
      });
      expect(created).toMatchObject({ ok: true, status: 200 });
      const version = (created.ok && (created.body as { version: number }).version) as number;
      let read: Awaited<ReturnType<typeof exchange>> | undefined;
      await eventually(async () => {
        read = await exchange(baseUrl, 'POST', '/api/readmodel', {
          authorization,
          body: { query: { queryType: 'GetFantasyTeam', id: teamId, minVersion: version } },
        });
        return read.ok && read.status === 200;
      }, 60_000);
      expect(read).toMatchObject({
        ok: true,
        status: 200,
        body: { results: [{ id: teamId, name: 'Image Rovers' }] },
      });
    });

    it.each([
      ['the ingress', () => ingress],
      ['the worker', () => worker],
    ])(
      `When %s is sent SIGTERM (podman stop), then it drains and exits 0 within SHUTDOWN_TIMEOUT_MS (${SHUTDOWN_TIMEOUT_MS} ms)`,
      async (_role, container) => {
        const started = Date.now();
        await stopContainer(container(), 30);
        expect(await container().exited).toBe(0);
        expect(Date.now() - started).toBeLessThan(SHUTDOWN_TIMEOUT_MS);
        expect(container().stdout()).toContain('"message":"stopped"');
      },
      60_000,
    );
  });
});
