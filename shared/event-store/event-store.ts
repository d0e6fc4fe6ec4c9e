import { type RedisClient, scanKeys } from '../redis/connections';
import type { Keys } from '../redis/keys';
import { partitionOf } from '../redis/partitions';
import { ScriptFencedError, scriptReply } from '../redis/script-codes';
import { registerScripts } from '../redis/scripts';
import { inScriptSpan } from '../tracing/spans';
import { type DomainEvent, fold } from './decider';
import type { EventEnvelope } from './envelope';
import { type EnvelopeCodec, EnvelopeCodecs } from './envelope-codec';
import { StaleAppendError } from './errors';
import { EVENT_STORE_SCRIPTS } from './event-store.scripts';
import { compactEnvelopeJson, storedEnvelopes, type StreamEntry } from './stored-envelope';

/** An aggregate's version and folded state as last written, read in one round trip. */
export interface AggregateRecord<State> {
  readonly version: number;
  readonly state: State;
}

/** How long an aggregate remembers the request ids of its appends (as the HTTP answers are kept). */
export const REQUEST_ID_WINDOW_MS = 24 * 60 * 60 * 1000;

/**
 * The field under which an aggregate records one caller's request id (lock-and-load-3.lua,
 * append-events-6.lua). The caller's user id is part of it: a request id belongs to its caller, so
 * another account sending the same id is not taken for a retry (it would be answered with the
 * first caller's events) and cannot mark the id as used for its owner.
 */
export function requestRecordField(callerUserId: string, requestId: string): string {
  return `${callerUserId.toLowerCase()}:${requestId.toLowerCase()}`;
}

/** The versions of the events one request appended to an aggregate. */
export interface AppliedRequest {
  readonly firstVersion: number;
  readonly lastVersion: number;
}

/** The versions lock-and-load-3.lua answers for a recorded request (`first:last`); null when unreadable. */
function appliedRequestOf(applied: string): AppliedRequest | null {
  const separator = applied.indexOf(':');
  const firstVersion = Number(applied.slice(0, separator));
  const lastVersion = Number(applied.slice(separator + 1));
  return separator > 0 && firstVersion && lastVersion ? { firstVersion, lastVersion } : null;
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
  /**
   * Private fields removed from the record with the events, before `attachments` are written (an
   * erased account's credential and personal-data key).
   */
  readonly removeAttachments?: readonly string[];
  /** The caller's lock token: the append releases the aggregate's lock if it is still theirs. */
  readonly lockToken?: string;
  /**
   * Recorded with the events for REQUEST_ID_WINDOW_MS, so a retry of the request finds them: a
   * caller-scoped field (requestRecordField), not the bare id a client sent.
   */
  readonly requestId?: string;
}

/**
 * What the store needs of an aggregate's decider to keep its snapshots (the `state` of its record)
 * current: the shape version of its state, and how to fold the state from the stream again.
 */
export interface SnapshotShape {
  readonly aggregateType: string;
  readonly initialState: unknown;
  readonly stateVersion?: number;
  evolve(state: unknown, event: DomainEvent): unknown;
}

/** The record field holding the shape version of its `state` (absent: 1, the first shape). */
export const STATE_VERSION_FIELD = 'stateVersion';

/** The shape version a decider's state is snapshotted in now. */
export function currentStateVersion(shape: Pick<SnapshotShape, 'stateVersion'>): number {
  return shape.stateVersion ?? 1;
}

/** The record's fields as stored: each null when absent. */
type StoredRecord = readonly [
  version: string | null | undefined,
  state: string | null | undefined,
  stateVersion: string | null | undefined,
];

/** A record from its stored `version` and `state` fields; a missing one is a new aggregate. */
function recordFrom<State>([version, state]: StoredRecord, initialState: State): AggregateRecord<State> {
  if (!version || !state) return { version: 0, state: initialState };
  return { version: Number(version), state: JSON.parse(state) as State };
}

/**
 * Redis streams as an event store: per-aggregate streams plus a partitioned global log. Each
 * aggregate's record keeps its folded state (a snapshot), so loading never replays the stream;
 * for the aggregate types given as `snapshots`, the record also says which shape of the state it
 * holds, and a record of another shape is re-folded from the stream when loaded (never used as it
 * is) until `npm run snapshots:rebuild` rewrites it. For the aggregate types given as `codecs`,
 * events are sealed as they are appended and opened as they are read (envelope-codec.ts): every
 * read of this store returns events as they were decided.
 */
