/**
 * `Authorization: Basic ...` for an e-mail and password, encoded as UTF-8 before base64, as the
 * service's challenge asks (`charset="UTF-8"`, RFC 7617). `btoa(email + ':' + password)` alone
 * throws on any character above U+00FF and sends Latin-1 for the others, so a password such as
 * `Grüße-Passwort` would never match.
 */
export function basicAuthorization(email: string, password: string): string {
  let binary = '';
  for (const byte of new TextEncoder().encode(`${email}:${password}`)) binary += String.fromCharCode(byte);
  return `Basic ${btoa(binary)}`;
}
