import {
  createCipheriv,
  createDecipheriv,
  createHash,
  createSecretKey,
  type KeyObject,
  randomBytes,
} from 'node:crypto';

import type { EventEnvelope } from '../event-store/envelope';
import type { EnvelopeCodec } from '../event-store/envelope-codec';
import { userDecider } from '../user/user.decider';
import type { UserEvent } from '../user/user.events';

/**
 * The user record's attachment holding the account's personal-data key. DeleteUser drops it in the
 * same script that appends the UserDeletedEvent, which erases every sealed field of the account's
 * events wherever they were copied (ADR 0014).
 */
export const PERSONAL_DATA_KEY_FIELD = 'personalDataKey';

/** The data member a sealed envelope carries its sealed fields in. */
const SEALED_MEMBER = 'personalData';
const KEY_VERSION = 'pdk1';
const SEALED_VERSION = 'pd1';
const KEY_BYTES = 32;
const IV_BYTES = 12;
const TAG_BYTES = 16;

/** The fields of each user event that may be sealed: its own data's fields. */
export type SealedFields = {
  readonly [Type in UserEvent['type']]?: readonly (keyof Extract<UserEvent, { type: Type }>['data'] &
    string)[];
};

/**
 * The fields of each user event that name or describe the person, sealed at rest. The creation's
 * e-mail, user name and names; a disable's free-text reason, which an operator may write a name in.
 * The one list of an account's personal data: the event catalogue marks exactly these personal, so
 * what is sealed at rest reaches only the readers that may read accounts.
 */
export const SEALED_PERSONAL_FIELDS: SealedFields = {
  UserCreatedEvent: ['email', 'userName', 'firstName', 'lastName'],
  UserDisabledEvent: ['reason'],
};

/** A fresh AES-256 key for one account: `pdk1.<base64url of 32 random bytes>`. */
export function newPersonalDataKey(): string {
  return `${KEY_VERSION}.${randomBytes(KEY_BYTES).toString('base64url')}`;
}

/** A key this module made, prepared once: its KeyObject and its public name (keyId). */
interface PreparedKey {
  readonly key: KeyObject;
  readonly id: string;
}

/**
 * Keys prepared lately, by their text. A cipher given the key's bytes prepares a KeyObject at every
 * call (18.6 us a decipher on the bench machine, 3.7 us given the KeyObject): a worker catching up an
 * import's accounts opens each of their events in the users projection and again for each webhook
 * subscription, and issue 43 found those openings its busiest stretches. Bounded, so that keys of
 * accounts not read lately leave memory; erasure still holds, since the key is only ever looked up by
 * the text read from Redis, which an erased account no longer has.
 */
const preparedKeys = new Map<string, PreparedKey>();
const PREPARED_KEYS_KEPT = 4_096;

/** The key prepared; null for text that is not a key this module made. */
function prepared(key: string): PreparedKey | null {
  const known = preparedKeys.get(key);
  if (known) {
    // Most recently used last: the first in the map is the one to drop.
    preparedKeys.delete(key);
    preparedKeys.set(key, known);
    return known;
  }
  const [version, body = ''] = key.split('.', 2);
  const bytes = Buffer.from(body, 'base64url');
  if (version !== KEY_VERSION || bytes.length !== KEY_BYTES) return null;
  const made = { key: createSecretKey(bytes), id: keyId(bytes) };
  preparedKeys.set(key, made);
  if (preparedKeys.size > PREPARED_KEYS_KEPT) {
    const oldest = preparedKeys.keys().next();
    if (!oldest.done) preparedKeys.delete(oldest.value);
  }
  return made;
}

/**
 * A short, public name of a key (its SHA-256, first 8 bytes), written with what it sealed: a key
 * that is not the one (the account was erased and its e-mail registered again, with a new key)
 * is told apart from sealed data that was altered.
 */
function keyId(bytes: Buffer): string {
  return createHash('sha256').update(bytes).digest().subarray(0, 8).toString('base64url');
}

