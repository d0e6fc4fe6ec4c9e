import type { OwnRowDoc, Setting } from '../../shared/config/setting';
import { SETTINGS } from '../../shared/config/settings';

/** The lines of docs/operators.md between which `npm run docs:config` writes the configuration table. */
export const TABLE_START =
  '<!-- configuration-table: generated from shared/config/settings.ts by `npm run docs:config` -->';
export const TABLE_END = '<!-- configuration-table end -->';

const HEADER = ['Variable', 'Default', 'Expects', 'Used by'] as const;

/** One line of the table: its variables (usually one), their defaults, and the row's texts. */
interface TableRow {
  readonly variables: string[];
  readonly defaults: string[];
  readonly doc: OwnRowDoc;
}

function defaultText(row: Setting, doc: { readonly default?: string }): string {
  if (doc.default !== undefined) return doc.default;
  if (row.default === undefined) return 'unset';
  if (typeof row.default === 'string' || typeof row.default === 'number') return `\`${row.default}\``;
  throw new Error(`${row.env}: a computed default needs its documented text in doc.default`);
}

/** The table's rows as cells, in the order of SETTINGS. */
export function configurationRows(settings: readonly Setting[] = SETTINGS): string[][] {
  const rows: TableRow[] = [];
  const byVariable = new Map<string, TableRow>();
  for (const setting of settings) {
    const { doc } = setting;
    if ('describedIn' in doc) continue;
    if ('sharesRowWith' in doc) {
      const shared = byVariable.get(doc.sharesRowWith);
      if (shared === undefined)
        throw new Error(`${setting.env}: no row ${doc.sharesRowWith} above it to share`);
      shared.variables.push(setting.env);
      shared.defaults.push(defaultText(setting, {}));
      continue;
    }
    const row: TableRow = { variables: [setting.env], defaults: [defaultText(setting, doc)], doc };
    rows.push(row);
    byVariable.set(setting.env, row);
  }
  return rows.map((row) => [
    row.variables.map((name) => `\`${name}\``).join(', '),
    row.defaults.join(', '),
    row.doc.expects,
    row.doc.usedBy,
  ]);
}

const line = (cells: readonly string[]): string =>
  `| ${cells.map((cell) => cell.replaceAll('|', '\\|')).join(' | ')} |`;

/**
 * The Markdown table, its columns unpadded: prettier leaves it so (it sits between prettier-ignore
 * lines), since padding every row to the longest cell would make each line several hundred characters.
 */
export function configurationTable(settings: readonly Setting[] = SETTINGS): string {
  return [line(HEADER), line(HEADER.map(() => '---')), ...configurationRows(settings).map(line)].join('\n');
}

const IGNORE_START = '<!-- prettier-ignore-start -->';
const IGNORE_END = '<!-- prettier-ignore-end -->';

/** `markdown` with the text between the markers replaced by the table; throws without the markers. */
export function withConfigurationTable(markdown: string, table = configurationTable()): string {
  const start = markdown.indexOf(TABLE_START);
  const end = markdown.indexOf(TABLE_END);
  if (start < 0 || end < start)
    throw new Error(`the document lacks the lines ${TABLE_START} ... ${TABLE_END}`);
  const generated = [IGNORE_START, '', table, '', IGNORE_END].join('\n');
  return `${markdown.slice(0, start + TABLE_START.length)}\n${generated}\n${markdown.slice(end)}`;
}

/** The cells of the table between the markers of `markdown`, separator line left out. */
export function documentedConfigurationRows(markdown: string): string[][] {
  const start = markdown.indexOf(TABLE_START);
  const end = markdown.indexOf(TABLE_END);
  if (start < 0 || end < start) return [];
  return markdown
    .slice(start + TABLE_START.length, end)
    .split('\n')
    .map((text) => text.trim())
    .filter((text) => text.startsWith('|') && !/^\|[\s|:-]+\|$/.test(text))
    .slice(1)
    .map((text) =>
      text
        .slice(1, -1)
        .split(/(?<!\\)\|/)
        .map((cell) => cell.trim().replaceAll('\\|', '|')),
    );
}
