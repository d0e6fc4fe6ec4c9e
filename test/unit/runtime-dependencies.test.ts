import { readFileSync } from 'node:fs';
import path from 'node:path';

import { dependencyTree } from '../helpers/dependency-tree';

const ROOT = path.resolve(__dirname, '../..');

/**
 * What the image runs (Dockerfile, docs/operators.md): the two processes, and the maintenance
 * scripts an operator runs in a worker container (`docker compose run --rm worker node dist/scripts/...`).
 */
const IMAGE_ENTRY_POINTS = [
  'ingress/main.ts',
  'workers/main.ts',
  'scripts/rebuild-projections.ts',
  'scripts/rebuild-snapshots.ts',
] as const;

/** `node_modules/@scope/name/lib/x.js` -> `@scope/name`; nested copies name their outermost package. */
function packageOf(id: string): string {
  const [first, second] = id.slice(id.indexOf('node_modules/') + 'node_modules/'.length).split('/');
  return first!.startsWith('@') ? `${first}/${second}` : first!;
}

/**
 * The image installs `dependencies` only (`npm prune --omit=dev`): a package that the service's code
 * loads but that is listed under `devDependencies` is found by every test on a developer's machine
 * and missing from the image, which then fails at its first `require` (cluster-key-slot did, issue 40).
 */
describe('What the image runs, it installs', () => {
  it('When the code an image entry point loads at run time names a package, then package.json lists it under dependencies', async () => {
    const manifest = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as {
      dependencies: Record<string, string>;
    };
    const tree = await dependencyTree(IMAGE_ENTRY_POINTS, true);
    const loaded = new Set(
      Object.entries(tree)
        .filter(([file]) => !file.includes('node_modules'))
        .flatMap(([, imports]) => imports ?? [])
        .map((imported) => imported.id)
        .filter((id): id is string => id !== null && id.includes('node_modules/'))
        .map(packageOf),
    );
    expect(loaded.size).toBeGreaterThan(10);
    expect([...loaded].filter((name) => !(name in manifest.dependencies)).sort()).toEqual([]);
  }, 60_000);
});
