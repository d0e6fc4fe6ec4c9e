import type { Actor } from '../../shared/accounts/account';
import type { Config } from '../../shared/config';
import type { CoreServices } from '../../shared/core-services';
import { processImport } from '../../shared/importers/import-processor';
import { type ImportJobData, importJobIdFor, type ImportQueue } from '../../shared/importers/import-queue';
import type { ImportRecord, ImportResults } from '../../shared/importers/import-results';
import {
  type Importer,
  type ImportOutcome,
  type ImportPriority,
  UNCHECKED_SUBMITTER,
} from '../../shared/importers/importer';
import type { Logger } from '../../shared/logger';
import type { Metrics } from '../../shared/metrics/metrics';
import { hasAnyRole } from '../../shared/roles';

/** Long enough for any inline import; released as soon as it ends. */
const INLINE_CLAIM_TTL_MS = 10 * 60 * 1000;

/** One validated import request, as POST /api/import received it. */
export interface ImportSubmission {
  /** Lower case. */
  readonly requestId: string;
  readonly importer: Importer;
  readonly priority: ImportPriority;
  /**
   * Validated by the importer's schema (for IMPORT_MAX_ROWS); as received when the submitter lacks
   * the importer's roles (it is refused before any row is read).
   */
  readonly importData: unknown;
  readonly dryRun: boolean;
}

/**
 * The account submitting, with its security stamp as it was authenticated: the import is tied to
 * it, and stops once it changes. A caller that knows no stamp (tests, the service) ties none.
 */
export type Submitter = Actor & { readonly securityStamp?: string };

export interface SubmitImportServices {
  readonly services: CoreServices;
  readonly importQueue: ImportQueue;
  readonly importResults: ImportResults;
  readonly config: Config;
  readonly logger: Logger;
  readonly metrics: Metrics;
}

/**
 * What a submission came to: a dry run's outcome (nothing stored), the import's record (new and
 * queued, run inline, or the one a resent request made already), or a refusal because the submitter
 * is at MAX_PENDING_IMPORTS_PER_USER (nothing stored).
 */
export type SubmitImportOutcome =
  | { readonly kind: 'dry-run'; readonly importJobId: string; readonly outcome: ImportOutcome }
  | { readonly kind: 'recorded'; readonly record: ImportRecord }
  | { readonly kind: 'too-many-pending'; readonly limit: number };

/**
 * Submits one import for its submitter: a dry run checks everything and changes nothing; otherwise
 * one record per (submitter, requestId) — a resent request answers the job it made — within the
 * submitter's Pending bound, run inline when it is High and the queue is idle, else queued (its
 * data sealed by the queue). Redis going away propagates (a 503), after leaving the import where a
 * resend or the workers finish it.
 */
export async function submitImport(
  deps: SubmitImportServices,
  submitter: Submitter,
  submission: ImportSubmission,
): Promise<SubmitImportOutcome> {
  const { importQueue, importResults, config } = deps;
  const { importer, requestId, priority } = submission;
  const importJobId = importJobIdFor(submitter.userId, requestId);
  // Without the importer's roles it can only fail at its first row, from data nobody validated.
  const mayRun = hasAnyRole(submitter.roles, importer.requiredRoles);

  // 1. A dry run checks everything and changes nothing.
  if (submission.dryRun && !mayRun) {
    return {
      kind: 'dry-run',
      importJobId,
      outcome: await importer.refuseWithoutRole(submission.importData, submitter, deps.services),
    };
  }
  if (submission.dryRun) {
    const outcome = await importer.run(
      submission.importData,
      {
        actor: submitter,
        importJobId,
        requestId,
        dryRun: true,
        concurrency: 1,
        // A dry run changes nothing: there is nothing to stop.
        submitter: UNCHECKED_SUBMITTER,
        onProgress: () => undefined,
      },
      deps.services,
    );
    return { kind: 'dry-run', importJobId, outcome };
  }

  // 2. One record per requestId: a resent request answers the job it already made. A new one must
  //    fit within the submitter's Pending imports, else nothing is stored.
  const limit = config.imports.maxPendingPerUser;
  if (
    !(await importResults.get(importJobId)) &&
    !(await importResults.reservePending(submitter.userId, importJobId, limit))
  ) {
    return { kind: 'too-many-pending', limit };
  }
  const job: ImportJobData = {
    importJobId,
    requestId,
    importerType: importer.importerType,
    priority,
    submitterUserId: submitter.userId,
    ...(submitter.securityStamp === undefined ? {} : { submitterSecurityStamp: submitter.securityStamp }),
    importData: submission.importData,
  };
  let release = priority === 'High' ? await importQueue.claimInline(INLINE_CLAIM_TTL_MS) : null;
  try {
    const message = release
      ? 'Import is being processed synchronously'
      : `Import job queued with ${priority} priority${priority === 'High' ? ' (the import queue is busy)' : ''}`;
    const { record, created } = await importResults.createPending(
      {
        ...job,
        message,
        processedSynchronously: release !== null,
        // A refused import reads no row: none is counted either.
        total: mayRun ? importer.rowCount(job.importData) : 0,
      },
      new Date(),
    );
    if (!created) {
      await resumeExisting(deps, job, record);
      return { kind: 'recorded', record };
    }
    // 3. Inline on an idle queue; otherwise the workers take it.
    if (release) {
      const claim = release;
      release = null;
      return { kind: 'recorded', record: await runInline(deps, job, claim) };
    }
    // A submitter without the importer's roles: the import can only fail, at its first row, before
    // any command runs. It fails here and now, so none of its data is queued, held in Redis, or put
    // in front of other accounts' imports; the answer is still the queued one (spec 3.3), and the
    // record, read at once, the failure.
    if (!mayRun) {
      await processImport(job, deps.services, importResults, config, {
        onFinished: (finished) => deps.metrics.recordImport('inline', finished),
      });
      return { kind: 'recorded', record };
    }
    try {
      await importQueue.enqueue(job);
    } catch (error) {
      // So a resend can try again, and the import no longer counts as Pending.
      await importResults.discard(importJobId, submitter.userId).catch(() => undefined);
      throw error;
    }
    return { kind: 'recorded', record };
  } finally {
    if (release) await releaseClaim(deps.logger, release, importJobId);
  }
}

