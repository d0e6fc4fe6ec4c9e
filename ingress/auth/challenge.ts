import type { AuthenticationScheme } from './principal';

/** The protection space every challenge of the API names. */
export const REALM = 'fantasy-team-service';

/**
 * The challenge of each scheme, the one place a `WWW-Authenticate` value is written. Basic says
 * `charset="UTF-8"` (RFC 7617 section 2.1): credentials are read as strict UTF-8 (basic-header.ts),
 * so a client knows how to encode a non-ASCII e-mail or password.
 */
export const CHALLENGES: Readonly<Record<AuthenticationScheme, string>> = {
  Basic: `Basic realm="${REALM}", charset="UTF-8"`,
  Bearer: `Bearer realm="${REALM}"`,
};

/** The `WWW-Authenticate` value offering the given schemes, in order. */
export function challengeFor(schemes: readonly AuthenticationScheme[]): string {
  return schemes.map((scheme) => CHALLENGES[scheme]).join(', ');
}
