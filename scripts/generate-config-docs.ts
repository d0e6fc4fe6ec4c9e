import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

import { format, resolveConfig } from 'prettier';

import { withConfigurationTable } from '../shared/config/readme-table';

/**
 * `npm run docs:config`: writes the README's configuration table from the rows of
 * shared/config/settings.ts, between its two marker lines, formatted by prettier. Commit the
 * result; a unit test fails while the README's table differs from the rows.
 */
async function main(): Promise<void> {
  const target = path.resolve(__dirname, '..', 'README.md');
  const options = (await resolveConfig(target)) ?? {};
  const text = await format(withConfigurationTable(readFileSync(target, 'utf8')), {
    ...options,
    filepath: target,
  });
  writeFileSync(target, text);
  process.stdout.write(`wrote the configuration table of ${path.relative(process.cwd(), target)}\n`);
}

void main();
