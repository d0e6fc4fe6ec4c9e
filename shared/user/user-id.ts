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
 * The id an account got before ADR 0035: UUIDv5 of the normalised e-mail under a public namespace.
 * Only to find such accounts again (shared/accounts/user-ids.ts); no new account gets one, since
 * anyone can compute it from a guessed e-mail.
 */
export function legacyUserIdForEmail(email: string): string {
  return uuidv5(normalizeEmail(email), USER_ID_NAMESPACE);
}
