import path from 'node:path';

import { removeScratchDir, REPO_ROOT, stopAllOnInterrupt } from './processes';
import { type BenchModule, type BenchReport, consoleReport, saveReport, saveSummary, table } from './report';

/** A bench to run: its name (the file name without `.bench.ts`) and how to load it. */
export interface BenchEntry {
  readonly name: string;
  load(): Promise<BenchModule>;
}

/**
 * Runs benches one after the other (never two at once: they would share the machine), prints and
 * saves each as it finishes, then prints one combined table. Sets the exit code to 1 if any bench
 * failed or produced an invalid run (a non-2xx answer or an error under load).
 */
export async function runBenches(
  entries: readonly BenchEntry[],
  options: { readonly saveSummary?: boolean } = {},
): Promise<void> {
  stopAllOnInterrupt();
  const reports: BenchReport[] = [];
  const failures: string[] = [];
  for (const entry of entries) {
    process.stderr.write(`[bench] ${entry.name}\n`);
    try {
      const report = await (await entry.load()).run();
      reports.push(report);
      process.stdout.write(consoleReport(report));
      process.stdout.write(
        `saved: bench/RESULTS.md, ${path.relative(REPO_ROOT, await saveReport(report))}\n`,
      );
    } catch (error) {
      failures.push(entry.name);
      process.stderr.write(
        `[bench] ${entry.name} failed: ${error instanceof Error ? error.stack : String(error)}\n`,
      );
    }
  }

  if (reports.length > 1) {
    // Benches may count different things per second (requests, users, hashes): then each row says which.
    const units = new Set(reports.map((report) => report.rateUnit ?? 'req/s'));
    const mixed = units.size > 1;
    const rows = reports.flatMap((report) =>
      report.rows.map((row) => ({
        ...row,
        workload: `${report.name}: ${row.workload}${mixed ? ` [${report.rateUnit ?? 'req/s'}]` : ''}`,
      })),
    );
    const combined = table(rows, mixed ? 'rate/s' : [...units][0]);
    process.stdout.write(`\n== All benches\n\n${combined}\n`);
    // Only a complete run of every bench stands as "the" table; a partial run keeps its sections only.
    if (options.saveSummary && reports.length === entries.length && reports[0])
      await saveSummary(combined, reports[0].machine);
  }
  const invalid = reports.filter((report) => report.problems.length > 0).map((report) => report.name);
  if (invalid.length > 0) process.stdout.write(`\n!!! INVALID RUNS: ${invalid.join(', ')}\n`);
  if (failures.length > 0) process.stdout.write(`\n!!! FAILED: ${failures.join(', ')}\n`);
  const failed = invalid.length > 0 || failures.length > 0;
  const kept = removeScratchDir(failed);
  if (kept) process.stdout.write(`kept the server logs (and CPU profiles, if asked for): ${kept}\n`);
  process.exitCode = failed ? 1 : 0;
}
