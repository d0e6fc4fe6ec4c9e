/** Rejection texts of the user aggregate: clients match on them, so each is written once. */
export const USER_MESSAGES = {
  alreadyExists: 'User already exists',
} as const;
