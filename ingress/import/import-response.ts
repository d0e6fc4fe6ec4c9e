import {
  IMPORT_ERROR_CODES,
  IMPORT_PRIORITIES,
  IMPORT_STATUSES,
  type ImportErrorCode,
  type ImportPriority,
  type ImportStatus,
  type RowError,
} from '../../shared/importers/importer';
import type { ImportRecord } from '../../shared/importers/import-results';
import { GUID_SCHEMA, closedObject, type JsonSchema } from '../openapi/json-schema';

/** The all-zero GUID the spec answers as importJobId when nothing was queued. */
export const EMPTY_GUID = '00000000-0000-0000-0000-000000000000';

/** The spec's message for an importerType that names no importer (section 7). */
export function unknownImporterMessage(importerType: string): string {
  return `Unknown importer type: ${importerType}`;
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

const count: JsonSchema = { type: 'integer', minimum: 0 };

/** One row an operator should look at (RowError). */
export const ROW_ERROR_SCHEMA: JsonSchema = closedObject(
  {
    index: { type: 'integer', minimum: 0, description: 'The row, counted from 0.' },
    email: { type: 'string', description: "The row's e-mail (UserSeeding)." },
    platformId: { ...GUID_SCHEMA, description: "The row's platform id (PlayerSeeding)." },
    code: { type: 'string', examples: ['USER_EXISTS', 'DUPLICATE_IN_BATCH'] },
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
