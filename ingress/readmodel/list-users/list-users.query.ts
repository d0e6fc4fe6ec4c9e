import Joi from 'joi';

import { ACCOUNT_READER_ROLES, ASSIGNABLE_ROLES } from '../../../shared/roles';
import { USER_TYPES } from '../../../shared/user/user.commands';
import { text } from '../../../shared/validation';
import { listingSchema } from '../listing';
import { defineQuery, querySchema, type RegisteredQuery } from '../query-definition';
import { USER_ITEM_SCHEMA } from '../user-item';
import type { UserListingQuery, UsersReader } from './users.reader';

/** The largest page a caller may ask for, as for GetMappedPlayers. */
export const MAX_LIST_USERS_TAKE = 1000;
/** The page size when `take` is not given. */
export const DEFAULT_LIST_USERS_TAKE = 100;

interface ListUsersBody {
  readonly query: UserListingQuery;
  readonly skip: number;
  readonly take: number;
  readonly after?: string;
}

/**
 * `ListUsers`: accounts ordered by e-mail, a page at a time (`skip`, `take`, and optionally
 * `after`: only the accounts whose e-mail sorts after the one given, the last of the previous
 * page, which costs a deep page no more than the first), with the exact number of matches in
 * `totalCount` (whatever `after` says), to a UserManager or an Admin. Filters: an assigned `role`
 * (not the hierarchy's: an Admin is not listed under Member unless it holds Member), `userType`,
 * `disabled`, and an `emailPrefix` (case-insensitive). Answered from the users projection
 * (eventually consistent: a change shows once the projector has applied it); deleted accounts
 * are not in it.
 */
export function listUsersQuery(reader: UsersReader): RegisteredQuery {
  return defineQuery<ListUsersBody>({
    queryType: 'ListUsers',
    description:
      'Accounts by e-mail, paged (skip, take <= 1000; after: the e-mail the previous page ended with), with the exact totalCount; filters role (assigned), userType, disabled, emailPrefix.',
    schemes: ['Basic', 'Bearer'],
    roles: ACCOUNT_READER_ROLES,
    schema: querySchema<ListUsersBody>(
      'ListUsers',
      {
        role: text().valid(...ASSIGNABLE_ROLES),
        userType: text().valid(...USER_TYPES),
        disabled: Joi.boolean().strict(),
        emailPrefix: text({ min: 1, max: 254, notBlank: true }).trim(),
      },
      {
        skip: Joi.number().strict().integer().min(0).max(Number.MAX_SAFE_INTEGER).default(0),
        take: Joi.number()
          .strict()
          .integer()
          .min(1)
          .max(MAX_LIST_USERS_TAKE)
          .default(DEFAULT_LIST_USERS_TAKE),
        after: text({ min: 1, max: 254, notBlank: true })
          .trim()
          .description(
            'Only the accounts whose e-mail sorts after this one (any case): the last e-mail of the previous page. `skip` counts from there; `totalCount` counts every match.',
          ),
      },
    ),
    response: listingSchema('ListUsersResult', USER_ITEM_SCHEMA),
    async handle({ body }) {
      const { totalCount, items } = await reader.list(body.query, body);
      return { json: `{"results":[${items.join(',')}],"totalCount":${totalCount}}` };
    },
  });
}
