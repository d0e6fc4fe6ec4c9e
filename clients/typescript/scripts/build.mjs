import { spawnSync } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

/**
 * `npm run build` (and `prepack`): the client as JavaScript with declarations under dist/. One
 * implementation, CommonJS (dist/cjs), and an ES module entry that re-exports it (dist/esm), so that
 * `import` and `require` share one FantasyApiError class (Node's "ES module wrapper" for dual packages).
 */
const root = path.resolve(import.meta.dirname, '..');
const dist = path.join(root, 'dist');
rmSync(dist, { recursive: true, force: true });

const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
const built = spawnSync(process.execPath, [tsc, '-p', path.join(root, 'tsconfig.build.json')], {
  stdio: 'inherit',
});
if (built.status !== 0) process.exit(built.status ?? 1);

// The ES module entry names what the CommonJS one exports (`export *` would add `__esModule`).
const names = Object.keys(createRequire(import.meta.url)(path.join(dist, 'cjs', 'index.js')))
  .filter((name) => name !== '__esModule')
  .sort();
const esm = path.join(dist, 'esm');
mkdirSync(esm);
writeFileSync(path.join(esm, 'index.mjs'), `export { ${names.join(', ')} } from '../cjs/index.js';\n`);
writeFileSync(path.join(esm, 'index.d.mts'), "export * from '../cjs/index.js';\n");
