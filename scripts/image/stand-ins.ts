import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';

import { parse } from 'yaml';

import { ensureBaseImage, withLock } from './base';
import { imageLabel, podman, pruneUnnamedImages } from './podman';

const PROJECT_ROOT = path.resolve(__dirname, '..', '..');
/** Marks a stand-in built here, with a digest of its Containerfile: a changed file builds it again. */
const STAND_IN_LABEL = 'fantasy-team-service.stand-in';

/**
 * The compose services whose images no registry here can give, and the Containerfile that stands in
 * for each (Debian's package on the local base). Jaeger and Grafana have no Debian package: the
 * compose test does not start them (docs/operators.md, "Deployment").
 */
export const STAND_INS = { redis: 'redis', proxy: 'nginx', prometheus: 'prometheus' } as const;

/** The image docker-compose.yml names for `service`, with the registry's full name. */
export function composeImage(service: keyof typeof STAND_INS): string {
  const compose = parse(readFileSync(path.join(PROJECT_ROOT, 'docker-compose.yml'), 'utf8'), {
    merge: true,
  }) as {
    services: Record<string, { image?: string }>;
  };
  const image = compose.services[service]?.image;
  if (!image) throw new Error(`docker-compose.yml names no image for ${service}`);
  const parts = image.split('/');
  if (parts.length === 1) return `docker.io/library/${image}`;
  const registry = parts[0]!;
  return registry.includes('.') || registry.includes(':') || registry === 'localhost'
    ? image
    : `docker.io/${image}`;
}

/**
 * Builds, where missing or changed, the stand-in of every STAND_INS service under the name the
 * compose file gives it, so that compose starts them as it would the real ones. An image already
 * stored under that name and not built here (the real one, pulled) is used as it is.
 */
export async function ensureStandIns(): Promise<void> {
  await ensureBaseImage();
  // The build lock: a prune while another build runs could remove that build's unnamed stage.
  await withLock('image-build', async () => {
    for (const [service, name] of Object.entries(STAND_INS) as [keyof typeof STAND_INS, string][]) {
      const file = path.join(__dirname, 'stand-ins', `${name}.Containerfile`);
      const digest = createHash('sha256').update(readFileSync(file)).digest('hex').slice(0, 16);
      const image = composeImage(service);
      const stored = await imageLabel(image, STAND_IN_LABEL);
      // A pulled image (no label) is used as it is; a stand-in is rebuilt when its Containerfile changed.
      if (stored === null || stored === digest) continue;
      await podman([
        'build',
        '--pull=never',
        '--label',
        `${STAND_IN_LABEL}=${digest}`,
        '--tag',
        image,
        '--file',
        file,
        path.dirname(file),
      ]);
    }
    await pruneUnnamedImages();
  });
}
