import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

import { format, resolveConfig } from 'prettier';

import { withConfigurationTable } from './lib/configuration-table';

/**
 * `npm run docs:config`: writes the configuration table of docs/operators.md from the rows of
 * shared/config/settings.ts, between its two marker lines, and lets prettier format the rest of the
 * file. Commit the result; a unit test fails while the guide's table differs from the rows.
 */
async function main(): Promise<void> {
  const target = path.resolve(__dirname, '..', 'docs', 'operators.md');
  const options = (await resolveConfig(target)) ?? {};
  const text = await format(withConfigurationTable(readFileSync(target, 'utf8')), {
    ...options,
    filepath: target,
  });
  writeFileSync(target, text);
  process.stdout.write(`wrote the configuration table of ${path.relative(process.cwd(), target)}\n`);
}

void main();
