import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '../..');

/** The documents a reader follows links through: the root guides and everything under docs/. */
function documents(): string[] {
  const underDocs = (dir: string): string[] =>
    readdirSync(path.join(ROOT, dir), { withFileTypes: true }).flatMap((entry) => {
      const relative = path.posix.join(dir, entry.name);
      if (entry.isDirectory()) return underDocs(relative);
      return entry.name.endsWith('.md') ? [relative] : [];
    });
  return ['README.md', 'CONTRIBUTING.md', 'CHANGELOG.md', ...underDocs('docs')];
}

/**
 * Paths named in backticks that are meant not to exist, each with its reason. Keep it short: a
 * path that moved is fixed in the text, not listed here.
 */
const HYPOTHETICAL_PATHS: ReadonlyMap<string, string> = new Map<string, string>([
  ['deploy/tls/cert.pem', "the operator's certificate, written at deployment and never committed"],
]);

/**
 * The CHANGELOG records each change as it was made: a path it names is the file of that day, which
 * may since have moved. Its links are checked; the paths it names are not.
 */
const RECORDS_OF_THEIR_DAY = new Set(['CHANGELOG.md']);

/** The text outside fenced code blocks (``` or ~~~), line numbers kept by blanking the blocks. */
function prose(markdown: string): string {
  let fence: string | undefined;
  return markdown
    .split('\n')
    .map((line) => {
      const marker = /^\s*(`{3,}|~{3,})/.exec(line)?.[1];
      if (fence === undefined && marker !== undefined) {
        fence = marker;
        return '';
      }
      if (fence !== undefined) {
        if (marker !== undefined && marker.startsWith(fence[0] ?? '`') && marker.length >= fence.length)
          fence = undefined;
        return '';
      }
      return line;
    })
    .join('\n');
}

const CODE_SPAN = /(`+)([\s\S]*?[^`])\1(?!`)/g;

/** The anchors GitHub gives the headings of `markdown` (github-slugger's rules, duplicates numbered). */
export function headingAnchors(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const counts = new Map<string, number>();
  for (const line of prose(markdown).split('\n')) {
    const heading = /^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$/.exec(line)?.[1];
    if (heading === undefined) continue;
    const text = heading
      .replace(CODE_SPAN, (_span, _ticks, code: string) => code)
      .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
      .replace(/<[^>]+>/g, '');
    const base = text
      .toLowerCase()
      .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
      .replace(/ /g, '-');
    const seen = counts.get(base) ?? 0;
    counts.set(base, seen + 1);
    anchors.add(seen === 0 ? base : `${base}-${seen}`);
  }
  for (const match of markdown.matchAll(/<a\s+(?:name|id)="([^"]+)"/g)) anchors.add(match[1] ?? '');
  return anchors;
}

/** Each link target of `markdown` (inline links and images), outside code. */
export function linkTargets(markdown: string): string[] {
  const text = prose(markdown).replace(CODE_SPAN, 'code');
  return [...text.matchAll(/!?\[(?:[^\]\\]|\\.)*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map(
    (match) => match[1] ?? '',
  );
}

const TOP_FOLDERS = 'ingress|workers|shared|scripts|test|bench|docs|clients|deploy|examples|\\.ci';
/** A path from the repository's root into one of its folders, ending in an extension or a slash; no placeholder. */
const REPOSITORY_PATH = new RegExp(`^(?:${TOP_FOLDERS})/[^\\s<>*{}|$]*(?:/|\\.[A-Za-z0-9]+)$`);

/** Each repository path `markdown` names in backticks (outside code blocks), as written. */
export function namedPaths(markdown: string): string[] {
  return [...prose(markdown).matchAll(CODE_SPAN)]
    .map((match) => (match[2] ?? '').trim().replace(/:\d+$/, ''))
    .filter((code) => REPOSITORY_PATH.test(code));
}

const isExternal = (target: string): boolean => /^[a-z][a-z0-9+.-]*:/i.test(target);

/** A repository's files: a file's text, '' for a folder, undefined for nothing there. */
type Read = (file: string) => string | undefined;

/** What is wrong with the links of the document at `file`, one line each. */
export function brokenLinks(file: string, read: Read): string[] {
  const problems: string[] = [];
  const markdown = read(file) ?? '';
  for (const target of linkTargets(markdown)) {
    if (isExternal(target)) continue;
    const [rawPath = '', anchor] = target.split('#', 2);
    const linked =
      rawPath === ''
        ? file
        : path.posix.normalize(path.posix.join(path.posix.dirname(file), decodeURI(rawPath)));
    if (linked.startsWith('..') || read(linked) === undefined) {
      problems.push(`${file}: ${target}: no file ${linked}`);
      continue;
    }
    if (anchor === undefined || anchor === '' || !linked.endsWith('.md')) continue;
    if (!headingAnchors(read(linked) ?? '').has(decodeURIComponent(anchor).toLowerCase()))
      problems.push(`${file}: ${target}: no heading #${anchor} in ${linked}`);
  }
  return problems;
}

