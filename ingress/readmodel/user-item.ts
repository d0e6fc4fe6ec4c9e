import { ASSIGNABLE_ROLES } from '../../shared/roles';
import { USER_TYPES } from '../../shared/user/user.commands';
import type { UserView } from '../../shared/user/user-view';
import { closedObject, GUID_SCHEMA, type JsonSchema, TIMESTAMP_SCHEMA } from '../http/json-schema';

const NULLABLE_TEXT: JsonSchema = { type: ['string', 'null'] };

/**
 * An account as GetUser and ListUsers answer it (UserView). Closed: the contract check fails any
 * answer that carries one member more (a hash, a stamp, a key).
 */
export const USER_ITEM_SCHEMA = closedObject(
  {
    id: { ...GUID_SCHEMA, description: 'The user id.' },
    email: { type: 'string', description: 'As stored: lower case.' },
    userName: { type: 'string' },
    userType: { type: 'string', enum: USER_TYPES },
    roles: {
      type: 'array',
      items: { type: 'string', enum: ASSIGNABLE_ROLES },
      description: 'Assigned roles (not expanded by the hierarchy).',
    },
    firstName: NULLABLE_TEXT,
    lastName: NULLABLE_TEXT,
    emailVerified: { type: 'boolean' },
    disabled: { type: 'boolean', description: 'A disabled account cannot sign in.' },
    createdAt: TIMESTAMP_SCHEMA,
    updatedAt: { ...TIMESTAMP_SCHEMA, description: "The account's last change." },
    version: {
      type: 'integer',
      minimum: 1,
      description: "The account's version (for a command's expectedVersion).",
    },
  } satisfies Record<keyof UserView, JsonSchema>,
  [],
  { title: 'User' },
);
