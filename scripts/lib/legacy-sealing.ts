import { personalDataCodec as codec } from '../../shared/accounts/personal-data';
import type { EventEnvelope } from '../../shared/event-store/envelope';
import type { EventStore } from '../../shared/event-store/event-store';
import { EVENT_STORE_SCRIPTS } from '../../shared/event-store/event-store.scripts';
import { compactEnvelopeJson, storedEnvelopes } from '../../shared/event-store/stored-envelope';
import { logEntryContent, logReferenceFields, type RawLogEntry } from '../../shared/event-stream/log-reader';
import { LOG_PARTITIONS } from '../../shared/redis/partitions';
import { registerScripts } from '../../shared/redis/scripts';
import { isDeletedUser, userDecider, type UserState } from '../../shared/user/user.decider';
import { rewriteLogPartition } from './rewrite-log';

/** What sealing the legacy user events did. */
export interface LegacySealing {
  /** User records seen. */
  readonly accounts: number;
  /** Accounts whose plain events are now sealed under their key (attached if they had none). */
  readonly sealed: number;
  /**
   * Accounts erased at least once (deleted, or deleted and registered again) whose erased plain
   * events are now sealed under a key that was thrown away, or whose leftover key was removed.
   */
  readonly shredded: number;
  /** Log entries replaced by their sealed form. */
  readonly logEntries: number;
}

const MAX_ATTEMPTS = 10;

/** Whether a stored user event still holds personal fields in the clear (written before sealing). */
function isPlain(envelope: EventEnvelope): boolean {
  return codec.seals(envelope) && !codec.isSealed(envelope);
}

/**
 * Seals the user events written before sealing (ADR 0014, "Legacy events"), so that erasure covers
 * every account: `npm run users:seal-legacy`, once, after every process runs a version that seals.
 * 1. Each user stream with plain events is rewritten sealed (rewrite-stream-2.lua, fenced by its
 *    length and key); an erased account's under a key thrown away at once.
 * 2. Each log partition's copies of those events become references to the sealed envelopes, with
 *    the same ids, so projectors go on from their checkpoints.
 * Safe beside live traffic and to run again; Redis files keep the old text until BGREWRITEAOF/BGSAVE.
 */
export async function sealLegacyUserEvents(store: EventStore): Promise<LegacySealing> {
  const { redis, keys } = store;
  registerScripts(redis, EVENT_STORE_SCRIPTS);
  let accounts = 0;
  let sealed = 0;
  let shredded = 0;
  for await (const ids of store.aggregateIds(userDecider.aggregateType)) {
    for (const aggregateId of ids) {
      accounts += 1;
      const outcome = await sealAccount(store, aggregateId);
      if (outcome === 'sealed') sealed += 1;
      if (outcome === 'shredded') shredded += 1;
    }
  }
  let logEntries = 0;
  for (let partition = 0; partition < LOG_PARTITIONS; partition++) {
    logEntries += await rewriteLogPartition(redis, keys, partition, (entries) =>
      sealedCopies(store, entries),
    );
  }
  return { accounts, sealed, shredded, logEntries };
}

/** Rewrites one account's stream with its plain events sealed; what it did. */
async function sealAccount(store: EventStore, userId: string): Promise<'sealed' | 'shredded' | 'unchanged'> {
  const { redis, keys } = store;
  const streamKey = keys.aggregateStream(userDecider.aggregateType, userId);
  const recordKey = keys.aggregateRecord(userDecider.aggregateType, userId);
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    const [[state, key], entries] = await Promise.all([
      redis.hmget(recordKey, 'state', codec.keyField),
      redis.xrange(streamKey, '-', '+'),
    ]);
    const envelopes = storedEnvelopes(userDecider.aggregateType, userId, entries);
    const erased = isDeletedUser(JSON.parse(state ?? 'null') as UserState);
    if (!envelopes.some(isPlain) && !(erased && key)) return 'unchanged';
    // Events of an erased life (up to the last UserDeletedEvent: the account, or an earlier account
    // of the same e-mail) are sealed under a key no one keeps: erased, as if sealed when written.
    // The live account's under its own key, attached now if it has none.
    const lastErasure = envelopes.findLastIndex((envelope) => envelope.eventType === 'UserDeletedEvent');
    const thrownAway = codec.newKey();
    const liveKey = key ?? codec.newKey();
    const liveSealed = envelopes.some((envelope, i) => i > lastErasure && isPlain(envelope));
    const mode = erased ? (key ? 'remove' : 'keep') : !key && liveSealed ? 'set' : 'keep';
    const rewritten = entries.map(([, fields], i) => {
      const envelope = envelopes[i] as EventEnvelope;
      if (!isPlain(envelope)) return fields[1] ?? 'null';
      return compactEnvelopeJson(codec.seal(envelope, i <= lastErasure ? thrownAway : liveKey));
    });
    const reply = await redis.rewriteStream(
      streamKey,
      recordKey,
      entries.length,
      codec.keyField,
      key ?? '',
      mode,
      mode === 'set' ? liveKey : '',
      ...rewritten,
    );
    if (reply >= 0) return lastErasure >= 0 ? 'shredded' : 'sealed';
    // An append came first: read the account again.
  }
  throw new Error(`user ${userId}: its stream kept changing while its legacy events were sealed`);
}

/**
 * For each log entry, a reference to the sealed envelope its aggregate's stream now holds at its
 * version (the same event), when the entry is a copy of a plain user event; null for every other
 * entry.
 */
async function sealedCopies(
  store: EventStore,
  entries: readonly RawLogEntry[],
): Promise<(string[] | null)[]> {
  const { redis, keys } = store;
  return Promise.all(
    entries.map(async (entry) => {
      const content = logEntryContent(entry);
      if (!('copy' in content)) return null;
      const envelope = JSON.parse(content.copy) as EventEnvelope;
      if (envelope.aggregateType !== userDecider.aggregateType || !isPlain(envelope)) return null;
      const stream = keys.aggregateStream(envelope.aggregateType, envelope.aggregateId);
      const stored = await redis.xrange(stream, `0-${envelope.version}`, `0-${envelope.version}`);
      const [candidate] = storedEnvelopes(envelope.aggregateType, envelope.aggregateId, stored);
      return candidate?.eventId === envelope.eventId && codec.isSealed(candidate)
        ? logReferenceFields(envelope)
        : null;
    }),
  );
}
