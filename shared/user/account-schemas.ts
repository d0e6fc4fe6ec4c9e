import Joi from 'joi';

import { ASSIGNABLE_ROLES } from '../roles';
import { boundedArray, text } from '../validation';
import { MAX_PASSWORD_LENGTH, MIN_PASSWORD_LENGTH } from './password-policy';

/** Far above the four assignable roles (repeats are allowed and merged); bounds a hostile list. */
const MAX_ROLES_PER_USER = 16;

/** A password being set: the password rule (password-policy.ts), wherever a password is set. */
export const newPasswordSchema = () => text({ min: MIN_PASSWORD_LENGTH, max: MAX_PASSWORD_LENGTH });

/** A password being checked (sign-in, ChangePassword's current one): any length up to the bound. */
export const presentedPasswordSchema = () => text({ min: 1, max: MAX_PASSWORD_LENGTH });

/** The roles an account is given: assignable ones, at least one. */
export const assignedRolesSchema = () =>
  boundedArray(Joi.string().valid(...ASSIGNABLE_ROLES), MAX_ROLES_PER_USER).min(1);
