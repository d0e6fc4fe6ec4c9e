import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import prettier from 'prettier';

import type { LoadSettings, Measured } from './load';
import { markdownTable } from './markdown-table';
import { CPU_TABLE_NOTE, type CpuRow, cpuRowNotes, cpuTable } from './process-cost';
import { REPO_ROOT } from './processes';

/** One line of a comparison: a workload's medians, and how it stands against the baseline. */
export interface ComparisonRow extends Measured {
  /** Its median rate over the baseline's; null on the baseline's own row (and on a `standalone` one). */
  readonly ratio: number | null;
  /** A row compared with no baseline (a latency probe, a rate that is not a throughput): no ratio. */
  readonly standalone?: boolean;
  /** The least ratio the bench asks for; null when none is set. */
  readonly target: number | null;
  /** Latency ceilings the bench asks for, judged on the median p50 and p99; absent when none. */
  readonly p50BelowMs?: number;
  readonly p99BelowMs?: number;
}

/** What one `*.bench.ts` hands back to run-all: its table, its notes, and whether the run counts. */
export interface BenchReport {
  /** File name without `.bench.ts`; also the name of its section in RESULTS.md. */
  readonly name: string;
  readonly title: string;
  readonly settings: LoadSettings & { rounds: number };
  /** What the rate column counts, per second: `req/s` unless said (`users/s`, `hashes/s`). */
  readonly rateUnit?: string;
  /** How the load was made, when not the autocannon runs `settings` describe. */
  readonly loadDescription?: string;
  /** From `machineInfo()`, taken before the first server starts. */
  readonly machine: Record<string, string>;
  readonly rows: readonly ComparisonRow[];
  /**
   * CPU per request and process against the references (bench/baselines/ref-*.cjs), for a
   * request-path bench: printed as a second table under the rates.
   */
  readonly cpu?: readonly CpuRow[];
  /** Markdown tables of a bench that measures something other than a rate (bytes), after `rows`. */
  readonly tables?: readonly string[];
  /** How to read the table: what was set up, and how. */
  readonly notes: readonly string[];
  /** Anything that makes the numbers meaningless (non-2xx answers, errors). Empty for a valid run. */
  readonly problems: readonly string[];
  /**
   * Rows whose failures are what they measure (a commit before a fix, stalling), left out of
   * `problems` and named beside the "every response was 2xx" line instead.
   */
  readonly failuresExpectedOn?: readonly string[];
}

/** A bench module, as run-all loads it. */
export interface BenchModule {
  run(): Promise<BenchReport>;
}

/** Rows against `baseline`: the ratio of medians, and the target for each non-baseline row. */
export function compareWith(
  baseline: Measured,
  others: readonly Measured[],
  target: number | null,
): ComparisonRow[] {
  return [
    { ...baseline, ratio: null, target: null },
    ...others.map((row) => ({ ...row, ratio: row.requestsPerSecond / baseline.requestsPerSecond, target })),
  ];
}

/** Every reason the rows cannot be trusted: a failed request means the server measured was not doing the work. */
export function problemsOf(rows: readonly Measured[]): string[] {
  return rows.flatMap((row) => {
    const found: string[] = [];
    if (row.non2xx > 0) found.push(`${row.workload}: ${row.non2xx} non-2xx responses`);
    if (row.errors > 0) found.push(`${row.workload}: ${row.errors} connection errors or timeouts`);
    if (row.warmupFailures > 0) found.push(`${row.workload}: ${row.warmupFailures} failures during warm-up`);
    return found;
  });
}

function fixed(value: number, digits: number): string {
  return Number.isFinite(value) ? value.toFixed(digits) : '-';
}

/** Each target of the row and whether its median meets it. Empty when the row has none. */
function targetsOf(row: ComparisonRow): { text: string; met: boolean }[] {
  const targets: { text: string; met: boolean }[] = [];
  if (row.ratio !== null && row.target !== null)
    targets.push({ text: `>= ${fixed(row.target, 2)}`, met: row.ratio >= row.target });
  if (row.p50BelowMs !== undefined)
    targets.push({ text: `p50 < ${row.p50BelowMs} ms`, met: row.p50Ms < row.p50BelowMs });
  if (row.p99BelowMs !== undefined)
    targets.push({ text: `p99 < ${row.p99BelowMs} ms`, met: row.p99Ms < row.p99BelowMs });
  return targets;
}

