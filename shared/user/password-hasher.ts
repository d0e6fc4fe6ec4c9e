/** The port the accounts service hashes through; the domain never sees an implementation. */
export interface PasswordHasher {
  hash(password: string): Promise<string>;
  /** Constant-time; false (never a throw) for a malformed stored hash. */
  verify(storedHash: string, password: string): Promise<boolean>;
}
