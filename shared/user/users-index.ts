import type { Keys } from '../redis/keys';
import { partitionOf } from '../redis/partitions';
import type { AssignableRole } from '../roles';
import type { UserType } from './user.commands';
import type { UserView } from './user-view';

/**
 * The e-mail indexes of the users projection, shared by its writer (indexEntries) and its reader
 * (ListUsers), so both name the same sorted sets for a filter. In each of the 16 partitions (an
 * account's entries in its own, ADR 0032) one sorted set per combination of role x userType x state
 * (each or `all`); every score is 0 and a member is `<e-mail>\0<user id>`, so Redis orders by bytes
 * and any filters plus an e-mail prefix are one range of one set per partition: the count 16
 * ZLEXCOUNTs, a page the merge of 16 ranges.
 */

/** What ListUsers filters on; each absent member matches every account. */
export interface UserListingFilter {
  /** An assigned role: an Admin who holds only `Admin` is not listed under `Member`. */
  readonly role?: AssignableRole | undefined;
  readonly userType?: UserType | undefined;
  readonly disabled?: boolean | undefined;
}

/** The index member of a dimension not filtered on. */
const ALL = 'all';

function stateName(disabled: boolean): string {
  return disabled ? 'disabled' : 'enabled';
}

/** The sorted set ListUsers reads for `filter` in one partition. */
export function listingIndexKey(keys: Keys, filter: UserListingFilter, partition: number): string {
  return keys.users.byEmail(
    partition,
    filter.role ?? ALL,
    filter.userType ?? ALL,
    filter.disabled === undefined ? ALL : stateName(filter.disabled),
  );
}

/** Every sorted set an account belongs to (in its partition): one per filter combination it matches. */
export function listingIndexKeysOf(keys: Keys, user: UserView): string[] {
  const partition = partitionOf(user.id);
  const roles = [ALL, ...new Set(user.roles)];
  const types = [ALL, user.userType];
  const states = [ALL, stateName(user.disabled)];
  return roles.flatMap((role) =>
    types.flatMap((type) => states.map((state) => keys.users.byEmail(partition, role, type, state))),
  );
}

/** Separates the e-mail from the user id: it sorts before every character an e-mail may hold. */
const SEPARATOR = '\u0000';

/**
 * An account's member in the indexes: its e-mail as sign-in compares it (lower case, as stored),
 * then its id, which keeps members unique and names the document to read.
 */
export function indexMember(user: Pick<UserView, 'email' | 'id'>): string {
  // An erased account's events may reach a rebuild with their personal fields no longer readable:
  // such a document lives only until its UserDeletedEvent, and must not stop the batch meanwhile.
  const email = (user.email as string | null | undefined) ?? '';
  return `${email.toLowerCase()}${SEPARATOR}${user.id}`;
}

/** The user id an index member ends with. */
export function userIdOfMember(member: string): string {
  return member.slice(member.lastIndexOf(SEPARATOR) + 1);
}

/**
 * The ZRANGEBYLEX bounds of the members whose e-mail starts with `prefix` (already lower case), or
 * every member. The upper bound is the prefix followed by the byte 0xFF, which no UTF-8 text holds,
 * so it lies above every member that starts with the prefix and below every one that does not; it
 * is a Buffer because a JavaScript string would be sent as UTF-8 (0xFF would become C3 BF).
 */
export function emailPrefixRange(prefix: string | undefined): [min: string, max: string | Buffer] {
  if (prefix === undefined || prefix === '') return ['-', '+'];
  return [`[${prefix}`, Buffer.concat([Buffer.from(`(${prefix}`, 'utf8'), Buffer.from([0xff])])];
}

/**
 * The ZRANGEBYLEX lower bound of the members whose e-mail sorts after `email` (already lower case):
 * a member holding that e-mail continues with the separator, the smallest byte, so it lies below
 * `<email>\x01`, and every member with a greater e-mail lies at or above it.
 */
export function afterEmailBound(email: string): string {
  return `[${email}\u0001`;
}

/** The higher of two inclusive lower bounds (`-` or `[<text>`), in the byte order Redis compares. */
export function higherLowerBound(a: string, b: string): string {
  if (a === '-') return b;
  if (b === '-') return a;
  return utf8Order(a.slice(1), b.slice(1)) >= 0 ? a : b;
}

/**
 * Orders two strings as Redis orders their UTF-8 bytes (ZRANGEBYLEX). JavaScript compares UTF-16
 * code units, which differs only where a surrogate (a character above U+FFFF) meets a character
 * from U+E000 to U+FFFF: surrogates are moved above those, as their UTF-8 bytes are.
 */
export function utf8Order(a: string, b: string): number {
  const length = Math.min(a.length, b.length);
  for (let i = 0; i < length; i++) {
    let x = a.charCodeAt(i);
    let y = b.charCodeAt(i);
    if (x === y) continue;
    if (x >= 0xd800 && y >= 0xd800) {
      x = x < 0xe000 ? x + 0x2000 : x - 0x800;
      y = y < 0xe000 ? y + 0x2000 : y - 0x800;
    }
    return x - y;
  }
  return a.length - b.length;
}
