import type {
  ImportErrorCode,
  ImportPriority,
  ImportStatus,
  RowError,
} from '../../shared/importers/importer';
import type { ImportRecord } from '../../shared/importers/import-results';

/** The all-zero GUID the spec answers as importJobId when nothing was queued. */
export const EMPTY_GUID = '00000000-0000-0000-0000-000000000000';

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
