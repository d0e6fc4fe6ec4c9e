import type Joi from 'joi';

import type { Actor } from '../accounts/account';
import type { CoreServices } from '../core-services';
import { lacksRolesMessage, type Role } from '../roles';

export const IMPORT_PRIORITIES = ['Normal', 'High'] as const;
export type ImportPriority = (typeof IMPORT_PRIORITIES)[number];
export const IMPORT_STATUSES = ['Pending', 'Completed', 'Failed'] as const;
export type ImportStatus = (typeof IMPORT_STATUSES)[number];

/** Error codes of an import: the spec's two, plus one for a batch refused before any command ran. */
export const IMPORT_ERROR_CODES = [
  'UNKNOWN_IMPORTER_TYPE',
  'AGGREGATE_PROCESSING_FAILED',
  'IMPORT_VALIDATION_FAILED',
] as const;
export type ImportErrorCode = (typeof IMPORT_ERROR_CODES)[number];

/**
 * One row an operator should look at: it failed, was skipped, or would be. A user's row is named by
 * its index only, never its e-mail: the record is kept for days, and an erased account's e-mail
 * must not outlive it there (ADR 0014).
 */
export interface RowError {
  readonly index: number;
  /** A player's platform id (not personal data). */
  readonly platformId?: string;
  readonly code: string;
  readonly message: string;
}

/** What running (or dry-running) an import produced. */
export interface ImportOutcome {
  readonly status: Exclude<ImportStatus, 'Pending'>;
  readonly success: boolean;
  readonly message: string;
  readonly commandsExecuted: number;
  readonly eventsGenerated: number;
  readonly aggregatesProcessed: number;
  readonly skipped: number;
  readonly rowErrors: readonly RowError[];
  readonly errorMessage?: string;
  readonly errorCode?: ImportErrorCode;
  /** Only for a dry run: what a real run would do. */
  readonly dryRun?: { readonly wouldCreate: number; readonly wouldSkip: number };
}

/** An outcome with zero counts unless given; success follows the status. */
export function importOutcome(
  fields: Partial<ImportOutcome> & Pick<ImportOutcome, 'status' | 'message'>,
): ImportOutcome {
  return {
    success: fields.status === 'Completed',
    commandsExecuted: 0,
    eventsGenerated: 0,
    aggregatesProcessed: 0,
    skipped: 0,
    rowErrors: [],
    ...fields,
  };
}

/** The spec's message prefix for a command that failed while processing (4.6 rule 3). */
export function failedAtAggregate(aggregateId: string, reason: string): string {
  return `Import failed at aggregate ${aggregateId}: ${reason}`;
}

/** The aggregate a role refusal names when the data received names none its schema would take. */
export const NO_AGGREGATE_ID = '00000000-0000-0000-0000-000000000000';

/**
 * The spec's failure of a submitter without the roles of `commandType` (4.6 rule 3), at the first
 * row's aggregate: `Import failed at aggregate <id>: User '<email>' (<user id>) lacks required roles
 * ...`, one for each importer. A role-less import's data is never validated, so the `aggregateId`
 * given must be one its schema's rule takes (or derived from one), else {@link NO_AGGREGATE_ID}:
 * nothing else of the body reaches the record, which stays a few hundred bytes whatever it held.
 */
export function roleRefusal(
  commandType: string,
  requiredRoles: readonly Role[],
): (aggregateId: string, actor: Actor) => ImportOutcome {
  return (aggregateId, actor) =>
    processingFailed(failedAtAggregate(aggregateId, lacksRolesMessage(actor, commandType, requiredRoles)));
}

/** A whole-batch refusal before any command ran (rows repeating a unique key, say). */
export function batchRefused(message: string, rowErrors: readonly RowError[]): ImportOutcome {
  return importOutcome({
    status: 'Failed',
    message,
    errorMessage: message,
    errorCode: 'IMPORT_VALIDATION_FAILED',
    rowErrors,
  });
}

/** The spec's processing failure (4.6 rules 2 and 3): AGGREGATE_PROCESSING_FAILED, status Failed. */
export function processingFailed(message: string, fields: Partial<ImportOutcome> = {}): ImportOutcome {
  return importOutcome({
    ...fields,
    status: 'Failed',
    message,
    errorMessage: message,
    errorCode: 'AGGREGATE_PROCESSING_FAILED',
  });
}

/**
 * Whether the submitter still stands behind a running import (enabled, same security stamp, still
 * holding the importer's role), re-checked between rows. An importer awaits `mayContinue()` before
 * each row and starts no more once it said false; it then ends with {@link stoppedBySubmitter}.
 */
export interface SubmitterCheck {
  /** Re-reads the submitter when its last read is stale; false once it no longer stands behind the import. */
  mayContinue(): Promise<boolean>;
  /** Why the import must stop (e.g. `the submitter <id> was disabled`), or null. */
  readonly stopReason: string | null;
}

