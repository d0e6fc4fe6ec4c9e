import { readdirSync } from 'node:fs';
import path from 'node:path';

import type { BenchModule } from './lib/report';
import { runBenches } from './lib/runner';

/**
 * `npm run bench`: every bench/*.bench.ts in turn, or only those named on the command line
 * (`npm run bench -- current-user`), then one combined table (saved first in RESULTS.md after a
 * run of every bench).
 */
const SUFFIX = '.bench.ts';
const only = process.argv.slice(2);
const names = readdirSync(__dirname)
  .filter((file) => file.endsWith(SUFFIX))
  .map((file) => file.slice(0, -SUFFIX.length))
  .filter((name) => only.length === 0 || only.includes(name))
  .sort();

if (names.length === 0) {
  process.stderr.write(`[bench] no bench/*.bench.ts matches: ${only.join(', ')}\n`);
  process.exitCode = 1;
} else {
  void runBenches(
    names.map((name) => ({
      name,
      load: async () => (await import(path.join(__dirname, name + SUFFIX))) as BenchModule,
    })),
    { saveSummary: only.length === 0 },
  );
}