const readRepositoryFile: Read = (file) => {
  const absolute = path.join(ROOT, file);
  if (!existsSync(absolute)) return undefined;
  return statSync(absolute).isDirectory() ? '' : readFileSync(absolute, 'utf8');
};

describe('The links of the docs', () => {
  it('When the docs link a file or a heading, then the file and the heading exist', () => {
    const guides = ['integrators', 'operators', 'security', 'architecture'].map((name) => `docs/${name}.md`);
    expect(documents()).toEqual(expect.arrayContaining(guides));
    expect(documents().filter((file) => readRepositoryFile(file) === undefined)).toEqual([]);
    expect(documents().flatMap((file) => brokenLinks(file, readRepositoryFile))).toEqual([]);
  });

  it('When the docs name a repository path in backticks, then the path exists', () => {
    const current = documents().filter((file) => !RECORDS_OF_THEIR_DAY.has(file));
    const missing = current.flatMap((file) =>
      namedPaths(readRepositoryFile(file) ?? '')
        .filter((named) => !HYPOTHETICAL_PATHS.has(named) && !existsSync(path.join(ROOT, named)))
        .map((named) => `${file}: ${named}`),
    );
    expect([...new Set(missing)]).toEqual([]);
  });

  it('When a path is allowed to be missing, then some document still names it and it is indeed missing', () => {
    const named = new Set(documents().flatMap((file) => namedPaths(readRepositoryFile(file) ?? '')));
    for (const hypothetical of HYPOTHETICAL_PATHS.keys()) {
      expect([hypothetical, named.has(hypothetical)]).toEqual([hypothetical, true]);
      expect([hypothetical, existsSync(path.join(ROOT, hypothetical))]).toEqual([hypothetical, false]);
    }
  });

  it('When a link, a heading or a named path is broken, then the checker reports it', () => {
    const files: Record<string, string> = {
      'docs/a.md': [
        '# Guide',
        '## Rotating `JWT_SECRET`',
        '## What the service does not promise',
        '## Setup',
        '## Setup',
        'See [b](b.md#the-part), [c](c.md), [self](#rotating-jwt_secret), [dup](#setup-1), [gone](#setup-2).',
        'Also [web](https://example.com/x.md#nowhere) and `shared/no-such-file.ts`, `ingress/<query>/`.',
        '```sh',
        '[not a link](nowhere.md) `test/not/checked.ts`',
        '```',
      ].join('\n'),
      'docs/b.md': '# B\n\n## Another part\n',
    };
    const read = (file: string): string | undefined => files[file];
    expect(brokenLinks('docs/a.md', read)).toEqual([
      'docs/a.md: b.md#the-part: no heading #the-part in docs/b.md',
      'docs/a.md: c.md: no file docs/c.md',
      'docs/a.md: #setup-2: no heading #setup-2 in docs/a.md',
    ]);
    expect(headingAnchors(files['docs/a.md'] ?? '')).toEqual(
      new Set(['guide', 'rotating-jwt_secret', 'what-the-service-does-not-promise', 'setup', 'setup-1']),
    );
    expect(namedPaths(files['docs/a.md'] ?? '')).toEqual(['shared/no-such-file.ts']);
  });
});
