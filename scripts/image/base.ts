import { createReadStream, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { homedir } from 'node:os';
import path from 'node:path';

import { isRunning } from '../lib/run-stop';
import { imageLabel, podman, run } from './podman';

/**
 * The Dockerfile's base image (`node:24-bookworm-slim`), built here from Debian's packages where no
 * registry can be pulled from: a debootstrapped bookworm with ca-certificates, Node's release binary
 * and npm from the npm registry (each pinned and checked against its integrity), and the `node` user
 * (uid 1000), as the official image has them. It is tagged with the official image's name, so the
 * project's Dockerfile builds on it unchanged. An image already stored under that name (the real one,
 * pulled) is used as it is.
 */
const PROJECT_ROOT = path.resolve(__dirname, '..', '..');
/** Where the image tooling keeps what outlives a run: npm's downloads, the locks. */
export const CACHE_DIR = path.join(
  process.env.XDG_CACHE_HOME ?? path.join(homedir(), '.cache'),
  'fantasy-team-service',
);

/** npm as the official Node 24 image carries it, from the npm registry. */
const NPM_VERSION = '11.19.1';
const NPM_INTEGRITY =
  'sha512-ztsxKxt/kkIaAs+2i0GU6I+DRmUdrNasxTZKJe9TCdSjKxlhah/4r/hl5ygMD6XAg1qZ9c2TNomR4qgOydp10g==';
const DEBIAN_SUITE = 'bookworm';
const DEBIAN_MIRROR = process.env.DEBIAN_MIRROR ?? 'http://deb.debian.org/debian';
/** Marks a base built here, with what it was built from: a change of pin builds it again. */
const BASE_LABEL = 'fantasy-team-service.local-base';

/** The image the Dockerfile builds on: its `FROM ... AS runtime`, with the registry's full name. */
export function dockerfileBase(): string {
  const from = /^FROM\s+(\S+)\s+AS\s+runtime$/m.exec(
    readFileSync(path.join(PROJECT_ROOT, 'Dockerfile'), 'utf8'),
  );
  if (!from) throw new Error('the Dockerfile has no `FROM <image> AS runtime` line');
  const name = from[1]!;
  return name.includes('/') ? name : `docker.io/library/${name}`;
}

/** Node's pinned release as .ci/run names it (one pin for CI's node and the image's). */
function nodePin(): { version: string; packageName: string; integrity: string } {
  const ciRun = readFileSync(path.join(PROJECT_ROOT, '.ci', 'run'), 'utf8');
  const value = (name: string) => {
    const found = new RegExp(`^${name}=(\\S+)$`, 'm').exec(ciRun);
    if (!found) throw new Error(`.ci/run has no ${name}= line`);
    return found[1]!;
  };
  return {
    version: value('NODE_VERSION'),
    packageName: value('NODE_PACKAGE'),
    integrity: value('NODE_INTEGRITY'),
  };
}

async function checked(command: string, args: readonly string[], cwd?: string): Promise<string> {
  const result = await run(command, args, cwd ? { cwd } : {});
  if (result.code !== 0)
    throw new Error(`${command} ${args.join(' ')} exited ${result.code}: ${result.stderr}`);
  return result.stdout;
}

/** `npm pack name@version` into `folder`, refusing a tarball whose integrity is not `integrity`. */
async function packPinned(folder: string, spec: string, integrity: string): Promise<string> {
  const [packed] = JSON.parse(await checked('npm', ['pack', '--json', '--silent', spec], folder)) as {
    filename: string;
    integrity: string;
  }[];
  if (!packed || packed.integrity !== integrity) {
    throw new Error(`${spec} has integrity ${packed?.integrity}, expected ${integrity}`);
  }
  return path.join(folder, packed.filename);
}

async function buildBase(image: string, label: string): Promise<void> {
  mkdirSync(CACHE_DIR, { recursive: true });
  const work = await mkdtemp(path.join(CACHE_DIR, 'image-base-'));
  const root = path.join(work, 'root');
  try {
    await checked('debootstrap', [
      '--variant=minbase',
      '--include=ca-certificates',
      DEBIAN_SUITE,
      root,
      DEBIAN_MIRROR,
    ]);
    const node = nodePin();
    const nodeTarball = await packPinned(work, `${node.packageName}@${node.version}`, node.integrity);
    await checked('tar', [
      '-xzf',
      nodeTarball,
      '-C',
      path.join(root, 'usr', 'local'),
      '--strip-components=1',
      'package/bin/node',
    ]);
    const npmHome = path.join(root, 'usr', 'local', 'lib', 'node_modules', 'npm');
    mkdirSync(npmHome, { recursive: true });
    const npmTarball = await packPinned(work, `npm@${NPM_VERSION}`, NPM_INTEGRITY);
    await checked('tar', ['-xzf', npmTarball, '-C', npmHome, '--strip-components=1']);
    await checked('ln', [
      '-s',
      '../lib/node_modules/npm/bin/npm-cli.js',
      path.join(root, 'usr/local/bin/npm'),
    ]);
    await checked('ln', [
      '-s',
      '../lib/node_modules/npm/bin/npx-cli.js',
      path.join(root, 'usr/local/bin/npx'),
    ]);
    await checked('chroot', [root, 'groupadd', '--gid', '1000', 'node']);
    await checked('chroot', [
      root,
      'useradd',
      '--uid',
      '1000',
      '--gid',
      'node',
      '--shell',
      '/bin/bash',
      '--create-home',
      'node',
    ]);
    // What the slim image leaves out: package caches, documentation and manual pages.
    for (const folder of [
      'var/cache/apt',
      'var/lib/apt/lists',
      'usr/share/doc',
      'usr/share/man',
      'usr/share/info',
    ]) {
      rmSync(path.join(root, folder), { recursive: true, force: true });
      mkdirSync(path.join(root, folder), { recursive: true });
    }
    const archive = path.join(work, 'root.tar');
    await checked('tar', ['-C', root, '-cf', archive, '.']);
    await podman(
      [
        'import',
        '--change',
        'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
        '--change',
        `ENV NODE_VERSION=${node.version}`,
        '--change',
        `LABEL ${BASE_LABEL}=${label}`,
        '--change',
        'CMD ["node"]',
        '-',
        image,
      ],
      createReadStream(archive),
    );
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/** Holds a lock folder while `work` runs, so that two test files do not build the same image at once. */
export async function withLock<T>(name: string, work: () => Promise<T>): Promise<T> {
  const lock = path.join(CACHE_DIR, `${name}.lock`);
  mkdirSync(CACHE_DIR, { recursive: true });
  for (;;) {
    try {
      mkdirSync(lock);
      writeFileSync(path.join(lock, 'pid'), String(process.pid));
      break;
    } catch {
      const holder = Number(
        existsSync(path.join(lock, 'pid')) ? readFileSync(path.join(lock, 'pid'), 'utf8') : NaN,
      );
      if (Number.isInteger(holder) && !isRunning(holder)) rmSync(lock, { recursive: true, force: true });
      else await new Promise((resolve) => setTimeout(resolve, 500));
    }
  }
  try {
    return await work();
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}

/**
 * Makes sure the Dockerfile's base image is in podman's store: one built here earlier from the same
 * pins, or one pulled. Builds it (about a minute) otherwise. Resolves with its name.
 */
export async function ensureBaseImage(): Promise<string> {
  const image = dockerfileBase();
  const node = nodePin();
  const label = `debian-${DEBIAN_SUITE}+node-${node.version}+npm-${NPM_VERSION}`;
  return withLock('image-base', async () => {
    const stored = await imageLabel(image, BASE_LABEL);
    // A pulled image (no label) is used as it is; one built here is rebuilt when its pins changed.
    const upToDate = stored === null || stored === label;
    if (!upToDate) await buildBase(image, label);
    return image;
  });
}

if (require.main === module) {
  ensureBaseImage().then(
    (image) => process.stdout.write(`${image}\n`),
    (error: Error) => {
      process.stderr.write(`${error.message}\n`);
      process.exit(1);
    },
  );
}
