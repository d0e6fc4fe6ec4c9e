import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

import { generatedFiles } from './generated-files';

/**
 * `npm run client:generate`: regenerates the client's types from docs/openapi.json (run it after
 * `npm run openapi`) and writes them under clients/typescript/src/generated. Commit the result.
 */
async function main(): Promise<void> {
  const root = path.resolve(__dirname, '..');
  const document: unknown = JSON.parse(readFileSync(path.resolve(root, '../../docs/openapi.json'), 'utf8'));
  for (const [file, text] of Object.entries(await generatedFiles(document))) {
    writeFileSync(path.join(root, file), text);
    process.stdout.write(`wrote ${path.relative(process.cwd(), path.join(root, file))}\n`);
  }
}

void main();
