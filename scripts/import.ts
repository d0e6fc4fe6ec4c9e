import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';

import { SingleBar } from 'cli-progress';

import { IMPORT_PRIORITIES, type ImportPriority } from '../shared/importers/importer';
import { isGuid } from '../shared/validation';
import {
  buildImportRequest,
  HttpError,
  ImportClient,
  ImportFileError,
  type ImportJobView,
  type ImportRequestBody,
  type ImportResponse,
  NetworkError,
  WaitTimeoutError,
} from './lib/import-client';

/**
 * `npm run import -- <file.json> [--priority High] [--wait] [--dry-run] [--timeout <seconds>]`:
 * submits one import to a running service, as a scheduled job would. Exit codes are in EXIT.
 */
const EXIT = {
  /** Completed, or queued (Pending) without --wait. */
  completed: 0,
  failed: 1,
  /** Bad arguments, an unreadable file, missing credentials. */
  usage: 2,
  /** The service answered non-2xx or could not be reached. */
  http: 3,
  /** --wait ran out of time with the job still Pending. */
  timeout: 4,
  /** A bug in this script (sysexits' EX_SOFTWARE). */
  internal: 70,
} as const;

const DEFAULT_API_URL = 'http://127.0.0.1:8080';
const DEFAULT_TIMEOUT_SECONDS = 3600;
const POLL_INTERVAL_MS = 500;
/** Without a terminal (cron, a log file), one plain progress line at most this often. */
const PLAIN_PROGRESS_EVERY_MS = 2_000;
const MAX_ROW_ERRORS_SHOWN = 20;

const USAGE =
  'usage: npm run import -- <file.json> [--priority Normal|High] [--wait] [--dry-run] [--timeout <seconds>]';

/** The operator's mistake, told in one line; `showUsage` adds the usage line after it. */
class UsageError extends Error {
  constructor(
    message: string,
    readonly showUsage = false,
  ) {
    super(message);
  }
}

interface CliOptions {
  readonly file: string;
  readonly priority?: ImportPriority;
  readonly wait: boolean;
  readonly dryRun: boolean;
  readonly timeoutMs: number;
}

function parseCommandLine(argv: readonly string[]): CliOptions {
  let parsed;
  try {
    parsed = parseArgs({
      args: [...argv],
      allowPositionals: true,
      options: {
        priority: { type: 'string' },
        wait: { type: 'boolean', default: false },
        'dry-run': { type: 'boolean', default: false },
        timeout: { type: 'string' },
      },
    });
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error), true);
  }
  const { values, positionals } = parsed;
  const file = positionals[0];
  if (!file || positionals.length > 1) throw new UsageError('expected exactly one import file', true);
  const priority = values.priority;
  if (priority !== undefined && !(IMPORT_PRIORITIES as readonly string[]).includes(priority)) {
    throw new UsageError(`--priority must be one of ${IMPORT_PRIORITIES.join(', ')}`, true);
  }
  const timeoutSeconds = values.timeout === undefined ? DEFAULT_TIMEOUT_SECONDS : Number(values.timeout);
  if (!Number.isFinite(timeoutSeconds) || timeoutSeconds <= 0) {
    throw new UsageError('--timeout must be a positive number of seconds', true);
  }
  return {
    file,
    ...(priority === undefined ? {} : { priority: priority as ImportPriority }),
    wait: values.wait,
    dryRun: values['dry-run'],
    timeoutMs: timeoutSeconds * 1000,
  };
}

interface Target {
  readonly baseUrl: string;
  readonly email: string;
  readonly password: string;
  readonly requestId: string;
}

function targetFromEnvironment(env: NodeJS.ProcessEnv): Target {
  const missing = ['IMPORT_EMAIL', 'IMPORT_PASSWORD'].filter((name) => !env[name]);
  if (missing.length) {
    throw new UsageError(
      `${missing.join(' and ')} must be set: the e-mail and password of the account that submits the import (Basic authentication)`,
    );
  }
  const baseUrl = env.IMPORT_API_URL || DEFAULT_API_URL;
  if (!URL.canParse(baseUrl) || !/^https?:$/.test(new URL(baseUrl).protocol)) {
    throw new UsageError(`IMPORT_API_URL must be an http(s) URL, got "${baseUrl}"`);
  }
  const requestId = env.IMPORT_REQUEST_ID || randomUUID();
  if (!isGuid(requestId)) throw new UsageError('IMPORT_REQUEST_ID must be a GUID');
  return { baseUrl, email: env.IMPORT_EMAIL ?? '', password: env.IMPORT_PASSWORD ?? '', requestId };
}

