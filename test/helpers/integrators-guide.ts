import { readFileSync } from 'node:fs';
import path from 'node:path';

import { PROJECT_ROOT } from './processes';

/** docs/integrators.md, as a reader gets it. */
export const INTEGRATORS_GUIDE = readFileSync(path.join(PROJECT_ROOT, 'docs', 'integrators.md'), 'utf8');

/** The guide's typed-client walk-through: the first `js` block of the "Typed client" section. */
export function guideWalkThrough(): string {
  const start = INTEGRATORS_GUIDE.indexOf('\n## Typed client\n');
  const block = start < 0 ? undefined : /```js\n([\s\S]*?)```/.exec(INTEGRATORS_GUIDE.slice(start))?.[1];
  if (!block) throw new Error('docs/integrators.md: no js block under "## Typed client"');
  return block;
}
