import { randomUUID } from 'node:crypto';

import type { Actor } from '../accounts/account';
import type { Config } from '../config';
import type { CoreServices } from '../core-services';
import { hasAnyRole } from '../roles';
import type { ImportJobData } from './import-queue';
import type { ImportRecord, ImportResults } from './import-results';
import { formatTimeSpan, importDataSchema, type ImportOutcome, stoppedBySubmitter } from './importer';
import { IMPORTERS } from './registry';
import { submitterCheck, submitterRevocation, type SubmitterTie } from './submitter-check';

const PROGRESS_INTERVAL_MS = 250;

/** One import that ran to its end, as metrics see it. */
export interface FinishedImport {
  /** null when the job names no registered importer. */
  readonly importerType: string | null;
  readonly status: ImportOutcome['status'];
  /** The rows of its data (0 when it failed before reading them). */
  readonly rows: number;
  readonly durationSeconds: number;
}

export interface ProcessImportHooks {
  /** Progress of the running attempt (a worker reports it to BullMQ too). */
  readonly onProgress?: (done: number, total: number) => Promise<void>;
  /** Called once the import ran and its result is recorded; not for a job already finished. */
  readonly onFinished?: (finished: FinishedImport) => void;
}

/**
 * Runs one import to its end, wherever it runs (inline in the ingress, or in a worker), and
 * records the result. A finished record is final: running the same job again answers it unchanged.
 */
export async function processImport(
  job: ImportJobData,
  services: CoreServices,
  results: ImportResults,
  config: Config,
  hooks: ProcessImportHooks = {},
): Promise<ImportRecord> {
  const existing = await results.get(job.importJobId);
  if (existing && existing.status !== 'Pending') return existing;

  const started = Date.now();
  const importer = IMPORTERS.get(job.importerType);
  const submitter = await services.accounts.findById(job.submitterUserId);
  const onProgress = hooks.onProgress ?? (() => Promise.resolve());
  let rows = 0;
  let outcome: ImportOutcome;
  let refusedForRole = false;
  if (!importer) {
    outcome = failedBeforeRunning(`Unknown importer type: ${job.importerType}`);
  } else if (!submitter || (existing && submitter.createdAt > existing.createdAt)) {
    // An e-mail registered again after erasure has the erased account's id (ADR 0014): an import
    // submitted before this account was created is the erased account's, which no longer exists.
    outcome = failedBeforeRunning('The account that submitted this import no longer exists');
  } else if (submitter.disabled) {
    // Checked when it runs, as the roles are (spec 5 rule 4): a queued import of an account
    // disabled meanwhile (a compromised one, say) creates nothing.
    outcome = failedBeforeRunning('The account that submitted this import is disabled');
  } else if (!hasAnyRole(submitter.roles, importer.requiredRoles)) {
    // The spec's failure at the first row (4.6 rule 3, 5 rule 4), decided before any row is read:
    // no validation, no command; its record is kept IMPORT_REFUSED_RESULT_TTL_SECONDS.
    outcome = await importer.refuseWithoutRole(job.importData, submitter, services);
    refusedForRole = outcome.status === 'Failed';
  } else {
    const actor: Actor = { userId: submitter.userId, email: submitter.email, roles: submitter.roles };
    let progressWrittenAt = 0;
    const checked = importDataSchema(importer, config.imports.maxRows).validate(job.importData);
    const data = checked.value as unknown;
    rows = checked.error ? 0 : importer.rowCount(data);
    // Tied to its submitter as it submitted, re-checked between rows: disabled, deleted, without the
    // role or with a new stamp (a password or role change), the import starts no more rows.
    const tie: SubmitterTie = {
      userId: job.submitterUserId,
      securityStamp: job.submitterSecurityStamp,
      submittedAt: existing?.createdAt,
      requiredRoles: importer.requiredRoles,
    };
    const revokedAlready = submitterRevocation(submitter, tie);
    if (checked.error) {
      // Rows are validated at the ingress only when its submitter held the role there (ADR 0023):
      // data that was never validated is never run, whatever the submitter holds now.
      outcome = failedBeforeRunning(IMPORT_DATA_NOT_VALIDATED);
    } else if (revokedAlready !== null) {
      outcome = stoppedBySubmitter(revokedAlready, 0, rows, {});
    } else {
      outcome = await importer.run(
        data,
        {
          actor,
          importJobId: job.importJobId,
          requestId: job.requestId,
          dryRun: false,
          concurrency: config.imports.commandConcurrency,
          submitter: submitterCheck(() => services.accounts.findById(job.submitterUserId), tie),
          onProgress: async (done, total) => {
            // A few writes a second are plenty for a progress bar; a failed one must not fail the import.
            if (done !== total && Date.now() - progressWrittenAt < PROGRESS_INTERVAL_MS) return;
            progressWrittenAt = Date.now();
            await Promise.all([
              onProgress(done, total),
              results.progress(job.importJobId, done, total),
            ]).catch(() => undefined);
          },
        },
        services,
      );
    }
  }
  const durationMs = Date.now() - started;
  const record = await results.complete(
    job.importJobId,
    outcome,
    formatTimeSpan(durationMs),
    randomUUID(),
    new Date(),
    refusedForRole
      ? Math.min(config.imports.refusedResultTtlSeconds, config.imports.resultTtlSeconds)
      : config.imports.resultTtlSeconds,
  );
  hooks.onFinished?.({
    importerType: importer?.importerType ?? null,
    status: outcome.status,
    rows,
    durationSeconds: durationMs / 1000,
  });
  return record;
}

/**
 * Why a queued import whose data fails its schema is not run: only a submitter without the
 * importer's role has its rows go unvalidated at the ingress, and that import was refused already.
 */
export const IMPORT_DATA_NOT_VALIDATED =
  'The import data was not validated when it was submitted (its submitter lacked the importer role) and does not pass it now: nothing was run';

function failedBeforeRunning(message: string): ImportOutcome {
  return {
    status: 'Failed',
    success: false,
    message,
    commandsExecuted: 0,
    eventsGenerated: 0,
    aggregatesProcessed: 0,
    skipped: 0,
    rowErrors: [],
    errorMessage: message,
    errorCode: 'AGGREGATE_PROCESSING_FAILED',
  };
}
