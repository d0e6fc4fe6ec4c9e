import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

import { generatedFiles } from './generated-files';

/**
 * `npm run client:generate`: regenerates the client's types from docs/openapi.json (run it after
 * `npm run openapi`) and writes them under clients/typescript/src/generated. Commit the result.
 * With `--check` it writes nothing and fails, naming the files, while the committed ones differ.
 */
async function main(check: boolean): Promise<void> {
  const root = path.resolve(__dirname, '..');
  const document: unknown = JSON.parse(readFileSync(path.resolve(root, '../../docs/openapi.json'), 'utf8'));
  const stale: string[] = [];
  for (const [file, text] of Object.entries(await generatedFiles(document))) {
    const target = path.join(root, file);
    if (check) {
      if (readFileSync(target, 'utf8') !== text) stale.push(path.relative(process.cwd(), target));
      continue;
    }
    writeFileSync(target, text);
    process.stdout.write(`wrote ${path.relative(process.cwd(), target)}\n`);
  }
  if (stale.length) {
    process.stderr.write(
      `not generated from docs/openapi.json: ${stale.join(', ')}; run npm run client:generate\n`,
    );
    process.exitCode = 1;
  }
}

void main(process.argv.includes('--check'));
