/** Keys whose values never leave the process in a log line, a dashboard or stored job data. */
const SECRET_KEYS =
  /^(authorization|cookie|set-cookie|password|passwordhash|hash|credential|token|access_token|secret|jwt_secret|admin_password)$/i;

export function isSecretKey(key: string): boolean {
  return SECRET_KEYS.test(key);
}

/** A copy of `value` with every secret-named member, at any depth, replaced by `[redacted]`. */
export function redactSecrets(value: unknown, depth = 0): unknown {
  if (depth > 8 || value === null || typeof value !== 'object') return value;
  if (value instanceof Error) return { name: value.name, message: value.message, stack: value.stack };
  if (Array.isArray(value)) return value.map((item) => redactSecrets(item, depth + 1));
  return Object.fromEntries(
    Object.entries(value as Record<string, unknown>).map(([key, inner]) => [
      key,
      isSecretKey(key) ? '[redacted]' : redactSecrets(inner, depth + 1),
    ]),
  );
}
