import { readFileSync } from 'node:fs';
import path from 'node:path';

import { PROJECT_ROOT } from './processes';

/** The text of the section of docs/operators.md headed `### heading`, up to the next `###`. */
export function guideSection(heading: string): string {
  const guide = readFileSync(path.join(PROJECT_ROOT, 'docs', 'operators.md'), 'utf8');
  const start = guide.indexOf(`### ${heading}\n`);
  if (start < 0) throw new Error(`docs/operators.md has no section "${heading}"`);
  return guide.slice(start, guide.indexOf('\n### ', start + 1));
}

/** The ```sh blocks of the section of docs/operators.md headed `heading`, in order, unindented. */
export function guideBlocks(heading: string): string[] {
  return [...guideSection(heading).matchAll(/^ *```sh\n([\s\S]*?)^ *```$/gm)].map((block) =>
    block[1]!
      .split('\n')
      .map((line) => line.replace(/^ {3}/, ''))
      .join('\n'),
  );
}

/** The section's text with every run of white space as one space, for sentences a test follows. */
export function guideProse(heading: string): string {
  return guideSection(heading).replace(/\s+/g, ' ');
}
