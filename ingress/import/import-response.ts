import { AppError } from '../../shared/errors';
import type { ImportRecord } from '../../shared/importers/import-results';
import {
  IMPORT_ERROR_CODES,
  IMPORT_PRIORITIES,
  IMPORT_STATUSES,
  type ImportErrorCode,
  type ImportOutcome,
  type ImportPriority,
  type ImportStatus,
  type RowError,
} from '../../shared/importers/importer';
import { closedObject, GUID_SCHEMA, type JsonSchema } from '../http/json-schema';
import type { ImportSubmission, SubmitImportOutcome } from './submit-import';

/** The all-zero GUID the spec answers as importJobId when nothing was queued. */
export const EMPTY_GUID = '00000000-0000-0000-0000-000000000000';

/** The spec's message for an importerType that names no importer (section 7). */
export function unknownImporterMessage(importerType: string): string {
  return `Unknown importer type: ${importerType}`;
}

/** How long a caller refused for too many Pending imports is asked to wait. */
export const PENDING_IMPORTS_RETRY_AFTER_SECONDS = 10;

/** The 429 problem of a submitter at MAX_PENDING_IMPORTS_PER_USER; nothing was stored. */
export function tooManyPendingImports(limit: number): AppError {
  return new AppError(
    'TOO_MANY_REQUESTS',
    `Too many imports pending: an account may have at most ${limit} imports Pending at once. Send it again once one of them has finished.`,
    429,
    { retryAfterSeconds: PENDING_IMPORTS_RETRY_AFTER_SECONDS },
  );
}

/** The spec's 2.7 response. Result fields appear once the import has run. */
export interface ImportResponseBody {
  readonly requestId: string | null;
  readonly importJobId: string;
  readonly importResultId?: string;
  readonly status: ImportStatus;
  readonly priority: ImportPriority;
  readonly importerType: string;
  readonly message: string;
  readonly processedSynchronously: boolean;
  readonly success?: boolean;
  readonly commandsExecuted?: number;
  readonly eventsGenerated?: number;
  readonly aggregatesProcessed?: number;
  readonly skipped?: number;
  readonly executionDuration?: string;
  readonly errorMessage?: string;
  readonly errorCode?: ImportErrorCode;
  readonly rowErrors?: readonly RowError[];
}

export function responseFromRecord(record: ImportRecord): ImportResponseBody {
  const base = {
    requestId: record.requestId,
    importJobId: record.importJobId,
    status: record.status,
    priority: record.priority,
    importerType: record.importerType,
    message: record.message,
    processedSynchronously: record.processedSynchronously,
  };
  if (record.status === 'Pending') return base;
  return {
    ...base,
    importResultId: record.importResultId ?? undefined,
    success: record.success ?? false,
    commandsExecuted: record.commandsExecuted,
    eventsGenerated: record.eventsGenerated,
    aggregatesProcessed: record.aggregatesProcessed,
    skipped: record.skipped,
    executionDuration: record.executionDuration ?? undefined,
    ...(record.errorMessage ? { errorMessage: record.errorMessage } : {}),
    ...(record.errorCode ? { errorCode: record.errorCode } : {}),
    rowErrors: record.rowErrors,
  };
}

/** A status and the spec's 2.7 body (or a dry run's answer), ready to send. */
export interface ImportAnswer {
  readonly status: 200 | 400;
  readonly body: ImportResponseBody | DryRunResponseBody;
}

/** A dry run's answer: the import's outcome with what a real run would do, nothing stored. */
export type DryRunResponseBody = Omit<ImportResponseBody, 'status' | 'importResultId'> &
  ImportOutcome & { readonly importJobId: string };

