import type { Redis } from 'ioredis';

import type { AccountService } from '../shared/accounts/account.service';
import { loadConfig } from '../shared/config';
import type { EventStore } from '../shared/event-store/event-store';
import type { ImportResults } from '../shared/importers/import-results';
import type { Importer } from '../shared/importers/importer';
import { IMPORTERS } from '../shared/importers/registry';
import { createKeys } from '../shared/redis/keys';
import type { DeliveryLog } from '../shared/webhook-subscription/delivery-log';
import { BULL_BOARD_CONTRACT } from './admin/bull-board.contract';
import { TOKEN_CONTRACT } from './auth/token.contract';
import { commandContract } from './command/command.contract';
import { COMMAND_DEFINITIONS, type RoutedDefinition } from './command/command-request';
import { EVENTS_CONTRACT } from './events/events.contract';
import { LIVENESS_CONTRACT, READINESS_CONTRACT } from './health/health.contract';
import { importContract } from './import/import.contract';
import { METRICS_CONTRACT } from './metrics/metrics.contract';
import type { OperationContract } from './openapi/contract-kit';
import { DOCS_CONTRACT, DOCUMENT_CONTRACT } from './openapi/openapi.contract';
import { assembleOpenApiDocument, type OpenApiDocument } from './openapi/openapi-document';
import type { UsersReader } from './readmodel/list-users/users.reader';
import { allQueries } from './readmodel/queries';
import type { RegisteredQuery } from './readmodel/query-definition';
import type { ProjectionWaits } from './readmodel/read-your-writes';
import { readModelContract } from './readmodel/readmodel.contract';
import { webhooksContract } from './webhooks/webhooks.contract';

/** What the document is generated from: the registries the endpoints dispatch on. */
export interface ContractSources {
  readonly queries: readonly RegisteredQuery[];
  readonly commands: readonly RoutedDefinition[];
  readonly importers: readonly Importer[];
  /** IMPORT_MAX_ROWS: the importers' schemas depend on it. */
  readonly maxImportRows: number;
}

/**
 * The operation each feature contributes (its `*.contract.ts`), in the document's order. Every
 * route app.ts registers is here, and nothing else: a test holds the route table to the document.
 */
export function serviceContracts(sources: ContractSources): OperationContract[] {
  return [
    readModelContract(sources.queries),
    commandContract(sources.commands),
    importContract(sources.importers, sources.maxImportRows),
    EVENTS_CONTRACT,
    TOKEN_CONTRACT,
    LIVENESS_CONTRACT,
    READINESS_CONTRACT,
    DOCUMENT_CONTRACT,
    DOCS_CONTRACT,
    BULL_BOARD_CONTRACT,
    METRICS_CONTRACT,
  ];
}

/** The OpenAPI 3.1 document of every endpoint, from the registries and the features' contracts. */
export function buildOpenApiDocument(sources: ContractSources): OpenApiDocument {
  return assembleOpenApiDocument(serviceContracts(sources), webhooksContract);
}

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
    accounts: notForHandlers<AccountService>('accounts'),
    usersReader: notForHandlers<UsersReader>('usersReader'),
    store: notForHandlers<EventStore>('store'),
    deliveryLog: notForHandlers<DeliveryLog>('deliveryLog'),
    projectionWaits: notForHandlers<ProjectionWaits>('projectionWaits'),
  });
  return serviceDocument(queries, defaults.imports.maxRows);
}
