import Joi from 'joi';

import { ASSIGNABLE_ROLES, effectiveRoles, PUBLIC_ROLE } from '../../../shared/roles';
import { USER_TYPES } from '../../../shared/user/user.commands';
import { closedObject, type JsonSchema, TIMESTAMP_SCHEMA } from '../../http/json-schema';
import { defineQuery, querySchema } from '../query-definition';

/** Claim type URIs of the spec's 2.8, as the platform's identity layer names them. */
export const CLAIM_TYPES = {
  nameIdentifier: 'http://schemas.xmlsoap.org/ws/2005/05/identity/claims/nameidentifier',
  role: 'http://schemas.microsoft.com/ws/2008/06/identity/claims/role',
  accountType: 'account_type',
  internalUserId: 'internal_user_id',
} as const;

const ROLE_LIST: JsonSchema = {
  type: 'array',
  items: { type: 'string', enum: [...ASSIGNABLE_ROLES, PUBLIC_ROLE] },
};

/** The caller's record (spec 2.8). */
const CURRENT_USER_ITEM = closedObject(
  {
    name: { type: 'string', description: "The account's e-mail." },
    email: { type: 'string' },
    roles: { ...ROLE_LIST, description: 'Assigned roles.' },
    claims: {
      type: 'object',
      properties: {
        [CLAIM_TYPES.nameIdentifier]: { type: 'string', format: 'uuid', description: 'The user id.' },
        [CLAIM_TYPES.role]: { type: 'string', description: 'The roles, joined by ", ".' },
        [CLAIM_TYPES.accountType]: { type: 'string', enum: USER_TYPES },
        [CLAIM_TYPES.internalUserId]: { type: 'string', format: 'uuid' },
      },
      required: Object.values(CLAIM_TYPES),
      additionalProperties: { type: 'string' },
    },
    authenticationType: { type: 'string', enum: ['Basic', 'Bearer'] },
    requestTime: TIMESTAMP_SCHEMA,
    effectiveRoles: { ...ROLE_LIST, description: 'Roles after the hierarchy, with the implicit Public.' },
  },
  [],
  { title: 'CurrentUserItem' },
);

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
      skip: Joi.number().strict().integer().min(0).default(0),
      take: Joi.number().strict().integer().min(1).max(1000).default(10),
    },
  ),
  response: closedObject(
    {
      data: { type: 'array', items: CURRENT_USER_ITEM, maxItems: 1 },
      totalCount: { const: 1 },
      skip: { type: 'integer', minimum: 0 },
    },
    [],
    { title: 'CurrentUserResult' },
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
