import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const ROOT = path.resolve(__dirname, '../..');

/** File -> what it imports; a file under node_modules maps to null (dpdm does not walk packages). */
export type DependencyTree = Record<string, readonly { readonly id: string | null }[] | null>;

/**
 * dpdm's tree of everything `entries` (paths from the project root) import. `runtimeOnly` (`-T`)
 * drops type-only imports: what the compiled JavaScript still loads.
 */
export async function dependencyTree(
  entries: readonly string[],
  runtimeOnly: boolean,
): Promise<DependencyTree> {
  const folder = await mkdtemp(path.join(tmpdir(), 'dependency-tree-'));
  const output = path.join(folder, 'tree.json');
  try {
    const dpdm = require.resolve('dpdm/lib/bin/dpdm.js');
    const flags = ['--no-tree', '--no-warning', '--no-circular', '--no-progress', '-o', output];
    await promisify(execFile)(
      process.execPath,
      [dpdm, ...flags, ...(runtimeOnly ? ['-T'] : []), ...entries],
      {
        cwd: ROOT,
        maxBuffer: 64 * 1024 * 1024,
      },
    );
    return (JSON.parse(await readFile(output, 'utf8')) as { tree: DependencyTree }).tree;
  } finally {
    await rm(folder, { recursive: true, force: true });
  }
}
