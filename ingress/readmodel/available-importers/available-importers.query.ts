import { IMPORTERS } from '../../../shared/importers/registry';
import { defineQuery, querySchema } from '../query-definition';

/** `AvailableImporters` (spec 4.4): every registered importer, to any authenticated account. */
export const availableImportersQuery = defineQuery<unknown>({
  queryType: 'AvailableImporters',
  description: 'The registered importers, with the roles their commands need.',
  schemes: ['Basic', 'Bearer'],
  roles: [],
  schema: querySchema('AvailableImporters'),
  handle() {
    const results = [...IMPORTERS.values()].map(({ importerType, description, requiredRoles }) => ({
      importerType,
      description,
      requiredRoles,
    }));
    return Promise.resolve({ body: { results, totalCount: results.length } });
  },
});
