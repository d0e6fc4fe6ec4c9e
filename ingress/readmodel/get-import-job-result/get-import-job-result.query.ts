import { type ImportResults, toJobResultItem } from '../../../shared/importers/import-results';
import { IMPORT_ERROR_CODES, IMPORT_PRIORITIES, IMPORT_STATUSES } from '../../../shared/importers/importer';
import { hasAnyRole, isOwnerOrAdmin } from '../../../shared/roles';
import { guid } from '../../../shared/validation';
import type { Principal } from '../../auth/principal';
import { closedObject, GUID_SCHEMA, type JsonSchema, TIMESTAMP_SCHEMA } from '../../http/json-schema';
import { ROW_ERROR_SCHEMA } from '../../import/import-response';
import { listingSchema, notFoundListing } from '../listing';
import { defineQuery, querySchema, type RegisteredQuery } from '../query-definition';

const count: JsonSchema = { type: 'integer', minimum: 0 };

/** An import's record as the query shows it (ImportJobResultItem). */
const IMPORT_JOB_RESULT_SCHEMA = closedObject(
  {
    importJobId: GUID_SCHEMA,
    requestId: GUID_SCHEMA,
    importerType: { type: 'string' },
    priority: { type: 'string', enum: IMPORT_PRIORITIES },
    status: { type: 'string', enum: IMPORT_STATUSES },
    message: { type: 'string' },
    success: { type: ['boolean', 'null'], description: 'null while Pending.' },
    commandsExecuted: count,
    eventsGenerated: count,
    aggregatesProcessed: count,
    skipped: count,
    progress: closedObject({ done: count, total: count }),
    executionDuration: { type: ['string', 'null'], pattern: '^\\d{2,}:\\d{2}:\\d{2}\\.\\d{2}$' },
    errorMessage: { type: ['string', 'null'] },
    errorCode: { enum: [...IMPORT_ERROR_CODES, null] },
    rowErrors: { type: 'array', items: ROW_ERROR_SCHEMA },
    createdAt: TIMESTAMP_SCHEMA,
    completedAt: { ...TIMESTAMP_SCHEMA, type: ['string', 'null'] },
  },
  [],
  { title: 'ImportJobResult' },
);

interface Body {
  readonly query: { readonly importJobId: string };
}

/**
 * Whether the principal may read an import record: an Admin any; anyone else its own, submitted by
 * this account. An e-mail registered again after erasure has the same user id as the erased account
 * (ADR 0014), so a record submitted before this account was created is the erased account's.
 */
function mayRead(principal: Principal, record: { submitterUserId: string; createdAt: string }): boolean {
  if (hasAnyRole(principal.roles, ['Admin'])) return true;
  return isOwnerOrAdmin(principal, record.submitterUserId) && record.createdAt >= principal.accountCreatedAt;
}

/** `GetImportJobResult`: an import's status, progress and result, to its submitter or an Admin. */
export function getImportJobResultQuery(results: ImportResults): RegisteredQuery {
  return defineQuery<Body>({
    queryType: 'GetImportJobResult',
    description: "An import job's status, progress and result (its submitter or an Admin).",
    schemes: ['Basic', 'Bearer'],
    roles: [],
    schema: querySchema<Body>('GetImportJobResult', { importJobId: guid().required() }),
    response: listingSchema('GetImportJobResultResult', IMPORT_JOB_RESULT_SCHEMA),
    answersNotFoundListing: true,
    async handle({ principal, body }) {
      const record = await results.get(body.query.importJobId);
      if (!record || !mayRead(principal, record)) {
        return notFoundListing();
      }
      return { body: { results: [toJobResultItem(record)], totalCount: 1 } };
    },
  });
}