export class EventStore {
  private readonly shapes: ReadonlyMap<string, SnapshotShape>;
  private readonly codecs: EnvelopeCodecs;

  constructor(
    readonly redis: RedisClient,
    readonly keys: Keys,
    snapshots: readonly SnapshotShape[] = [],
    codecs: readonly EnvelopeCodec[] = [],
  ) {
    registerScripts(redis, EVENT_STORE_SCRIPTS);
    this.shapes = new Map(snapshots.map((shape) => [shape.aggregateType, shape]));
    this.codecs = new EnvelopeCodecs(codecs);
  }

  /** The aggregate types whose snapshots carry a shape version. */
  get snapshotShapes(): readonly SnapshotShape[] {
    return [...this.shapes.values()];
  }

  async loadRecord<State>(
    aggregateType: string,
    aggregateId: string,
    initialState: State,
  ): Promise<AggregateRecord<State>> {
    const [version, state, stateVersion] = await this.redis.hmget(
      this.keys.aggregateRecord(aggregateType, aggregateId),
      'version',
      'state',
      STATE_VERSION_FIELD,
    );
    return this.current(aggregateType, aggregateId, [version, state, stateVersion], initialState);
  }

  /**
   * The stored record when its state has the current shape (or its type keeps no shape version);
   * else the state folded again from the stream, with the stream's version. A record written
   * before shape versions existed holds the first shape (1).
   */
  private async current<State>(
    aggregateType: string,
    aggregateId: string,
    stored: StoredRecord,
    initialState: State,
  ): Promise<AggregateRecord<State>> {
    const shape = this.shapes.get(aggregateType);
    if (!shape || this.isCurrent(aggregateType, stored)) return recordFrom(stored, initialState);
    return this.refold(aggregateType, aggregateId, shape) as Promise<AggregateRecord<State>>;
  }

  /** Whether a stored record is used as it is: a new aggregate, or a state of the current shape. */
  private isCurrent(aggregateType: string, [version, , stateVersion]: StoredRecord): boolean {
    const shape = this.shapes.get(aggregateType);
    return !shape || !version || Number(stateVersion ?? 1) === currentStateVersion(shape);
  }

  /**
   * The state folded from the aggregate's whole stream (its events opened, so an erased account's
   * creation folds with null personal fields), and the stream's version.
   */
  async refold(
    aggregateType: string,
    aggregateId: string,
    shape: SnapshotShape,
  ): Promise<AggregateRecord<unknown>> {
    const events = await this.readStream(aggregateType, aggregateId);
    const state = fold(
      shape,
      events.map((event) => ({ type: event.eventType, data: event.data })),
    );
    return { version: events.length, state };
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
    const lockKey = this.keys.aggregateLock(aggregateType, aggregateId);
    const recordKey = this.keys.aggregateRecord(aggregateType, aggregateId);
    // Without a request id its key is not declared: the script does not read it (ADR 0022).
    const reply = await inScriptSpan('lockAndLoad', aggregateType, aggregateId, async (span) => {
      const answer = requestId
        ? await this.redis.lockAndLoad(
            lockKey,
            recordKey,
            this.keys.aggregateRequests(aggregateType, aggregateId),
            token,
            ttlMs,
            requestId,
          )
        : await this.redis.lockAndLoadWithoutRequestId(lockKey, recordKey, token, ttlMs);
      span.setAttribute('fts.lock.acquired', answer[0] === 1);
      return answer;
    });
    if (reply[0] !== 1) return null;
    const [, version, state, applied, stateVersion] = reply;
    const appliedRequest = applied ? appliedRequestOf(applied) : null;
    const stored: StoredRecord = [version, state, stateVersion];
    // The common case (the record has the current shape) answers without a second promise.
    const record = this.isCurrent(aggregateType, stored)
      ? recordFrom(stored, initialState)
      : await this.current(aggregateType, aggregateId, stored, initialState);
    return { version: record.version, state: record.state, appliedRequest };
  }

