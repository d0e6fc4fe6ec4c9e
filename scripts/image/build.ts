import { execFileSync } from 'node:child_process';
import { createHash, type Hash } from 'node:crypto';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

import { CACHE_DIR, ensureBaseImage, withLock } from './base';
import { imageLabel, podman, pruneUnnamedImages } from './podman';

const PROJECT_ROOT = path.resolve(__dirname, '..', '..');

/** The tag the image tests build and run. */
export const TEST_IMAGE = 'localhost/fantasy-team-service:test';

/**
 * Files a working copy holds that must never reach the image, planted in the build context the way
 * an operator's checkout has them: .dockerignore must keep every one out (the image test lists the
 * image's files and looks for each).
 */
export const PLANTED = {
  '.env': 'JWT_SECRET=planted-secret-from-a-local-env-file-0123456789\n',
  'var/redis/appendonly.aof': 'planted redis data\n',
  '.git/HEAD': 'ref: refs/heads/planted\n',
  'node_modules/planted-dev-package/package.json': '{"name":"planted-dev-package","version":"1.0.0"}\n',
  'dist/planted-stale-build.js': 'throw new Error("a stale build output reached the image");\n',
} as const;

/**
 * Copies the repository's tracked files, as they are in the working tree (a clean checkout, plus
 * uncommitted edits to tracked files), into `destination`; `digest` is fed each path and content.
 */
export function copyTrackedFiles(destination: string, digest?: Hash): void {
  const tracked = execFileSync('git', ['ls-files', '-z'], { cwd: PROJECT_ROOT, encoding: 'utf8' })
    .split('\0')
    .filter((file) => file !== '')
    .sort();
  for (const file of tracked) {
    // A tracked file deleted in the working tree is not in a checkout of it either.
    try {
      cpSync(path.join(PROJECT_ROOT, file), path.join(destination, file), { recursive: false });
      digest
        ?.update(`${file}\0`)
        .update(readFileSync(path.join(destination, file)))
        .update('\0');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    }
  }
}

/**
 * The build context: the tracked files and the PLANTED ones; `sources` digests the tracked files and
 * the base image's id.
 */
function buildContext(baseId: string): { context: string; sources: string } {
  const context = mkdtempSync(path.join(tmpdir(), 'fts-image-context-'));
  const sources = createHash('sha256').update(`${baseId}\0`);
  copyTrackedFiles(context, sources);
  for (const [file, content] of Object.entries(PLANTED)) {
    mkdirSync(path.dirname(path.join(context, file)), { recursive: true });
    writeFileSync(path.join(context, file), content);
  }
  return { context, sources: sources.digest('hex').slice(0, 32) };
}

/**
 * Where the machine's TLS traffic passes through an intercepting proxy (NODE_EXTRA_CA_CERTS names
 * its bundle), npm inside the build trusts that bundle too. Bind mounts of the build only: nothing
 * of them is kept in a layer.
 */
function machineTrust(work: string): string[] {
  const bundle = process.env.NODE_EXTRA_CA_CERTS;
  if (!bundle) return [];
  const npmrc = path.join(work, 'npmrc');
  writeFileSync(npmrc, 'cafile=/run/machine-ca/bundle.crt\n');
  return [
    '--volume',
    `${bundle}:/run/machine-ca/bundle.crt:ro`,
    '--volume',
    `${npmrc}:/usr/local/etc/npmrc:ro`,
  ];
}

/**
 * What `podman build` adds on this machine, and only that: npm's download cache kept between builds,
 * and the machine's trust (above); `work` is a scratch folder of the caller's.
 */
export function machineBuildArgs(work: string): string[] {
  const npmCache = path.join(CACHE_DIR, 'image-npm-cache');
  mkdirSync(npmCache, { recursive: true });
  return ['--volume', `${npmCache}:/root/.npm`, ...machineTrust(work)];
}

/** Labels the test image with a digest of the sources it was built from. */
const SOURCES_LABEL = 'fantasy-team-service.sources';

/**
 * Builds the project's Dockerfile, unchanged, on the base image (built here once, cached) from a
 * clean build context, and tags it TEST_IMAGE; an image already built from the same sources is
 * used as it is (each image test file asks for it). npm's download cache is kept between builds;
 * the build stage's image is removed afterwards, so repeated builds do not fill the disk.
 */
export async function buildTestImage(): Promise<string> {
  const base = await ensureBaseImage();
  const baseId = (await podman(['image', 'inspect', '--format', '{{.Id}}', base])).trim();
  return withLock('image-build', async () => {
    const { context, sources } = buildContext(baseId);
    if ((await imageLabel(TEST_IMAGE, SOURCES_LABEL)) === sources) {
      rmSync(context, { recursive: true, force: true });
      return TEST_IMAGE;
    }
    const work = mkdtempSync(path.join(tmpdir(), 'fts-image-build-'));
    try {
      await podman([
        'build',
        '--pull=never',
        ...machineBuildArgs(work),
        '--label',
        `${SOURCES_LABEL}=${sources}`,
        '--tag',
        TEST_IMAGE,
        context,
      ]);
      await pruneUnnamedImages();
      return TEST_IMAGE;
    } finally {
      rmSync(context, { recursive: true, force: true });
      rmSync(work, { recursive: true, force: true });
    }
  });
}
