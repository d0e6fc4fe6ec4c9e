import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';

import { dependencyTree } from '../helpers/dependency-tree';

/**
 * The tree's rule (CONTRIBUTING.md, ADR 0025): the top folders are the processes. `shared/` holds only
 * what both the ingress and the worker run; what one process alone runs lives under its own folder,
 * and neither process's folder imports the other's.
 */
const ROOT = path.resolve(__dirname, '../..');
const ENTRY = { ingress: 'ingress/main.ts', worker: 'workers/main.ts' } as const;

/**
 * Files under shared/ that one process alone runs, kept there on purpose. Each needs a reason a
 * newcomer would accept; the goal is at most three.
 */
const ONE_PROCESS_BY_DESIGN: Readonly<Record<string, string>> = {
  'shared/sport/seasons.projection.ts':
    'a projection definition lives beside its aggregate: the worker applies it, the ingress reads the documents it defines (SeasonRounds) by their type only',
};

async function reached(entry: string, runtimeOnly: boolean): Promise<Set<string>> {
  const tree = await dependencyTree([entry], runtimeOnly);
  return new Set(Object.keys(tree).filter((file) => !file.includes('node_modules')));
}

function trackedFiles(folder: string): string[] {
  return execFileSync('git', ['ls-files', folder], { cwd: ROOT, encoding: 'utf8' })
    .split('\n')
    .filter((file) => file.endsWith('.ts'));
}

describe('The layout of the processes', () => {
  let runsIn: { ingress: Set<string>; worker: Set<string> };
  let namedBy: { ingress: Set<string>; worker: Set<string> };

  beforeAll(async () => {
    const [ingressRuns, workerRuns, ingressNames, workerNames] = await Promise.all([
      reached(ENTRY.ingress, true),
      reached(ENTRY.worker, true),
      reached(ENTRY.ingress, false),
      reached(ENTRY.worker, false),
    ]);
    runsIn = { ingress: ingressRuns, worker: workerRuns };
    namedBy = { ingress: ingressNames, worker: workerNames };
  }, 60_000);

  it('When a file sits under shared/, then both the ingress and the worker run it (or, holding only types, both name it)', () => {
    const misplaced = trackedFiles('shared')
      .filter((file) => !(file in ONE_PROCESS_BY_DESIGN))
      .map((file) => {
        const ranBy = (['ingress', 'worker'] as const).filter((process) => runsIn[process].has(file));
        if (ranBy.length === 2) return null;
        const namedByBoth = namedBy.ingress.has(file) && namedBy.worker.has(file);
        if (ranBy.length === 0 && namedByBoth) return null; // types only, and both processes use them
        return `${file}: run by ${ranBy.join(' and ') || 'neither process'}`;
      })
      .filter((line): line is string => line !== null);
    expect(misplaced).toEqual([]);
  });

  it('When a file is kept under shared/ by design, then it still exists and one process alone runs it', () => {
    const exceptions = Object.keys(ONE_PROCESS_BY_DESIGN);
    expect(exceptions.length).toBeLessThanOrEqual(3);
    for (const file of exceptions) {
      const ranByBoth = runsIn.ingress.has(file) && runsIn.worker.has(file);
      expect({ file, ranByBoth }).toEqual({ file, ranByBoth: false });
    }
  });

  it('When a file under ingress/, workers/ or shared/ imports, then it never reaches into another process folder', async () => {
    const forbidden: Record<string, readonly string[]> = {
      'ingress/': ['workers/'],
      'workers/': ['ingress/'],
      'shared/': ['ingress/', 'workers/'],
    };
    const sources = [...trackedFiles('ingress'), ...trackedFiles('workers'), ...trackedFiles('shared')];
    const tree = await dependencyTree(sources, false);
    const crossings: string[] = [];
    for (const [file, dependencies] of Object.entries(tree)) {
      const top = Object.keys(forbidden).find((folder) => file.startsWith(folder));
      if (!top || !dependencies) continue;
      for (const dependency of dependencies) {
        if (dependency.id && forbidden[top]!.some((folder) => dependency.id!.startsWith(folder))) {
          crossings.push(`${file} -> ${dependency.id}`);
        }
      }
    }
    expect(crossings).toEqual([]);
  }, 60_000);

  it('When a newcomer follows LinkFantasyTeam in docs/architecture.md, then the path crosses at most 15 files in at most 6 folders', () => {
    const guide = readFileSync(path.join(ROOT, 'docs/architecture.md'), 'utf8');
    const section = /^## The path of a command\n([\s\S]*?)^## /m.exec(guide)?.[1] ?? '';
    const files = [...section.matchAll(/^\d+\. `([^`]+)`/gm)].map((match) => match[1]!);
    const folders = new Set(files.map((file) => path.dirname(file)));
    expect(files.length).toBeGreaterThan(10);
    expect(files.length).toBeLessThanOrEqual(15);
    expect(folders.size).toBeLessThanOrEqual(6);
    expect(files.filter((file) => !existsSync(path.join(ROOT, file)))).toEqual([]);
  });
});
