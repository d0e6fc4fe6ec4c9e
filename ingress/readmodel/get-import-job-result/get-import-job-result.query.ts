import type { ImportResults } from '../../../shared/importers/import-results';
import { hasAnyRole } from '../../../shared/roles';
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
      if (
        !record ||
        (record.submitterUserId !== principal.userId && !hasAnyRole(principal.roles, ['Admin']))
      ) {
        return notFoundListing();
      }
      const item = {
        importJobId: record.importJobId,
        requestId: record.requestId,
        importerType: record.importerType,
        priority: record.priority,
        status: record.status,
        message: record.message,
        success: record.success,
        commandsExecuted: record.commandsExecuted,
        eventsGenerated: record.eventsGenerated,
        aggregatesProcessed: record.aggregatesProcessed,
        skipped: record.skipped,
        progress: record.progress,
        executionDuration: record.executionDuration,
        errorMessage: record.errorMessage,
        errorCode: record.errorCode,
        rowErrors: record.rowErrors,
        createdAt: record.createdAt,
        completedAt: record.completedAt,
      };
      return { body: { results: [item], totalCount: 1 } };
    },
  });
}