/**
 * Gives the inline claim back. The answer does not depend on it: a claim Redis could not release
 * lapses after INLINE_CLAIM_TTL_MS, and until then a High import is queued instead.
 */
async function releaseClaim(
  logger: Logger,
  release: () => Promise<void>,
  importJobId: string,
): Promise<void> {
  await release().catch((error: unknown) =>
    logger.warn('inline import claim not released; it lapses by itself', {
      importJobId,
      error: error instanceof Error ? error.message : String(error),
    }),
  );
}

/**
 * A resent request's record. A Pending record may have no job behind it: an inline run whose
 * ingress died, or a queued one whose enqueue failed with Redis (and the record's discard with it).
 * Queue it again; BullMQ ignores an add whose job id it holds, so a job already queued or running
 * stays one.
 */
async function resumeExisting(
  deps: SubmitImportServices,
  job: ImportJobData,
  record: ImportRecord,
): Promise<void> {
  if (record.status !== 'Pending') {
    await deps.importResults.releasePending(job.submitterUserId, job.importJobId); // counted by a racing twin
  }
  if (
    record.status === 'Pending' &&
    (!record.processedSynchronously || !(await deps.importQueue.inlineRunning()))
  ) {
    // A job BullMQ failed for good whose record was not written (the worker died, or Redis went,
    // between the two): an add would be ignored, as BullMQ holds the id, and the record would stay
    // Pending until it expired. It ends Failed, with BullMQ's reason.
    const failedReason = await deps.importQueue.failedReason(job.importJobId);
    if (failedReason !== null) {
      await deps.importResults.failIfPending(job.importJobId, `Import failed: ${failedReason}`);
      return;
    }
    await deps.importQueue.enqueue(job);
  }
}

/**
 * Runs the import in this process, holding the inline claim, and releases the claim. Failed
 * part-way (Redis went away), the record stays Pending and nobody would finish it, nor free the
 * claim, until a resend after the claim lapsed: the workers take it over as soon as Redis allows,
 * and the caller gets the error (a 503) meanwhile.
 */
async function runInline(
  deps: SubmitImportServices,
  job: ImportJobData,
  release: () => Promise<void>,
): Promise<ImportRecord> {
  const { importQueue, logger } = deps;
  let finished: ImportRecord;
  try {
    finished = await processImport(job, deps.services, deps.importResults, deps.config, {
      onFinished: (record) => deps.metrics.recordImport('inline', record),
    });
  } catch (error) {
    const { importJobId } = job;
    void importQueue
      .handOver(job, release)
      .then((handedOver) =>
        handedOver
          ? logger.info('inline import handed to the workers', { importJobId })
          : logger.warn('inline import not handed to the workers; a resend will queue it', { importJobId }),
      );
    throw error;
  }
  await releaseClaim(logger, release, job.importJobId);
  return finished;
}
