import { LOG_PARTITIONS } from '../redis/partitions';

/**
 * A Redis stream entry id (`<ms>-<seq>`) as two numbers. `{0, 0}` is "before every entry".
 * Auto ids stay far below 2^53 in both parts; an id beyond that is refused, never rounded.
 */
export interface EntryId {
  readonly ms: number;
  readonly seq: number;
}

/**
 * Where a reader of the global log stands: the last entry id it has passed in each partition
 * (index = partition). Reading every partition after its id resumes exactly: no entry twice,
 * none skipped, whatever order the partitions were read in.
 */
export type LogPosition = readonly EntryId[];

export const BEFORE_EVERYTHING: EntryId = Object.freeze({ ms: 0, seq: 0 });

/** The position before every entry of every partition. */
export function beginningPosition(): EntryId[] {
  return Array.from({ length: LOG_PARTITIONS }, () => BEFORE_EVERYTHING);
}

const ENTRY_ID = /^(\d{1,16})-(\d{1,16})$/;

/** Parses a stream entry id as Redis writes it; throws on anything else (Redis never sends it). */
export function parseEntryId(text: string): EntryId {
  const match = ENTRY_ID.exec(text);
  const ms = Number(match?.[1]);
  const seq = Number(match?.[2]);
  if (!match || !Number.isSafeInteger(ms) || !Number.isSafeInteger(seq)) {
    throw new Error(`not a stream entry id: ${text}`);
  }
  return { ms, seq };
}

export function formatEntryId(id: EntryId): string {
  return `${id.ms}-${id.seq}`;
}

/** Negative, zero or positive as `a` is before, equal to or after `b`. */
export function compareEntryIds(a: EntryId, b: EntryId): number {
  return a.ms === b.ms ? a.seq - b.seq : a.ms - b.ms;
}

/** The text version of positions this module writes; another version is refused, not guessed. */
const VERSION = '1';
const PREFIX = `${VERSION}.`;
/** 16 partitions at ~4 bytes each and the base: well under; a bound keeps a hostile header cheap. */
const MAX_TEXT_LENGTH = 256;
const BASE64URL = /^[A-Za-z0-9_-]+$/;
/** 8 bytes of 7 bits carry 56 bits: more than 2^53, so every safe integer fits and no more is read. */
const MAX_VARINT_BYTES = 8;

function writeVarint(out: number[], value: number): void {
  let rest = value;
  while (rest >= 0x80) {
    out.push((rest % 0x80) | 0x80);
    rest = Math.floor(rest / 0x80);
  }
  out.push(rest);
}

function readVarint(bytes: Buffer, at: { offset: number }): number {
  let value = 0;
  let scale = 1;
  for (let i = 0; i < MAX_VARINT_BYTES; i++) {
    const byte = bytes[at.offset++];
    if (byte === undefined) throw new Error('truncated');
    value += (byte & 0x7f) * scale;
    if ((byte & 0x80) === 0) {
      if (!Number.isSafeInteger(value)) throw new Error('too large');
      return value;
    }
    scale *= 0x80;
  }
  throw new Error('too long');
}

/**
 * The position as short opaque text: `1.` and base64url of varints, the smallest millisecond
 * part (the base), then for each partition its milliseconds after the base plus one (0: no
 * entry passed yet) and its sequence number. ~90 characters for 16 partitions.
 */
export function encodePosition(position: LogPosition): string {
  let base = 0;
  for (const id of position) if (id.ms > 0 && (base === 0 || id.ms < base)) base = id.ms;
  const out: number[] = [];
  writeVarint(out, base);
  for (const id of position) {
    writeVarint(out, id.ms === 0 ? 0 : id.ms - base + 1);
    writeVarint(out, id.seq);
  }
  return PREFIX + Buffer.from(out).toString('base64url');
}

/**
 * The position `text` encodes, or undefined when it is not one this module wrote: another
 * version, another partition count, trailing bytes, or any other spelling of the same position
 * (it must encode back to itself, so one position has one text).
 */
export function decodePosition(text: string): EntryId[] | undefined {
  if (text.length > MAX_TEXT_LENGTH || !text.startsWith(PREFIX)) return undefined;
  const body = text.slice(PREFIX.length);
  if (!BASE64URL.test(body)) return undefined;
  const bytes = Buffer.from(body, 'base64url');
  const at = { offset: 0 };
  try {
    const base = readVarint(bytes, at);
    const position: EntryId[] = [];
    for (let partition = 0; partition < LOG_PARTITIONS; partition++) {
      const delta = readVarint(bytes, at);
      const seq = readVarint(bytes, at);
      const ms = delta === 0 ? 0 : base + delta - 1;
      if (!Number.isSafeInteger(ms)) return undefined;
      position.push({ ms, seq });
    }
    if (at.offset !== bytes.length) return undefined;
    return encodePosition(position) === text ? position : undefined;
  } catch {
    return undefined;
  }
}
