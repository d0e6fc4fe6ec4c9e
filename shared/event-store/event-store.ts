import type { RedisClient } from '../redis/connections';

import type { Keys } from '../redis/keys';
import { registerScripts } from '../redis/scripts';
import { parseEnvelope, type EventEnvelope } from './envelope';
import { ConcurrencyConflictError, SCRIPT_CODES } from './errors';
import { partitionOf } from './partitions';

/** An aggregate's version and folded state as last written, read in one round trip. */
export interface AggregateRecord<State> {
  readonly version: number;
  readonly state: State;
}

/** How long an aggregate remembers the request ids of its appends (as the HTTP answers are kept). */
export const REQUEST_ID_WINDOW_MS = 24 * 60 * 60 * 1000;

/** The versions of the events one request appended to an aggregate. */
export interface AppliedRequest {
  readonly firstVersion: number;
  readonly lastVersion: number;
}

/** A record loaded under the aggregate's lock, with what the caller's request appended already. */
export interface LockedRecord<State> extends AggregateRecord<State> {
  /** Set when the caller's request id is among the aggregate's appends: it must not run again. */
  readonly appliedRequest: AppliedRequest | null;
}

export interface AppendRequest {
  readonly aggregateType: string;
  readonly aggregateId: string;
  readonly expectedVersion: number;
  readonly events: readonly EventEnvelope[];
  /** The state after the events, stored in the record so loading never replays the stream. */
  readonly state: unknown;
  /** Private fields written to the record with the events (a credential): never in an event. */
  readonly attachments?: Readonly<Record<string, string>>;
  /** The caller's lock token: the append releases the aggregate's lock if it is still theirs. */
  readonly lockToken?: string;
  /** Recorded with the events for REQUEST_ID_WINDOW_MS, so a retry of the request finds them. */
  readonly requestId?: string;
}

/** A record from its stored `version` and `state` fields; a missing one is a new aggregate. */
function recordFrom<State>(
  version: string | null | undefined,
  state: string | null | undefined,
  initialState: State,
): AggregateRecord<State> {
  if (!version || !state) return { version: 0, state: initialState };
  return { version: Number(version), state: JSON.parse(state) as State };
}

/** Redis streams as an event store: per-aggregate streams plus a partitioned global log. */
export class EventStore {
  constructor(
    readonly redis: RedisClient,
    readonly keys: Keys,
  ) {
    registerScripts(redis);
  }

  async loadRecord<State>(
    aggregateType: string,
    aggregateId: string,
    initialState: State,
  ): Promise<AggregateRecord<State>> {
    const [version, state] = await this.redis.hmget(
      this.keys.aggregateRecord(aggregateType, aggregateId),
      'version',
      'state',
    );
    if (!version || !state) return { version: 0, state: initialState };
    return { version: Number(version), state: JSON.parse(state) as State };
  }

  /**
   * Takes the aggregate's lock and reads its record, and whether `requestId` appended to it
   * already, in one round trip; null when another holds the lock.
   */
  async lockAndLoad<State>(
    aggregateType: string,
    aggregateId: string,
    initialState: State,
    token: string,
    ttlMs: number,
    requestId?: string,
  ): Promise<LockedRecord<State> | null> {
    const reply = await this.redis.lockAndLoad(
      this.keys.aggregateLock(aggregateType, aggregateId),
      this.keys.aggregateRecord(aggregateType, aggregateId),
      this.keys.aggregateRequests(aggregateType, aggregateId),
      token,
      ttlMs,
      requestId ?? '',
    );
    if (reply[0] !== 1) return null;
    const [, version, state, applied] = reply;
    const [firstVersion, lastVersion] = (applied ?? '').split(':').map(Number);
    return {
      ...recordFrom(version, state, initialState),
      appliedRequest: firstVersion && lastVersion ? { firstVersion, lastVersion } : null,
    };
  }

  /** Releases the aggregate's lock if `token` still holds it. */
  async unlock(aggregateType: string, aggregateId: string, token: string): Promise<void> {
    await this.redis.releaseLock(this.keys.aggregateLock(aggregateType, aggregateId), token);
  }

  /** Reads the record and named attachments together (one round trip). */
  async loadRecordWith<State>(
    aggregateType: string,
    aggregateId: string,
    initialState: State,
    attachment: string,
  ): Promise<AggregateRecord<State> & { attachment: string | null }> {
    const [version, state, value] = await this.redis.hmget(
      this.keys.aggregateRecord(aggregateType, aggregateId),
      'version',
      'state',
      attachment,
    );
    const record = recordFrom(version, state, initialState);
    return { ...record, attachment: record.version === 0 ? null : (value ?? null) };
  }

  /** Appends atomically if the stream is still at `expectedVersion`; returns the new version. */
  async append(request: AppendRequest): Promise<number> {
    const { aggregateType, aggregateId, expectedVersion, events } = request;
    const attachmentArgs = Object.entries(request.attachments ?? {}).flat();
    const result = await this.redis.appendEvents(
      this.keys.aggregateStream(aggregateType, aggregateId),
      this.keys.logPartition(partitionOf(aggregateId)),
      this.keys.aggregateRecord(aggregateType, aggregateId),
      this.keys.aggregateLock(aggregateType, aggregateId),
      this.keys.aggregateRequests(aggregateType, aggregateId),
      this.keys.aggregateRequestTimes(aggregateType, aggregateId),
      expectedVersion,
      events.length,
      this.keys.aggregateChanges(aggregateType),
      request.lockToken ?? '',
      request.requestId ?? '',
      Date.now(),
      REQUEST_ID_WINDOW_MS,
      ...events.map((event) => JSON.stringify(event)),
      JSON.stringify(request.state),
      ...attachmentArgs,
    );
    if (result === SCRIPT_CODES.VERSION_MISMATCH) {
      const actual = await this.redis.xlen(this.keys.aggregateStream(aggregateType, aggregateId));
      throw new ConcurrencyConflictError(aggregateId, expectedVersion, actual);
    }
    return result;
  }

  async readStream(aggregateType: string, aggregateId: string): Promise<EventEnvelope[]> {
    const entries = await this.redis.xrange(this.keys.aggregateStream(aggregateType, aggregateId), '-', '+');
    return entries.map(([, fields]) => parseEnvelope(fields[1] ?? 'null'));
  }

  /** The events at versions `from`..`to` (inclusive). */
  async readVersions(
    aggregateType: string,
    aggregateId: string,
    from: number,
    to: number,
  ): Promise<EventEnvelope[]> {
    const entries = await this.redis.xrange(
      this.keys.aggregateStream(aggregateType, aggregateId),
      `0-${from}`,
      `0-${to}`,
    );
    return entries.map(([, fields]) => parseEnvelope(fields[1] ?? 'null'));
  }

  /** The aggregate's first event (its creation), or null for an empty stream. */
  async readFirst(aggregateType: string, aggregateId: string): Promise<EventEnvelope | null> {
    const [first] = await this.redis.xrange(
      this.keys.aggregateStream(aggregateType, aggregateId),
      '-',
      '+',
      'COUNT',
      1,
    );
    return first ? parseEnvelope(first[1][1] ?? 'null') : null;
  }

  async streamLength(aggregateType: string, aggregateId: string): Promise<number> {
    return this.redis.xlen(this.keys.aggregateStream(aggregateType, aggregateId));
  }
}
