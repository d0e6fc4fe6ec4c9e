import type { RedisClient } from '../redis/connections';

import type { Keys } from '../redis/keys';
import type { ImportErrorCode, ImportOutcome, ImportPriority, ImportStatus, RowError } from './importer';

/** One import's status and result: what GetImportJobResult and a repeated request answer. */
export interface ImportRecord {
  readonly importJobId: string;
  readonly requestId: string;
  readonly importerType: string;
  readonly priority: ImportPriority;
  readonly submitterUserId: string;
  readonly status: ImportStatus;
  readonly message: string;
  readonly processedSynchronously: boolean;
  readonly success: boolean | null;
  readonly commandsExecuted: number;
  readonly eventsGenerated: number;
  readonly aggregatesProcessed: number;
  readonly skipped: number;
  readonly progress: { readonly done: number; readonly total: number };
  readonly executionDuration: string | null;
  readonly errorMessage: string | null;
  readonly errorCode: ImportErrorCode | null;
  readonly rowErrors: readonly RowError[];
  readonly importResultId: string | null;
  readonly createdAt: string;
  readonly completedAt: string | null;
}

/** What GetImportJobResult answers for a job (the record without its internal fields). */
export type ImportJobResultItem = Omit<
  ImportRecord,
  'submitterUserId' | 'processedSynchronously' | 'importResultId'
>;

export function toJobResultItem(record: ImportRecord): ImportJobResultItem {
  const {
    submitterUserId: _submitter,
    processedSynchronously: _inline,
    importResultId: _resultId,
    ...item
  } = record;
  return item;
}

export type NewImportRecord = Pick<
  ImportRecord,
  | 'importJobId'
  | 'requestId'
  | 'importerType'
  | 'priority'
  | 'submitterUserId'
  | 'message'
  | 'processedSynchronously'
> & { readonly total: number };

/** Import records in Redis, one JSON string each, kept IMPORT_RESULT_TTL_SECONDS. */
export class ImportResults {
  constructor(
    private readonly redis: RedisClient,
    private readonly keys: Keys,
    private readonly ttlSeconds: number,
  ) {}

  /** The record; while Pending, with the latest progress the running attempt reported. */
  async get(importJobId: string): Promise<ImportRecord | null> {
    const [stored, progress] = await this.redis.mget(
      this.keys.importResult(importJobId),
      this.keys.importProgress(importJobId),
    );
    if (!stored) return null;
    const record = JSON.parse(stored) as ImportRecord;
    if (record.status !== 'Pending' || !progress) return record;
    return { ...record, progress: JSON.parse(progress) as ImportRecord['progress'] };
  }

  /** Writes a Pending record unless one exists; returns the record that is kept. */
  async createPending(
    fields: NewImportRecord,
    now: Date,
  ): Promise<{ record: ImportRecord; created: boolean }> {
    // Only the declared fields: a caller's object may carry more (a job with its importData and
    // passwords), and the record is what GetImportJobResult answers.
    const {
      importJobId,
      requestId,
      importerType,
      priority,
      submitterUserId,
      message,
      processedSynchronously,
    } = fields;
    const record: ImportRecord = {
      importJobId,
      requestId,
      importerType,
      priority,
      submitterUserId,
      message,
      processedSynchronously,
      status: 'Pending',
      success: null,
      commandsExecuted: 0,
      eventsGenerated: 0,
      aggregatesProcessed: 0,
      skipped: 0,
      progress: { done: 0, total: fields.total },
      executionDuration: null,
      errorMessage: null,
      errorCode: null,
      rowErrors: [],
      importResultId: null,
      createdAt: now.toISOString(),
      completedAt: null,
    };
    const set = await this.redis.set(
      this.keys.importResult(fields.importJobId),
      JSON.stringify(record),
      'EX',
      this.ttlSeconds,
      'NX',
    );
    if (set === 'OK') return { record, created: true };
    return { record: (await this.get(fields.importJobId)) ?? record, created: false };
  }

  /** Progress has its own key: the record is written only when the import starts and ends. */
  async progress(importJobId: string, done: number, total: number): Promise<void> {
    await this.redis.set(
      this.keys.importProgress(importJobId),
      JSON.stringify({ done, total }),
      'EX',
      this.ttlSeconds,
    );
  }

  async complete(
    importJobId: string,
    outcome: ImportOutcome,
    durationText: string,
    importResultId: string,
    now: Date,
  ): Promise<ImportRecord> {
    const record = await this.get(importJobId);
    if (!record) throw new Error(`import ${importJobId} has no record`);
    const done: ImportRecord = {
      ...record,
      status: outcome.status,
      message: outcome.message,
      success: outcome.success,
      commandsExecuted: outcome.commandsExecuted,
      eventsGenerated: outcome.eventsGenerated,
      aggregatesProcessed: outcome.aggregatesProcessed,
      skipped: outcome.skipped,
      progress: { done: record.progress.total, total: record.progress.total },
      executionDuration: durationText,
      errorMessage: outcome.errorMessage ?? null,
      errorCode: outcome.errorCode ?? null,
      rowErrors: outcome.rowErrors,
      importResultId,
      completedAt: now.toISOString(),
    };
    await this.save(done);
    return done;
  }

  /** Marks a job that can no longer run (out of retries) as Failed, unless it finished meanwhile. */
  async failIfPending(importJobId: string, message: string): Promise<void> {
    const record = await this.get(importJobId);
    if (!record || record.status !== 'Pending') return;
    await this.save({
      ...record,
      status: 'Failed',
      success: false,
      message,
      errorMessage: message,
      errorCode: 'AGGREGATE_PROCESSING_FAILED',
      completedAt: new Date().toISOString(),
    });
  }

  async discard(importJobId: string): Promise<void> {
    await this.redis.del(this.keys.importResult(importJobId), this.keys.importProgress(importJobId));
  }

  private async save(record: ImportRecord): Promise<void> {
    await this.redis.set(
      this.keys.importResult(record.importJobId),
      JSON.stringify(record),
      'EX',
      this.ttlSeconds,
    );
  }
}
