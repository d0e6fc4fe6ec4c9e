/**
 * The password rule for new accounts: at least 12 characters (OWASP's advice where there is no
 * second factor; NIST SP 800-63B asks at least 8 with a blocklist). Checked where a password is
 * set, never at sign-in, so an account created with a shorter one before keeps signing in.
 */
export const MIN_PASSWORD_LENGTH = 12;
/** Bounds the argon2 input a caller can make the service hash. */
export const MAX_PASSWORD_LENGTH = 1024;