  /**
   * Whether the aggregate recorded `requestId` (a requestRecordField) with an append, read without its
   * lock: for a caller that must not redo work before a retry of an applied request (a password
   * check). handle() is still the authority, under the lock.
   */
  async hasApplied(aggregateType: string, aggregateId: string, requestId: string): Promise<boolean> {
    return (
      (await this.redis.hexists(this.keys.aggregateRequests(aggregateType, aggregateId), requestId)) === 1
    );
  }

  /** The ids of every aggregate of a type that has a record, in batches (SCAN on each node). */
  async *aggregateIds(aggregateType: string): AsyncGenerator<string[]> {
    for await (const recordKeys of scanKeys(this.redis, this.keys.aggregateRecordPattern(aggregateType))) {
      yield recordKeys.map((key) => this.keys.aggregateIdOfRecord(key));
    }
  }

  /**
   * Every record's state of a type as stored (not re-folded: an older shape stays as it is), in
   * batches: for indexes kept beside the aggregates and built once from all of them.
   */
  async *recordStates<State>(
    aggregateType: string,
  ): AsyncGenerator<{ readonly aggregateId: string; readonly state: State }[]> {
    for await (const ids of this.aggregateIds(aggregateType)) {
      const states = await Promise.all(
        ids.map((id) => this.redis.hget(this.keys.aggregateRecord(aggregateType, id), 'state')),
      );
      yield ids.flatMap((aggregateId, index) => {
        const state = states[index];
        return typeof state === 'string' ? [{ aggregateId, state: JSON.parse(state) as State }] : [];
      });
    }
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
    const [version, state, stateVersion, value] = await this.redis.hmget(
      this.keys.aggregateRecord(aggregateType, aggregateId),
      'version',
      'state',
      STATE_VERSION_FIELD,
      attachment,
    );
    const record = await this.current(
      aggregateType,
      aggregateId,
      [version, state, stateVersion],
      initialState,
    );
    return { ...record, attachment: record.version === 0 ? null : (value ?? null) };
  }

  /**
   * Appends atomically if the stream is still at `expectedVersion`; returns the new version. Sent
   * over `connection` when given (WRITE_DURABILITY=replicated: one the WAIT that follows runs on).
   */
  async append(request: AppendRequest, connection: RedisClient = this.redis): Promise<number> {
    const { aggregateType, aggregateId, expectedVersion } = request;
    const shape = this.shapes.get(aggregateType);
    // Only an aggregate type with a codec has events to seal (and may read its key first).
    const { events, attachments } = this.codecs.for(aggregateType)
      ? await this.sealed(request)
      : { events: request.events, attachments: request.attachments };
    const removed = request.removeAttachments ?? [];
    // One array for the script's keys and arguments, in append-events-6.lua's order. The
    // request-id keys are declared only with a request id: the script reads them only then, and
    // each declared key costs Redis CPU (ADR 0022).
    const args: (string | number)[] = [
      this.keys.aggregateStream(aggregateType, aggregateId),
      this.keys.logPartition(partitionOf(aggregateId)),
      this.keys.aggregateRecord(aggregateType, aggregateId),
      this.keys.aggregateLock(aggregateType, aggregateId),
    ];
    if (request.requestId) {
      args.push(
        this.keys.aggregateRequests(aggregateType, aggregateId),
        this.keys.aggregateRequestTimes(aggregateType, aggregateId),
      );
    }
    args.push(
      expectedVersion,
      request.lockToken ?? '',
      // Announced as the keys spell it (lower case), so a listener's id matches the key's.
      aggregateId.toLowerCase(),
      aggregateType,
      this.keys.aggregateChanges(aggregateType),
      JSON.stringify(request.state),
      shape ? String(currentStateVersion(shape)) : '',
      events.length,
    );
    for (const event of events) args.push(compactEnvelopeJson(event));
    // The tail, only when there is something in it: a plain append (no request id, attachment or
    // removal: most commands) sends 8 + N arguments, and each costs Redis CPU (ADR 0022).
    if (request.requestId || attachments || removed.length > 0) {
      args.push(request.requestId ?? '', Date.now(), REQUEST_ID_WINDOW_MS, removed.length, ...removed);
      if (attachments) for (const [field, value] of Object.entries(attachments)) args.push(field, value);
    }
    const reply = await inScriptSpan('appendEvents', aggregateType, aggregateId, async (span) => {
      span.setAttributes({ 'fts.version.expected': expectedVersion, 'fts.event.count': events.length });
      return request.requestId
        ? connection.appendEvents(...args)
        : connection.appendEventsWithoutRequestId(...args);
    });
    try {
      return scriptReply('appendEvents', reply);
    } catch (error) {
      if (!(error instanceof ScriptFencedError)) throw error;
      const actual = await this.redis.xlen(this.keys.aggregateStream(aggregateType, aggregateId));
      throw new StaleAppendError(aggregateId, expectedVersion, actual);
    }
  }

