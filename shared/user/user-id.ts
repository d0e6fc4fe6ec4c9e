import { v5 as uuidv5 } from 'uuid';

import { validationError } from '../errors';

/** Fixed forever: changing it would give every existing account a new id. */
const USER_ID_NAMESPACE = '6f1c8a3e-4b2d-5e7f-9a0b-1c2d3e4f5a6b';

/** What an e-mail with a lone UTF-16 surrogate is told: no account can hold it. */
export const ILL_FORMED_EMAIL_MESSAGE =
  'Email must be well-formed Unicode text (it holds a lone UTF-16 surrogate)';

/**
 * E-mails are compared case-insensitively and without surrounding blanks. An ill-formed one (a
 * lone surrogate, which JSON can carry) is refused with the 400 validation error: uuid v5 hashes
 * it through encodeURIComponent, which throws a URIError (a 500) on it. Callers check input
 * first; this is the last line, so no path derives an id from such text.
 */
export function normalizeEmail(email: string): string {
  if (!email.isWellFormed()) throw validationError({ Email: [ILL_FORMED_EMAIL_MESSAGE] });
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
