import { v5 as uuidv5 } from 'uuid';

/** Fixed forever: changing it would give every existing account a new id. */
const USER_ID_NAMESPACE = '6f1c8a3e-4b2d-5e7f-9a0b-1c2d3e4f5a6b';

/** E-mails are compared case-insensitively and without surrounding blanks. */
export function normalizeEmail(email: string): string {
  return email.trim().toLowerCase();
}

/**
 * A user's id is derived from the normalised e-mail (UUID v5). Claiming an e-mail is then the
 * same atomic step as creating the aggregate at version 0: two concurrent creates of one e-mail
 * race on one stream, and the version fence lets exactly one win. See docs/adr/0004.
 */
export function userIdForEmail(email: string): string {
  return uuidv5(normalizeEmail(email), USER_ID_NAMESPACE);
}
