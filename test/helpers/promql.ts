/** What a PromQL expression reads: each series it names, with the labels it matches on. */
export interface PromqlUse {
  readonly metrics: readonly { readonly name: string; readonly matchedLabels: readonly string[] }[];
  /** Labels of `by`, `without`, `on`, `ignoring`, `group_left` and `group_right` lists. */
  readonly groupingLabels: readonly string[];
}

// Strings, range and subquery brackets (`[5m]`, `[$__rate_interval]`), names, numbers, operators.
const TOKEN =
  /\s+|"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|\[[^\]]*\]|[A-Za-z_:][A-Za-z0-9_:]*|\d+(?:\.\d+)?(?:e[+-]?\d+)?|=~|!~|!=|==|>=|<=|[{}(),=<>+\-*/%^]/y;
const GROUPING = new Set(['by', 'without', 'on', 'ignoring', 'group_left', 'group_right']);
const KEYWORDS = new Set(['and', 'or', 'unless', 'bool', 'offset']);
// Followed by `by (...)` as often as by `(`: `sum by (route) (...)`.
const AGGREGATIONS = new Set(
  'sum min max avg group stddev stdvar count count_values bottomk topk quantile limitk limit_ratio'.split(
    ' ',
  ),
);
const MATCH_OPERATORS = new Set(['=', '!=', '=~', '!~']);

function tokens(expr: string): string[] {
  const found: string[] = [];
  TOKEN.lastIndex = 0;
  while (TOKEN.lastIndex < expr.length) {
    const at = TOKEN.lastIndex;
    const match = TOKEN.exec(expr);
    if (!match) throw new Error(`cannot read PromQL at ${at}: ${expr.slice(at)}`);
    if (match[0].trim() !== '') found.push(match[0]);
  }
  return found;
}

/**
 * Reads the series names and labels of a PromQL expression: enough of the grammar for dashboard
 * queries (selectors with matchers, functions, aggregations with grouping, binary operators). A
 * name followed by `(` is a function, an aggregation operator is one, any other name a series; a selector
 * without a name (`{__name__=...}`) is refused rather than guessed at.
 */
export function readPromql(expr: string): PromqlUse {
  const list = tokens(expr);
  const metrics: { name: string; matchedLabels: string[] }[] = [];
  const groupingLabels: string[] = [];
  for (let i = 0; i < list.length; i++) {
    const token = list[i] ?? '';
    const next = list[i + 1];
    if (token === '{') {
      const selector = list[i - 1] ?? '';
      const metric = metrics.at(-1);
      if (!metric || metric.name !== selector) throw new Error(`a selector without a metric name: ${expr}`);
      for (i++; list[i] !== '}'; i++) {
        if (i >= list.length) throw new Error(`unclosed selector: ${expr}`);
        if (MATCH_OPERATORS.has(list[i + 1] ?? '')) metric.matchedLabels.push(list[i] ?? '');
      }
    } else if (GROUPING.has(token) && next === '(') {
      for (i += 2; list[i] !== ')'; i++) {
        if (i >= list.length) throw new Error(`unclosed label list: ${expr}`);
        if (list[i] !== ',') groupingLabels.push(list[i] ?? '');
      }
    } else if (
      /^[A-Za-z_:]/.test(token) &&
      next !== '(' &&
      !KEYWORDS.has(token) &&
      !AGGREGATIONS.has(token)
    ) {
      metrics.push({ name: token, matchedLabels: [] });
    }
  }
  return { metrics, groupingLabels };
}

/** The series a text exposition holds: each sample name with the labels seen on its samples. */
export interface ExportedSeries {
  /** Every name a `# TYPE` line declares (a histogram's `_bucket`, `_sum` and `_count` too). */
  readonly names: ReadonlySet<string>;
  /** Per sample name, the union of the label names of its samples. */
  readonly labels: ReadonlyMap<string, ReadonlySet<string>>;
}

/** Merges the expositions of several processes into the series any of them exports. */
export function exportedSeries(
  expositions: readonly string[],
  samples: readonly { readonly name: string; readonly labels: Readonly<Record<string, string>> }[],
): ExportedSeries {
  const names = new Set<string>();
  for (const text of expositions) {
    for (const [, name, type] of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
      if (name === undefined) continue;
      names.add(name);
      if (type === 'histogram') for (const suffix of ['_bucket', '_sum', '_count']) names.add(name + suffix);
    }
  }
  const labels = new Map<string, Set<string>>();
  for (const sample of samples) {
    const seen = labels.get(sample.name) ?? new Set<string>();
    for (const label of Object.keys(sample.labels)) seen.add(label);
    labels.set(sample.name, seen);
  }
  return { names, labels };
}

/** Labels Prometheus attaches to every series it scrapes: no process exports them. */
export const TARGET_LABELS: ReadonlySet<string> = new Set(['job', 'instance']);

/**
 * What `expr` uses that `exported` lacks, one line each: a series no process exports, a label a
 * matcher names that the series' samples do not carry, or a grouping label missing from a series
 * the expression reads.
 */
export function unexportedUses(expr: string, exported: ExportedSeries): string[] {
  const { metrics, groupingLabels } = readPromql(expr);
  const problems: string[] = [];
  if (metrics.length === 0) problems.push(`names no series: ${expr}`);
  const hasLabel = (name: string, label: string) =>
    TARGET_LABELS.has(label) || (exported.labels.get(name)?.has(label) ?? false);
  for (const { name, matchedLabels } of metrics) {
    if (!exported.names.has(name)) {
      problems.push(`${name} is not exported`);
      continue;
    }
    for (const label of [...matchedLabels, ...groupingLabels]) {
      if (!hasLabel(name, label)) problems.push(`${name} has no label ${label}`);
    }
  }
  return problems;
}
