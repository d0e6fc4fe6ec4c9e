import { readFileSync } from 'node:fs';
import path from 'node:path';

import { SETTINGS } from '../../shared/config/settings';

/** A file's text with its line breaks as spaces, so a reflowed paragraph still matches. */
const read = (file: string) =>
  readFileSync(path.resolve(__dirname, '../..', file), 'utf8').replace(/\s+/g, ' ');
const defaultOf = (env: string): number => {
  const value = SETTINGS.find((row) => row.env === env)?.default;
  if (typeof value !== 'number') throw new Error(`${env} has no plain number default`);
  return value;
};
/** The request connections' command timeout (shared/redis/connections.ts), which bounds each round trip. */
const COMMAND_TIMEOUT_S = 2;

describe('The documented bound on how long a command waits', () => {
  // The lock's last attempt, then the append: two round trips beside LOCK_WAIT_MS.
  const local = defaultOf('LOCK_WAIT_MS') / 1000 + 2 * COMMAND_TIMEOUT_S;
  const replicated = local + (2 * defaultOf('WRITE_DURABILITY_TIMEOUT_MS')) / 1000;

  it('When the operators guide states the bound, then it is the sum of the settings defaults', () => {
    expect(read('docs/operators.md')).toContain(
      `a team command answers within ${local} s (2 s + 2 s + 2 s), ${replicated} s with \`replicated\``,
    );
    expect(read('shared/redis/connections.ts')).toContain(`COMMAND_TIMEOUT_MS = ${COMMAND_TIMEOUT_S}_000;`);
  });

  it('When the README points to the bound, then it gives the same figure', () => {
    expect(read('README.md')).toContain(`(${local} s with the defaults)`);
  });
});
