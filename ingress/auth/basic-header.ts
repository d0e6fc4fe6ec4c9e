/**
 * Parses `Authorization: Basic base64(user-id:password)` per RFC 7617: the user-id ends at the
 * FIRST colon, so a password may contain colons (passport-http 0.3 splits on every colon and
 * truncates such passwords, hence this parser). Returns null for anything malformed.
 */
export function parseBasicCredentials(
  header: string | undefined,
): { userId: string; password: string } | null {
  if (!header) return null;
  const match = /^Basic +([A-Za-z0-9+/]+={0,2}) *$/i.exec(header);
  if (!match?.[1]) return null;
  const decoded = Buffer.from(match[1], 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon <= 0 || colon === decoded.length - 1) return null;
  return { userId: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
}