  /**
   * The events as they are stored, and the attachments to write: an event with fields to seal is
   * sealed under the key the append attaches, else the record's (one read, only then), else a fresh
   * key attached with the append. The fence makes that safe: the key changes only with an append.
   */
  private async sealed(
    request: AppendRequest,
  ): Promise<{ events: readonly EventEnvelope[]; attachments: Readonly<Record<string, string>> }> {
    const attachments = { ...request.attachments };
    const codec = this.codecs.for(request.aggregateType);
    if (!codec || !request.events.some((event) => codec.seals(event))) {
      return { events: request.events, attachments };
    }
    let key =
      attachments[codec.keyField] ??
      (await this.redis.hget(
        this.keys.aggregateRecord(request.aggregateType, request.aggregateId),
        codec.keyField,
      ));
    if (!key) {
      key = codec.newKey();
      attachments[codec.keyField] = key;
    }
    const sealingKey = key;
    return {
      events: request.events.map((event) => (codec.seals(event) ? codec.seal(event, sealingKey) : event)),
      attachments,
    };
  }

  /** Every event of the aggregate, opened. */
  async readStream(aggregateType: string, aggregateId: string): Promise<EventEnvelope[]> {
    const entries = await this.redis.xrange(this.keys.aggregateStream(aggregateType, aggregateId), '-', '+');
    return this.opened(storedEnvelopes(aggregateType, aggregateId, entries));
  }

  /** The aggregate's stream entries as stored (sealed fields sealed), each with its envelope. */
  async readStoredEntries(
    aggregateType: string,
    aggregateId: string,
  ): Promise<{ readonly entries: StreamEntry[]; readonly envelopes: EventEnvelope[] }> {
    const entries = await this.redis.xrange(this.keys.aggregateStream(aggregateType, aggregateId), '-', '+');
    return { entries, envelopes: storedEnvelopes(aggregateType, aggregateId, entries) };
  }

  /**
   * Every event of the aggregate without its data: what happened, when and why, read without its
   * key (nothing sealed is opened, nothing personal is returned).
   */
  async readHeaders(aggregateType: string, aggregateId: string): Promise<Omit<EventEnvelope, 'data'>[]> {
    const entries = await this.redis.xrange(this.keys.aggregateStream(aggregateType, aggregateId), '-', '+');
    return storedEnvelopes(aggregateType, aggregateId, entries).map(({ data: _data, ...header }) => header);
  }

  /** The events at versions `from`..`to` (inclusive), opened. */
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
    return this.opened(storedEnvelopes(aggregateType, aggregateId, entries));
  }

  /** The aggregate's first event (its creation), opened, or null for an empty stream. */
  async readFirst(aggregateType: string, aggregateId: string): Promise<EventEnvelope | null> {
    const [first] = await this.redis.xrange(
      this.keys.aggregateStream(aggregateType, aggregateId),
      '-',
      '+',
      'COUNT',
      1,
    );
    if (!first) return null;
    const [event] = await this.opened(storedEnvelopes(aggregateType, aggregateId, [first]));
    return event ?? null;
  }

  /**
   * Stored envelopes as they were written: sealed fields opened (envelope-codec.ts), an erased
   * account's as null. Also for readers of the global log that hand events out (the event stream).
   */
  opened(envelopes: readonly EventEnvelope[]): Promise<EventEnvelope[]> {
    return this.codecs.open(this.redis, this.keys, envelopes);
  }

  async streamLength(aggregateType: string, aggregateId: string): Promise<number> {
    return this.redis.xlen(this.keys.aggregateStream(aggregateType, aggregateId));
  }
}
