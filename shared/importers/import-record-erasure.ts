import type { RedisClient } from '../redis/connections';
import type { Keys } from '../redis/keys';
import { registerScripts } from '../redis/scripts';
import { mentionsAccount, withoutAccountEmail } from '../roles';
import { IMPORT_SCRIPTS } from './import.scripts';

/** An import's record as stored (ImportRecord), read loosely: only its texts matter here. */
type StoredRecord = Readonly<Record<string, unknown>>;

/** Tries per record before giving up on one that keeps changing (it is being finished). */
const MAX_REPLACE_ATTEMPTS = 5;

/**
 * What erasing an account does to import records (ADR 0014). A record never holds the e-mail of a
 * row (rowErrors carry the row's index), but a role refusal names its submitter as the spec asks
 * (`User '<email>' (<user id>) lacks required roles ...`), in the record's message, errorMessage and
 * rows. Such records are indexed per submitter when written (`noteRecord`), and erasing the
 * submitter replaces the e-mail in each with `[erased]` (`forgetSubmitter`), keeping the rest.
 * Found by the user id that follows the e-mail, so it needs no e-mail: a retry after a crash, when
 * the account's e-mail is gone, still finds them.
 */
export class ImportRecordErasure {
  constructor(
    private readonly redis: RedisClient,
    private readonly keys: Keys,
  ) {
    registerScripts(redis, IMPORT_SCRIPTS);
  }

  /**
   * Called with each record as it is written: indexes it under its submitter when it names the
   * submitter (an entry per record, dropped once the record has expired).
   */
  async noteRecord(
    record: { readonly importJobId: string; readonly submitterUserId: string },
    json: string,
    ttlSeconds: number,
  ): Promise<void> {
    if (!mentionsAccount(json, record.submitterUserId)) return;
    const key = this.keys.importsNamingSubmitter(record.submitterUserId);
    const now = Date.now();
    await Promise.all([
      this.redis.zadd(key, now + ttlSeconds * 1000, record.importJobId.toLowerCase()),
      this.redis.zremrangebyscore(key, '-inf', now),
      this.redis.expire(key, ttlSeconds),
    ]);
  }

  /**
   * Scrubs the e-mail of `userId` from every record indexed under it, then drops the index; returns
   * how many records it changed. Idempotent.
   */
  async forgetSubmitter(userId: string): Promise<number> {
    const indexKey = this.keys.importsNamingSubmitter(userId);
    const jobIds = await this.redis.zrange(indexKey, 0, -1);
    let scrubbed = 0;
    for (const jobId of jobIds) if (await this.scrub(jobId, userId)) scrubbed += 1;
    if (jobIds.length > 0) await this.redis.zrem(indexKey, ...jobIds);
    return scrubbed;
  }

  /** Replaces the record with a copy not naming `userId` by e-mail; true when it changed it. */
  private async scrub(importJobId: string, userId: string): Promise<boolean> {
    const key = this.keys.importResult(importJobId);
    for (let attempt = 0; attempt < MAX_REPLACE_ATTEMPTS; attempt++) {
      const stored = await this.redis.get(key);
      if (stored === null) return false;
      const scrubbed = JSON.stringify(withoutEmailOf(JSON.parse(stored) as StoredRecord, userId));
      if (scrubbed === stored) return false;
      if ((await this.redis.replaceImportRecord(key, stored, scrubbed)) === 1) return true;
    }
    throw new Error(`import ${importJobId}: its record kept changing while it was scrubbed`);
  }
}

/**
 * The record without the e-mail of account `userId` in any of its texts (its messages, its rows'
 * messages). Members keep their order, so an untouched record serialises as it was stored.
 */
function withoutEmailOf(record: StoredRecord, userId: string): StoredRecord {
  const scrubTexts = (entries: StoredRecord): StoredRecord =>
    Object.fromEntries(
      Object.entries(entries).map(([name, value]) => [
        name,
        typeof value === 'string' ? withoutAccountEmail(value, userId) : value,
      ]),
    );
  const { rowErrors } = record;
  return {
    ...scrubTexts(record),
    ...(Array.isArray(rowErrors)
      ? { rowErrors: rowErrors.map((row) => scrubTexts(row as StoredRecord)) }
      : {}),
  };
}