function metCell(row: ComparisonRow): string {
  if (problemsOf([row]).length > 0) return 'INVALID';
  const targets = targetsOf(row);
  if (targets.length === 0) return '';
  return targets.every((target) => target.met) ? 'yes' : 'NO';
}

/** Rates per round; for a row without a rate (a latency probe), its p99 per round. */
function perRoundCell(row: ComparisonRow): string {
  if (row.runs.length > 0 && row.runs.every((run) => !Number.isFinite(run.requestsPerSecond)))
    return `p99 ${row.runs.map((run) => fixed(run.p99Ms, 1)).join(' / ')}`;
  return row.runs.map((run) => fixed(run.requestsPerSecond, 0)).join(' / ');
}

/** A Markdown table, padded so it also reads well in a terminal. */
export function table(rows: readonly ComparisonRow[], rateUnit = 'req/s'): string {
  const rateHeader = `${rateUnit} (median)`;
  const header = [
    'Workload',
    rateHeader,
    'p50 ms',
    'p99 ms',
    'vs baseline',
    'target',
    'met?',
    `${rateUnit} per round`,
  ];
  const body = rows.map((row) => [
    row.workload,
    fixed(row.requestsPerSecond, 0),
    fixed(row.p50Ms, 1),
    fixed(row.p99Ms, 1),
    row.standalone ? '' : row.ratio === null ? '(baseline)' : fixed(row.ratio, 2),
    targetsOf(row)
      .map((target) => target.text)
      .join(', '),
    metCell(row),
    perRoundCell(row),
  ]);
  const numeric = new Set([rateHeader, 'p50 ms', 'p99 ms', 'vs baseline']);
  return markdownTable(header, body, numeric);
}

function git(...args: string[]): string {
  const result = spawnSync('git', args, { cwd: REPO_ROOT, encoding: 'utf8' });
  return result.status === 0 ? result.stdout.trim() : '';
}

/** Where the numbers were taken: they mean little without the machine and the code they came from. */
export function machineInfo(): Record<string, string> {
  const cpus = os.cpus();
  const dirty = git('status', '--porcelain').length > 0;
  return {
    date: new Date().toISOString(),
    os: `${os.type()} ${os.release()} (${os.arch()})`,
    cpus: `${cpus.length} x ${cpus[0]?.model.trim() ?? 'unknown'}`,
    memory: `${(os.totalmem() / 1024 ** 3).toFixed(1)} GiB`,
    node: process.version,
    'load average before the run (1/5/15 min)': os
      .loadavg()
      .map((load) => load.toFixed(2))
      .join(' / '),
    commit: `${git('rev-parse', '--short', 'HEAD') || 'unknown'}${dirty ? ' (with uncommitted changes)' : ''}`,
  };
}

function settingsLine(settings: BenchReport['settings'], loadDescription?: string): string {
  if (loadDescription !== undefined) return loadDescription;
  return (
    `autocannon in the bench process, servers in their own processes; ${settings.connections} connections, ` +
    (settings.ratePerSecond === undefined ? '' : `paced at ${settings.ratePerSecond} req/s (BENCH_RATE), `) +
    `pipelining 1, ${settings.warmupSeconds} s warm-up then ${settings.durationSeconds} s measured per run, ` +
    `${settings.rounds} round(s) with the workloads interleaved, medians reported`
  );
}

/** The rate table (when the bench has rows) and its other tables, each followed by a blank line. */
function rowsThenTables(report: BenchReport): string[] {
  return [
    ...(report.rows.length > 0 ? [table(report.rows, report.rateUnit)] : []),
    ...(report.cpu?.length ? [cpuTable(report.cpu)] : []),
    ...(report.tables ?? []),
  ].flatMap((text) => [text, '']);
}

/** The report as a Markdown section (machine, settings, table, notes). */
export function markdownSection(report: BenchReport): string {
  return [
    `## ${report.title}`,
    '',
    `Measured by \`npm run bench\` (or \`npm run bench:${report.name}\`) on:`,
    '',
    ...Object.entries(report.machine).map(([key, value]) => `- ${key}: ${value}`),
    `- load: ${settingsLine(report.settings, report.loadDescription)}`,
    '',
    ...rowsThenTables(report),
    ...report.notes.map((note) => `- ${note}`),
    ...(report.cpu?.length ? [CPU_TABLE_NOTE, ...cpuRowNotes(report.cpu)].map((note) => `- ${note}`) : []),
    ...(report.problems.length > 0
      ? ['', `**INVALID RUN:** ${report.problems.join('; ')}`]
      : [
          report.failuresExpectedOn?.length
            ? `- Every response of every run, warm-ups included, was 2xx, but on ${report.failuresExpectedOn.join('; ')}: there, the failures are the finding.`
            : '- Every response of every run, warm-ups included, was 2xx.',
        ]),
  ].join('\n');
}

