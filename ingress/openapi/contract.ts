import type { Redis } from 'ioredis';

import { loadConfig } from '../../shared/config';
import type { ImportResults } from '../../shared/importers/import-results';
import { IMPORTERS } from '../../shared/importers/registry';
import { createKeys } from '../../shared/redis/keys';
import { COMMAND_DEFINITIONS } from '../command/command-definitions';
import { allQueries } from '../readmodel/queries';
import type { RegisteredQuery } from '../readmodel/query-definition';
import { buildOpenApiDocument, type OpenApiDocument } from './openapi-document';

/** Where the generated document is committed, relative to the repository's root. */
export const COMMITTED_DOCUMENT_PATH = 'docs/openapi.json';

/** The document of a running app: its own queries, and its IMPORT_MAX_ROWS. */
export function serviceDocument(queries: readonly RegisteredQuery[], maxImportRows: number): OpenApiDocument {
  return buildOpenApiDocument({
    queries,
    commands: COMMAND_DEFINITIONS,
    importers: [...IMPORTERS.values()],
    maxImportRows,
  });
}

/**
 * Stands in for a query's dependency while only its definition is read: building the document
 * calls no handler, so any use of it is a bug worth a loud error.
 */
function notForHandlers<T extends object>(name: string): T {
  return new Proxy({} as T, {
    get(_target, property) {
      throw new Error(`${name}.${String(property)} was used while generating the OpenAPI document`);
    },
  });
}

/**
 * The document as committed in docs/openapi.json: every query of `allQueries`, and the
 * configuration's defaults (not this machine's environment), so every checkout generates the
 * same text.
 */
export function repositoryDocument(): OpenApiDocument {
  const defaults = loadConfig({});
  const queries = allQueries({
    redis: notForHandlers<Redis>('redis'),
    keys: createKeys(defaults.redisKeyPrefix),
    importResults: notForHandlers<ImportResults>('importResults'),
  });
  return serviceDocument(queries, defaults.imports.maxRows);
}

/** The committed file's text: two-space JSON and a final newline. */
export function documentText(document: OpenApiDocument): string {
  return `${JSON.stringify(document, null, 2)}\n`;
}
