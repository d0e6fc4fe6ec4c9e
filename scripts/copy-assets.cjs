// Copies non-TypeScript runtime assets (Lua scripts) next to the compiled JavaScript,
// so `node dist/...` finds them at the same relative path as the sources do.
'use strict';
const fs = require('node:fs');
const path = require('node:path');

const root = path.resolve(__dirname, '..');
for (const top of ['shared', 'ingress', 'workers']) {
  const from = path.join(root, top);
  if (!fs.existsSync(from)) continue;
  fs.cpSync(from, path.join(root, 'dist', top), {
    recursive: true,
    filter: (src) => fs.statSync(src).isDirectory() || src.endsWith('.lua'),
  });
}
