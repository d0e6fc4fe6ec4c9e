import { IMPORTERS } from '../../../shared/importers/registry';
import { ASSIGNABLE_ROLES, PUBLIC_ROLE } from '../../../shared/roles';
import { closedObject } from '../../http/json-schema';
import { listingSchema } from '../listing';
import { defineQuery, querySchema } from '../query-definition';

/** `AvailableImporters` (spec 4.4): every registered importer, to any authenticated account. */
export const availableImportersQuery = defineQuery<unknown>({
  queryType: 'AvailableImporters',
  description: 'The registered importers, with the roles their commands need.',
  schemes: ['Basic', 'Bearer'],
  roles: [],
  schema: querySchema('AvailableImporters'),
  response: listingSchema(
    'AvailableImportersResult',
    closedObject({
      importerType: { type: 'string' },
      description: { type: 'string' },
      requiredRoles: {
        type: 'array',
        items: { type: 'string', enum: [...ASSIGNABLE_ROLES, PUBLIC_ROLE] },
        description: "Any one of them lets the submitter's import run its commands.",
      },
    }),
  ),
  handle() {
    const results = [...IMPORTERS.values()].map(({ importerType, description, requiredRoles }) => ({
      importerType,
      description,
      requiredRoles,
    }));
    return Promise.resolve({ body: { results, totalCount: results.length } });
  },
});
