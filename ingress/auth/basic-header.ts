/**
 * Strict UTF-8 (RFC 7617's charset): a lenient decoder would turn every invalid byte into U+FFFD,
 * so different byte strings would verify as one password (`p\xffw` as `p\uFFFDw`). The BOM is kept
 * as a character, not dropped, for the same reason.
 */
const UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/**
 * Parses `Authorization: Basic base64(user-id:password)` per RFC 7617: the user-id ends at the
 * FIRST colon, so a password may contain colons (passport-http 0.3 splits on every colon and
 * truncates such passwords, hence this parser). Returns null for anything malformed, including
 * credentials that are not UTF-8.
 */
export function parseBasicCredentials(
  header: string | undefined,
): { userId: string; password: string } | null {
  if (!header) return null;
  const match = /^Basic +([A-Za-z0-9+/]+={0,2}) *$/i.exec(header);
  if (!match?.[1]) return null;
  let decoded: string;
  try {
    decoded = UTF8.decode(Buffer.from(match[1], 'base64'));
  } catch {
    return null;
  }
  const colon = decoded.indexOf(':');
  if (colon <= 0 || colon === decoded.length - 1) return null;
  return { userId: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
}
