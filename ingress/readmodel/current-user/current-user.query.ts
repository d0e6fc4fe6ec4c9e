import Joi from 'joi';

import { effectiveRoles } from '../../../shared/roles';
import { defineQuery, querySchema } from '../query-definition';

/** Claim type URIs of the spec's 2.8, as the platform's identity layer names them. */
export const CLAIM_TYPES = {
  nameIdentifier: 'http://schemas.xmlsoap.org/ws/2005/05/identity/claims/nameidentifier',
  role: 'http://schemas.microsoft.com/ws/2008/06/identity/claims/role',
  accountType: 'account_type',
  internalUserId: 'internal_user_id',
} as const;

interface CurrentUserBody {
  readonly skip: number;
  readonly take: number;
}

/** `CurrentUser` (spec 4.3): the caller's own record, in the `data`/`skip` envelope. */
export const currentUserQuery = defineQuery<CurrentUserBody>({
  queryType: 'CurrentUser',
  description: 'The authenticated caller: e-mail, roles, claims and effective roles.',
  schemes: ['Basic', 'Bearer'],
  roles: [],
  schema: querySchema<CurrentUserBody>(
    'CurrentUser',
    {},
    {
      skip: Joi.number().integer().min(0).default(0),
      take: Joi.number().integer().min(1).max(1000).default(10),
    },
  ),
  handle({ principal, body }) {
    const item = {
      name: principal.email,
      email: principal.email,
      roles: principal.roles,
      claims: {
        [CLAIM_TYPES.nameIdentifier]: principal.userId,
        [CLAIM_TYPES.accountType]: principal.userType,
        [CLAIM_TYPES.internalUserId]: principal.userId,
        [CLAIM_TYPES.role]: principal.roles.join(', '),
      },
      authenticationType: principal.authenticationType,
      requestTime: new Date().toISOString(),
      effectiveRoles: effectiveRoles(principal.roles),
    };
    const data = [item].slice(body.skip, body.skip + body.take);
    return Promise.resolve({ body: { data, totalCount: 1, skip: body.skip } });
  },
});
