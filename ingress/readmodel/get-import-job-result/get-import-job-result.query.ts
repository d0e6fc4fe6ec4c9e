import { toJobResultItem, type ImportResults } from '../../../shared/importers/import-results';
import { isOwnerOrAdmin } from '../../../shared/roles';
import { guid } from '../../../shared/validation';
import { notFoundListing } from '../listing';
import { defineQuery, querySchema, type RegisteredQuery } from '../query-definition';

interface Body {
  readonly query: { readonly importJobId: string };
}

/** `GetImportJobResult`: an import's status, progress and result, to its submitter or an Admin. */
export function getImportJobResultQuery(results: ImportResults): RegisteredQuery {
  return defineQuery<Body>({
    queryType: 'GetImportJobResult',
    description: "An import job's status, progress and result (its submitter or an Admin).",
    schemes: ['Basic', 'Bearer'],
    roles: [],
    schema: querySchema<Body>('GetImportJobResult', { importJobId: guid().required() }),
    async handle({ principal, body }) {
      const record = await results.get(body.query.importJobId);
      if (!record || !isOwnerOrAdmin(principal, record.submitterUserId)) {
        return notFoundListing();
      }
      return { body: { results: [toJobResultItem(record)], totalCount: 1 } };
    },
  });
}
