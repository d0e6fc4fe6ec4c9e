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

/**
 * What the guide's "As TypeScript" part says a project made by `npm init -y` and `tsc --init` needs:
 * the packages its `npm install --save-dev typescript ...` line adds besides TypeScript, and the
 * tsconfig.json lines its table changes (what `tsc --init` wrote, what to write instead).
 */
export function guideTypeScriptSettings(): {
  packages: string[];
  edits: [from: string, to: string][];
} {
  const start = INTEGRATORS_GUIDE.indexOf('\n### The walk-through as TypeScript\n');
  const section =
    start < 0 ? '' : INTEGRATORS_GUIDE.slice(start, INTEGRATORS_GUIDE.indexOf('\n### ', start + 1));
  const install = /npm install --save-dev typescript ([^\n]+)/.exec(section)?.[1];
  const edits = [...section.matchAll(/^\| `([^`]+)` +\| `([^`]+)` +\|$/gm)].map(
    ([, from = '', to = '']): [string, string] => [from, to],
  );
  if (!install || edits.length === 0)
    throw new Error('docs/integrators.md: "The walk-through as TypeScript" names no packages or edits');
  return { packages: install.trim().split(/\s+/), edits };
}