/** The answer to an importerType that names no importer: nothing was queued. */
export function unknownImporterAnswer(request: {
  readonly requestId: string;
  readonly importerType: string;
  readonly priority: ImportPriority;
}): ImportAnswer {
  const message = unknownImporterMessage(request.importerType);
  return {
    status: 400,
    body: {
      requestId: request.requestId,
      importJobId: EMPTY_GUID,
      status: 'Failed',
      priority: request.priority,
      importerType: request.importerType,
      message,
      processedSynchronously: false,
      errorMessage: message,
      errorCode: 'UNKNOWN_IMPORTER_TYPE',
    },
  };
}

/**
 * The one mapping of a submission's outcome to HTTP: the spec's 2.7 answer, or the 429 problem
 * (thrown, for the error handler) of a submitter at MAX_PENDING_IMPORTS_PER_USER.
 */
export function importAnswer(outcome: SubmitImportOutcome, submission: ImportSubmission): ImportAnswer {
  switch (outcome.kind) {
    case 'dry-run':
      return {
        status: 200,
        body: {
          requestId: submission.requestId,
          importJobId: outcome.importJobId,
          priority: submission.priority,
          importerType: submission.importer.importerType,
          processedSynchronously: true,
          ...outcome.outcome,
        },
      };
    case 'recorded':
      return { status: 200, body: responseFromRecord(outcome.record) };
    case 'too-many-pending':
      throw tooManyPendingImports(outcome.limit);
  }
}

const count: JsonSchema = { type: 'integer', minimum: 0 };

/** One row an operator should look at (RowError). */
export const ROW_ERROR_SCHEMA: JsonSchema = closedObject(
  {
    index: { type: 'integer', minimum: 0, description: 'The row, counted from 0.' },
    email: {
      type: 'string',
      deprecated: true,
      description:
        "The row's e-mail, in records written before rows stopped naming one (ADR 0014); a row is named by its index.",
    },
    platformId: { ...GUID_SCHEMA, description: "The row's platform id (PlayerSeeding)." },
    code: { type: 'string', examples: ['USER_EXISTS', 'DUPLICATE_IN_BATCH', 'ROLE_NOT_GRANTABLE'] },
    message: { type: 'string' },
  },
  ['email', 'platformId'],
);

/**
 * The JSON Schema of every answer of POST /api/import (spec 2.7): queued, run inline, repeated,
 * dry run, or refused for an unknown importer type. Result fields appear once the import has run.
 */
export const IMPORT_RESPONSE_SCHEMA: JsonSchema = closedObject(
  {
    requestId: { ...GUID_SCHEMA, description: 'Echo (lower case).' },
    importJobId: {
      ...GUID_SCHEMA,
      description: `The job; ${EMPTY_GUID} when the importer type is unknown.`,
    },
    importResultId: { ...GUID_SCHEMA, description: 'When the import has run.' },
    status: { type: 'string', enum: IMPORT_STATUSES },
    priority: { type: 'string', enum: IMPORT_PRIORITIES },
    importerType: { type: 'string' },
    message: { type: 'string' },
    processedSynchronously: { type: 'boolean' },
    success: { type: 'boolean' },
    commandsExecuted: count,
    eventsGenerated: count,
    aggregatesProcessed: count,
    skipped: { ...count, description: 'Rows skipped (skipIfUsersExist).' },
    executionDuration: {
      type: 'string',
      pattern: '^\\d{2,}:\\d{2}:\\d{2}\\.\\d{2}$',
      description: 'Time span text, hh:mm:ss.ff.',
    },
    errorMessage: { type: 'string' },
    errorCode: { type: 'string', enum: IMPORT_ERROR_CODES },
    rowErrors: { type: 'array', items: ROW_ERROR_SCHEMA },
    dryRun: closedObject({ wouldCreate: count, wouldSkip: count }, [], {
      description: 'Only in the answer to a dry run: what a real run would do.',
    }),
  },
  [
    'importResultId',
    'success',
    'commandsExecuted',
    'eventsGenerated',
    'aggregatesProcessed',
    'skipped',
    'executionDuration',
    'errorMessage',
    'errorCode',
    'rowErrors',
    'dryRun',
  ],
  { title: 'ImportResponse' },
);