/** For runs no account stands behind (a dry run, which changes nothing; the service itself). */
export const UNCHECKED_SUBMITTER: SubmitterCheck = {
  mayContinue: () => Promise.resolve(true),
  stopReason: null,
};

/**
 * The failure of an import stopped because its submitter no longer stands behind it, keeping the
 * counts of the rows that ran: `Import stopped after 37 of 200 rows: the submitter <id> was disabled`.
 */
export function stoppedBySubmitter(
  reason: string,
  rowsRun: number,
  rows: number,
  counts: Partial<ImportOutcome>,
): ImportOutcome {
  return processingFailed(`Import stopped after ${rowsRun} of ${rows} rows: ${reason}`, counts);
}

export interface ImportContext {
  /** The account that submitted the import; its roles are checked now, not at the endpoint. */
  readonly actor: Actor;
  readonly importJobId: string;
  readonly requestId: string;
  readonly dryRun: boolean;
  /** How many commands run at once. */
  readonly concurrency: number;
  /** Re-checked between rows: an import ends once its submitter no longer stands behind it. */
  readonly submitter: SubmitterCheck;
  onProgress(done: number, total: number): void | Promise<void>;
}

/**
 * An importer turns `importData` into commands and runs them through the same aggregate pipeline
 * as POST /api/command, as the submitting account.
 */
export interface Importer<Data = unknown> {
  readonly importerType: string;
  readonly description: string;
  /** The roles its commands need (shown by AvailableImporters; checked while processing). */
  readonly requiredRoles: readonly Role[];
  /** Validates `importData`; `maxRows` is the configured batch limit. */
  schema(maxRows: number): Joi.ObjectSchema<Data>;
  rowCount(data: Data): number;
  run(data: Data, context: ImportContext, services: CoreServices): Promise<ImportOutcome>;
  /**
   * What `run` answers a submitter without `requiredRoles` (the spec's failure at the first row's
   * aggregate, 4.6 rule 3), read from `data` as it was received: unvalidated, and no row beyond the
   * first looked at, so a role-less import costs one JSON parse and no row validation.
   */
  refuseWithoutRole(data: unknown, actor: Actor, services: CoreServices): Promise<ImportOutcome>;
}

/** `data[field]` as received (unvalidated), when `data` is an object and that field an array. */
export function receivedRows(data: unknown, field: string): readonly unknown[] | undefined {
  const rows = receivedField(data, field);
  return Array.isArray(rows) ? (rows as unknown[]) : undefined;
}

/** `value[field]` as received (unvalidated), when `value` is an object. */
export function receivedField(value: unknown, field: string): unknown {
  return typeof value === 'object' && value !== null ? (value as Record<string, unknown>)[field] : undefined;
}

const builtSchemas = new WeakMap<Importer, Map<number, Joi.ObjectSchema>>();

/**
 * The importer's `importData` schema for a row limit, built once: a fresh joi schema per request
 * would also miss validate()'s per-schema preference cache and recompile its messages each time.
 */
export function importDataSchema<Data>(importer: Importer<Data>, maxRows: number): Joi.ObjectSchema<Data> {
  const byLimit = builtSchemas.get(importer) ?? new Map<number, Joi.ObjectSchema>();
  builtSchemas.set(importer, byLimit);
  let schema = byLimit.get(maxRows);
  if (!schema) {
    schema = importer.schema(maxRows);
    byLimit.set(maxRows, schema);
  }
  return schema as Joi.ObjectSchema<Data>;
}

/** `hh:mm:ss.ff`, the spec's time-span text for executionDuration. */
export function formatTimeSpan(milliseconds: number): string {
  const hundredths = Math.floor(Math.max(0, milliseconds) / 10);
  const pad = (value: number) => String(value).padStart(2, '0');
  const seconds = Math.floor(hundredths / 100);
  return `${pad(Math.floor(seconds / 3600))}:${pad(Math.floor(seconds / 60) % 60)}:${pad(seconds % 60)}.${pad(hundredths % 100)}`;
}

/**
 * Runs `work` over `items` with at most `limit` in flight; stops starting new ones once `stop()`
 * says so or one throws. A throw is rethrown only after every lane has settled, so no work of a
 * failed attempt is still running when BullMQ starts the retry.
 */
export async function forEachLimited<T>(
  items: readonly T[],
  limit: number,
  work: (item: T) => Promise<void>,
  stop: () => boolean,
): Promise<void> {
  let next = 0;
  let failure: { error: unknown } | undefined;
  const lane = async () => {
    while (next < items.length && !stop() && !failure) {
      const item = items[next++] as T;
      try {
        await work(item);
      } catch (error) {
        failure ??= { error };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, lane));
  if (failure) throw failure.error;
}
