import { randomUUID } from 'node:crypto';

/** A row of UserSeeding's `users`: a Human Member, with a password when it is to sign in by Basic. */
export interface SeedUser {
  readonly email: string;
  readonly userName: string;
  readonly userType: 'Human';
  readonly roles: readonly ['Member'];
  readonly password?: string;
}

export type SeedUserWithPassword = SeedUser & { readonly password: string };

export interface SeedUserOptions {
  /** The first part of each name and e-mail, telling one test's users from another's in a dump. */
  readonly label?: string;
  /** Shared by the batch; a fresh one by default, so no two batches ever meet. */
  readonly tag?: string;
}

/** At least MIN_PASSWORD_LENGTH (12) characters, so every created user costs one argon2 hash. */
export const SEED_PASSWORD = 'seeded-user-password';

/** `count` new Members named `<label>-<tag>-<i>`, e-mail `<label>-<tag>-<i>@example.com`, without a password. */
export function seedUsers(
  count: number,
  { label = 'seed', tag = randomUUID().slice(0, 8) }: SeedUserOptions = {},
): SeedUser[] {
  return Array.from({ length: count }, (_, i) => ({
    email: `${label}-${tag}-${i}@example.com`,
    userName: `${label}-${tag}-${i}`,
    userType: 'Human',
    roles: ['Member'],
  }));
}

/**
 * `count` new Members as seedUsers makes them, each with `password` (SEED_PASSWORD by default, or
 * one per user when it is a function of the user).
 */
export function seedUsersWithPasswords(
  count: number,
  password: string | ((user: SeedUser) => string) = SEED_PASSWORD,
  options: SeedUserOptions = {},
): SeedUserWithPassword[] {
  return seedUsers(count, options).map((user) => ({
    ...user,
    password: typeof password === 'string' ? password : password(user),
  }));
}
