import type { RedisClient } from '../redis/connections';
import type { Keys } from '../redis/keys';
import { registerScripts } from '../redis/scripts';
import { IMPORT_SCRIPTS } from './import.scripts';
import { ImportRecordErasure } from './import-record-erasure';
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

/** What a new record takes from its caller's fields, and nothing else. */
const NEW_RECORD_FIELDS = [
  'importJobId',
  'requestId',
  'importerType',
  'priority',
  'submitterUserId',
  'message',
  'processedSynchronously',
] as const;

export type NewImportRecord = Pick<ImportRecord, (typeof NEW_RECORD_FIELDS)[number]> & {
  readonly total: number;
};

/**
 * A count reserved this recently whose record is not there yet is the request still on its way to
 * createPending, not a leftover: the self-repair in reservePending leaves it alone.
 */
const RESERVATION_GRACE_MS = 60_000;

/**
 * Import records in Redis, one JSON string each, kept IMPORT_RESULT_TTL_SECONDS; and, per
 * submitter, which of them are Pending (MAX_PENDING_IMPORTS_PER_USER), released as each ends. A
 * record names no account by e-mail but its submitter's (a role refusal, as the spec words it);
 * those are indexed so that erasing the submitter scrubs them (import-record-erasure.ts).
 */
export class ImportResults {
  private readonly erasure: ImportRecordErasure;

  constructor(
    private readonly redis: RedisClient,
    private readonly keys: Keys,
    private readonly ttlSeconds: number,
  ) {
    registerScripts(redis, IMPORT_SCRIPTS);
    this.erasure = new ImportRecordErasure(redis, keys);
  }

  /**
   * Counts a new import as Pending for its submitter; false when the submitter has `limit` Pending
   * already. Atomic in Redis, so it holds across ingress replicas. Should the count hold imports
   * that have ended (a release lost with Redis), they are dropped and the count tried once more.
   */
  async reservePending(submitterUserId: string, importJobId: string, limit: number): Promise<boolean> {
    const key = this.keys.importsPendingBySubmitter(submitterUserId);
    const reserve = () => this.redis.reservePendingImport(key, importJobId, limit, this.ttlSeconds);
    if ((await reserve()) === 1) return true;
    const counted = await this.redis.zrange(key, 0, -1, 'WITHSCORES');
    const stale: string[] = [];
    for (let i = 0; i + 1 < counted.length; i += 2) {
      const jobId = counted[i] as string;
      const countedAtMs = Number(counted[i + 1]);
      const record = await this.get(jobId);
      if (record ? record.status !== 'Pending' : Date.now() - countedAtMs > RESERVATION_GRACE_MS) {
        stale.push(jobId);
      }
    }
    if (stale.length === 0) return false;
    await this.redis.zrem(key, ...stale);
    return (await reserve()) === 1;
  }

  /** The import no longer counts against its submitter (it ended, or was never stored). */
  async releasePending(submitterUserId: string, importJobId: string): Promise<void> {
    await this.redis.zrem(this.keys.importsPendingBySubmitter(submitterUserId), importJobId);
  }

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
    const declared = Object.fromEntries(NEW_RECORD_FIELDS.map((field) => [field, fields[field]])) as Pick<
      ImportRecord,
      (typeof NEW_RECORD_FIELDS)[number]
    >;
    const record: ImportRecord = {
      ...declared,
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
    /** How long the finished record is kept: IMPORT_RESULT_TTL_SECONDS unless said otherwise. */
    ttlSeconds = this.ttlSeconds,
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
    await this.save(done, ttlSeconds);
    await this.releasePending(done.submitterUserId, importJobId);
    return done;
  }

  /**
   * Marks a job that can no longer run (out of retries, stalled too often, data unreadable) as
   * Failed, unless it finished meanwhile; returns the record as it now stands (null if it has none).
   */
  async failIfPending(importJobId: string, message: string): Promise<ImportRecord | null> {
    const record = await this.get(importJobId);
    if (!record) return null;
    if (record.status !== 'Pending') {
      await this.releasePending(record.submitterUserId, importJobId);
      return record;
    }
    const failed: ImportRecord = {
      ...record,
      status: 'Failed',
      success: false,
      message,
      errorMessage: message,
      errorCode: 'AGGREGATE_PROCESSING_FAILED',
      completedAt: new Date().toISOString(),
    };
    await this.save(failed);
    await this.releasePending(failed.submitterUserId, importJobId);
    return failed;
  }

  /** Forgets an import that was never queued (its enqueue failed), so a resend can try again. */
  async discard(importJobId: string, submitterUserId: string): Promise<void> {
    await this.redis.del(this.keys.importResult(importJobId), this.keys.importProgress(importJobId));
    await this.releasePending(submitterUserId, importJobId);
  }

  private async save(record: ImportRecord, ttlSeconds = this.ttlSeconds): Promise<void> {
    const json = JSON.stringify(record);
    await Promise.all([
      this.redis.set(this.keys.importResult(record.importJobId), json, 'EX', ttlSeconds),
      this.erasure.noteRecord(record, json, ttlSeconds),
    ]);
  }
}