async function readImportFile(file: string): Promise<unknown> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    throw new UsageError(`cannot read ${file}: ${error instanceof Error ? error.message : String(error)}`);
  }
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw new UsageError(
      `${file} is not valid JSON: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
}

const out = (line: string) => process.stdout.write(`${line}\n`);
const err = (line: string) => process.stderr.write(`[import] ${line}\n`);

function printSubmitted(response: ImportResponse): void {
  out(
    `import ${response.importJobId} (${response.importerType}, ${response.priority} priority, requestId ${response.requestId ?? '-'}): ${response.status}: ${response.message}`,
  );
  if (response.dryRun) {
    out(`dry run: would create ${response.dryRun.wouldCreate}, would skip ${response.dryRun.wouldSkip}`);
  }
}

/**
 * A row of the file by its index: its e-mail (UserSeeding) or platform id (PlayerSeeding). The
 * service names rows by index only (it keeps no e-mail in an import's record), so the CLI names
 * them from the file it sent.
 */
function rowNames(body: ImportRequestBody): (index: number) => string | undefined {
  const rows = Object.values(body.importData).find(Array.isArray) as readonly unknown[] | undefined;
  return (index) => {
    const row = rows?.[index] as { readonly email?: unknown; readonly platformId?: unknown } | undefined;
    const name = row?.email ?? row?.platformId;
    return typeof name === 'string' ? name : undefined;
  };
}

/** The result lines of a finished import, from the POST answer or from GetImportJobResult. */
function printFinished(
  result: ImportResponse | ImportJobView,
  rowName: (index: number) => string | undefined,
): void {
  if (result.status === 'Pending') return;
  const counts = `${result.commandsExecuted ?? 0} commands, ${result.eventsGenerated ?? 0} events, ${result.skipped ?? 0} skipped`;
  const took = result.executionDuration ? `, took ${result.executionDuration}` : '';
  out(`${result.status}: ${result.message} (${counts}${took})`);
  if (result.status === 'Failed' && result.errorMessage) {
    out(`error${result.errorCode ? ` ${result.errorCode}` : ''}: ${result.errorMessage}`);
  }
  const rowErrors = result.rowErrors ?? [];
  for (const row of rowErrors.slice(0, MAX_ROW_ERRORS_SHOWN)) {
    const name = rowName(row.index);
    out(`  row ${row.index}${name ? ` (${name})` : ''}: ${row.code}: ${row.message}`);
  }
  if (rowErrors.length > MAX_ROW_ERRORS_SHOWN)
    out(`  ... and ${rowErrors.length - MAX_ROW_ERRORS_SHOWN} more`);
}

/** A bar on a terminal; elsewhere a plain line at most every PLAIN_PROGRESS_EVERY_MS. */
function progressReporter(): { update(view: ImportJobView): void; stop(): void } {
  if (process.stderr.isTTY) {
    const bar = new SingleBar({
      stream: process.stderr,
      format: 'import [{bar}] {percentage}% | {value}/{total} rows | {status}',
      hideCursor: true,
    });
    let started = false;
    return {
      update(view) {
        const { done, total } = view.progress;
        if (!started) {
          bar.start(Math.max(total, 1), done, { status: view.status });
          started = true;
        }
        bar.setTotal(Math.max(total, 1));
        bar.update(done, { status: view.status });
      },
      stop: () => (started ? bar.stop() : undefined),
    };
  }
  let lastPrinted = 0;
  return {
    update(view) {
      const now = Date.now();
      if (view.status === 'Pending' && now - lastPrinted < PLAIN_PROGRESS_EVERY_MS) return;
      lastPrinted = now;
      const { done, total } = view.progress;
      const percent = total > 0 ? Math.floor((done / total) * 100) : 100;
      err(`progress ${done}/${total} rows (${percent}%) ${view.status}`);
    },
    stop: () => undefined,
  };
}

async function main(argv: readonly string[], env: NodeJS.ProcessEnv): Promise<number> {
  const options = parseCommandLine(argv);
  const target = targetFromEnvironment(env);
  const file = await readImportFile(options.file);
  let body;
  try {
    body = buildImportRequest(file, {
      requestId: target.requestId,
      ...(options.priority ? { priority: options.priority } : {}),
      dryRun: options.dryRun,
    });
  } catch (error) {
    if (error instanceof ImportFileError) throw new UsageError(`${options.file}: ${error.message}`);
    throw error;
  }
  const client = new ImportClient(target);
  const rowName = rowNames(body);

  const response = await client.submit(body);
  printSubmitted(response);
  if (response.status === 'Failed') {
    printFinished(response, rowName);
    return EXIT.failed;
  }
  if (response.status === 'Completed') {
    printFinished(response, rowName);
    return EXIT.completed;
  }
  if (!options.wait) return EXIT.completed;

  const progress = progressReporter();
  let result: ImportJobView;
  try {
    result = await client.waitUntilFinished(response.importJobId, {
      intervalMs: POLL_INTERVAL_MS,
      timeoutMs: options.timeoutMs,
      onUpdate: (view) => progress.update(view),
    });
  } finally {
    progress.stop();
  }
  printFinished(result, rowName);
  return result.status === 'Completed' ? EXIT.completed : EXIT.failed;
}

function exitCodeFor(error: unknown): number {
  if (error instanceof UsageError) {
    err(error.message);
    if (error.showUsage) err(USAGE);
    return EXIT.usage;
  }
  if (error instanceof HttpError) {
    err(`${error.endpoint} answered HTTP ${error.status}`);
    err(error.body ? `body: ${error.body}` : 'body: (empty)');
    return EXIT.http;
  }
  if (error instanceof NetworkError) {
    err(error.message);
    return EXIT.http;
  }
  if (error instanceof WaitTimeoutError) {
    const progress = error.last ? ` (${error.last.progress.done}/${error.last.progress.total} rows)` : '';
    err(`${error.message}${progress}; it goes on in the service: look it up with GetImportJobResult`);
    return EXIT.timeout;
  }
  err(error instanceof Error ? (error.stack ?? error.message) : String(error));
  return EXIT.internal;
}

main(process.argv.slice(2), process.env).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    process.exitCode = exitCodeFor(error);
  },
);