/** The report for the terminal. */
export function consoleReport(report: BenchReport): string {
  return [
    '',
    `== ${report.title}`,
    `   ${settingsLine(report.settings, report.loadDescription)}`,
    '',
    ...rowsThenTables(report),
    ...report.notes.map((note) => `  - ${note}`),
    ...(report.cpu?.length ? [CPU_TABLE_NOTE, ...cpuRowNotes(report.cpu)].map((note) => `  - ${note}`) : []),
    ...(report.problems.length > 0
      ? [
          '',
          '!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!',
          `!!! INVALID RUN: ${report.problems.join('; ')}`,
          '!!! The numbers above do not measure the intended work. Fix the cause and run again.',
          '!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!',
        ]
      : []),
    '',
  ].join('\n');
}

const RESULTS_FILE = path.join(REPO_ROOT, 'bench', 'RESULTS.md');
const RESULTS_DIR = path.join(REPO_ROOT, 'bench', 'results');

const RESULTS_PREAMBLE = `# Benchmark results

Written by \`npm run bench\`: one section per bench, each replaced by that bench's latest run. Every
number is relative to a baseline measured in the same run with the same load generator; compare the
ratios, not the absolute rates, across machines. Raw runs are in \`bench/results/*.json\` (not committed).
`;

/**
 * Replaces the report's section of bench/RESULTS.md (between its begin/end markers, appended when
 * absent), formatted as `npm run lint` expects, and writes the raw runs to
 * bench/results/<name>-<time>.json (git-ignored). Returns the JSON's path.
 */
/**
 * Writes `body` between its section's markers in RESULTS.md, replacing an earlier run of it; a new
 * section goes at the end, or `first` right after the preamble.
 */
async function writeSection(name: string, body: string, first = false): Promise<void> {
  const begin = `<!-- bench:${name}:begin -->`;
  const end = `<!-- bench:${name}:end -->`;
  const section = `${begin}\n${body}\n${end}`;
  const current = existsSync(RESULTS_FILE) ? readFileSync(RESULTS_FILE, 'utf8') : RESULTS_PREAMBLE;
  const from = current.indexOf(begin);
  const to = current.indexOf(end);
  const firstSection = current.indexOf('<!-- bench:');
  const next =
    from >= 0 && to > from
      ? current.slice(0, from) + section + current.slice(to + end.length)
      : first && firstSection >= 0
        ? `${current.slice(0, firstSection)}${section}\n\n${current.slice(firstSection)}`
        : `${current.trimEnd()}\n\n${section}\n`;
  const options = (await prettier.resolveConfig(RESULTS_FILE)) ?? {};
  writeFileSync(RESULTS_FILE, await prettier.format(next, { ...options, filepath: RESULTS_FILE }));
}

/** The combined table of a full `npm run bench`, first in RESULTS.md, with the machine it ran on. */
export async function saveSummary(combinedTable: string, machine: Record<string, string>): Promise<void> {
  const machineLines = Object.entries(machine).map(([key, value]) => `- ${key}: ${value}`);
  await writeSection(
    'all',
    [
      '## All benches, one run (`npm run bench`)',
      '',
      `Run finished ${new Date().toISOString()}. Each row's baseline ran in the same bench, on the same machine:`,
      '',
      ...machineLines,
      '',
      combinedTable,
    ].join('\n'),
    true,
  );
}

export async function saveReport(report: BenchReport): Promise<string> {
  await writeSection(report.name, markdownSection(report));

  mkdirSync(RESULTS_DIR, { recursive: true });
  const file = path.join(
    RESULTS_DIR,
    `${report.name}-${new Date().toISOString().replace(/[:.]/g, '-')}.json`,
  );
  writeFileSync(file, `${JSON.stringify(report, null, 2)}\n`);
  return file;
}