/** Binds a sealed value to its one event: moved into another envelope, it does not open. */
function associatedData(envelope: EventEnvelope): Buffer {
  return Buffer.from(`${envelope.aggregateType}:${envelope.aggregateId.toLowerCase()}:${envelope.eventId}`);
}

type Data = Readonly<Record<string, unknown>>;

function personalFieldsOf(envelope: EventEnvelope): readonly string[] {
  return SEALED_PERSONAL_FIELDS[envelope.eventType as UserEvent['type']] ?? [];
}

/** The fields of `data` that hold something to seal (a null reason holds nothing). */
function presentFields(envelope: EventEnvelope): string[] {
  const data = envelope.data as Data;
  return personalFieldsOf(envelope).filter((field) => data[field] !== undefined && data[field] !== null);
}

function seal(envelope: EventEnvelope, key: string): EventEnvelope {
  const made = prepared(key);
  if (!made) throw new Error('the personal-data key is not one this service made');
  const fields = presentFields(envelope);
  if (fields.length === 0) return envelope;
  const data = { ...(envelope.data as Data) };
  const personal: Record<string, unknown> = {};
  for (const field of fields) {
    personal[field] = data[field];
    delete data[field];
  }
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', made.key, iv);
  cipher.setAAD(associatedData(envelope));
  const ciphertext = Buffer.concat([cipher.update(JSON.stringify(personal), 'utf8'), cipher.final()]);
  const body = Buffer.concat([iv, cipher.getAuthTag(), ciphertext]).toString('base64url');
  data[SEALED_MEMBER] = `${SEALED_VERSION}.${made.id}.${body}`;
  return { ...envelope, data };
}

/** The sealed fields, or null when `key` is not the key they were sealed under. */
function unseal(envelope: EventEnvelope, sealed: string, key: string | null): Data | null {
  const [version, sealedKeyId, body = ''] = sealed.split('.', 3);
  const made = key === null ? null : prepared(key);
  if (version !== SEALED_VERSION) throw new Error(`event ${envelope.eventId}: unknown sealed format`);
  if (!made || made.id !== sealedKeyId) return null;
  const raw = Buffer.from(body, 'base64url');
  try {
    const decipher = createDecipheriv('aes-256-gcm', made.key, raw.subarray(0, IV_BYTES));
    decipher.setAAD(associatedData(envelope));
    decipher.setAuthTag(raw.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
    const text = Buffer.concat([decipher.update(raw.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]);
    return JSON.parse(text.toString('utf8')) as Data;
  } catch {
    // The right key, and still it does not open: the stored event was altered. Never read as erased.
    throw new Error(`event ${envelope.eventId}: its sealed personal data does not open under its own key`);
  }
}

function isSealed(envelope: EventEnvelope): boolean {
  return typeof (envelope.data as Data | null)?.[SEALED_MEMBER] === 'string';
}

function open(envelope: EventEnvelope, key: string | null): EventEnvelope {
  if (!isSealed(envelope)) return envelope;
  const { [SEALED_MEMBER]: sealed, ...data } = envelope.data as Data;
  const opened = unseal(envelope, sealed as string, key);
  const fields = opened ?? Object.fromEntries(personalFieldsOf(envelope).map((field) => [field, null]));
  return { ...envelope, data: { ...data, ...fields } };
}

/**
 * The user aggregate's codec (registered with the event store and the projector through
 * shared/envelope-codecs.ts): the personal fields of its events are sealed with AES-256-GCM under the
 * account's own key, with a fresh IV per event and the event's id as associated data. An erased
 * account's fields read as null. An event written before sealing (plain personal fields) reads as it
 * is, and erasing its account does not erase it (ADR 0014, "Legacy events").
 */
export const personalDataCodec: EnvelopeCodec = {
  aggregateType: userDecider.aggregateType,
  keyField: PERSONAL_DATA_KEY_FIELD,
  newKey: newPersonalDataKey,
  seals: (envelope) => presentFields(envelope).length > 0,
  seal,
  isSealed,
  open,
};
