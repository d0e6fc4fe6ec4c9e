import { readFileSync } from 'node:fs';
import path from 'node:path';

import type { JsonSchema } from '../../../ingress/http/json-schema';
import type { OpenApiDocument, Operation } from '../../../ingress/openapi/openapi-document';
import { COMMITTED_DOCUMENT_PATH } from '../../../ingress/openapi/openapi-document';
import { PROJECT_ROOT } from '../processes';

/**
 * What the contract fuzzer knows of the service: only the committed OpenAPI document, as a client
 * generated from it would. Every operation becomes one or more {@link FuzzTarget}s: one per media
 * type of its body and per member of a `oneOf` body (so every query, command and importer type and
 * both token grants are a target of their own), with the security the document states for it.
 */

/** How a request presents itself; `metrics` is METRICS_TOKEN, the scraper's own credential. */
export type SecurityScheme = 'basic' | 'bearer' | 'metrics' | 'none';

export interface FuzzTarget {
  /** `POST /api/readmodel CurrentUser`, `GET /healthz`. */
  readonly name: string;
  readonly method: 'GET' | 'POST';
  readonly path: string;
  /** The body's media type; absent for operations without a body. */
  readonly mediaType?: string;
  /** The body's schema, self-contained (`$defs`), for the generator and for ajv. */
  readonly schema?: JsonSchema;
  /** The member's component name (`CreateFantasyTeamCommand`), when the body is a `oneOf`. */
  readonly component?: string;
  /** Schemes any of which the document accepts (`none` where an empty requirement is listed). */
  readonly security: readonly SecurityScheme[];
  /** Roles the document names for it (`x-roles`, a query's `roles`, an importer's `requiredRoles`). */
  readonly roles: readonly string[];
}

const COMPONENTS = '#/components/schemas/';

/** The document docs/openapi.json as committed (a drift test keeps it equal to the generated one). */
export function committedDocument(): OpenApiDocument {
  return JSON.parse(
    readFileSync(path.join(PROJECT_ROOT, COMMITTED_DOCUMENT_PATH), 'utf8'),
  ) as OpenApiDocument;
}

/** `schema` with the document's components as `$defs`, so it stands alone. */
export function selfContained(document: OpenApiDocument, schema: JsonSchema): JsonSchema {
  // A component named by the root's own $ref is inlined: json-schema-faker 0.6 fills the enum items
  // of a schema reached that way with nulls.
  const name = componentName(schema);
  const root = name ? (document.components.schemas[name] ?? schema) : schema;
  const text = JSON.stringify({ ...root, $defs: document.components.schemas });
  return JSON.parse(text.replaceAll(`"${COMPONENTS}`, '"#/$defs/')) as JsonSchema;
}

function schemesOf(requirements: readonly Readonly<Record<string, readonly string[]>>[]): SecurityScheme[] {
  const schemes = new Set<SecurityScheme>();
  if (requirements.length === 0) schemes.add('none');
  for (const requirement of requirements) {
    const names = Object.keys(requirement);
    if (names.length === 0) schemes.add('none');
    for (const name of names) {
      if (name === 'basicAuth') schemes.add('basic');
      else if (name === 'bearerAuth') schemes.add('bearer');
      else if (name === 'metricsToken') schemes.add('metrics');
      else throw new Error(`the fuzzer does not know the security scheme ${name}`);
    }
  }
  return [...schemes];
}

function componentName(schema: JsonSchema): string | undefined {
  return schema.$ref?.startsWith(COMPONENTS) ? schema.$ref.slice(COMPONENTS.length) : undefined;
}

interface TypeContract {
  readonly security?: readonly Readonly<Record<string, readonly string[]>>[];
  readonly roles?: readonly string[];
  readonly requiredRoles?: readonly string[];
}

/** The x-query-types / x-importer-types entry whose request is `component`, if any. */
function typeContractOf(operation: Operation, component: string | undefined): TypeContract | undefined {
  if (!component) return undefined;
  const queries = operation['x-query-types'] ?? [];
  const query = queries.find((entry) => componentName(entry.request) === component);
  if (query) return query;
  const importers = (operation['x-importer-types'] ?? []) as readonly (TypeContract & {
    importerType: string;
  })[];
  return importers.find((entry) => component === `${entry.importerType}Import`);
}

/** Every target of the document: each operation, split by media type and `oneOf` member. */
export function fuzzTargets(document: OpenApiDocument): FuzzTarget[] {
  const targets: FuzzTarget[] = [];
  for (const [pathName, item] of Object.entries(document.paths)) {
    for (const [method, operation] of Object.entries<Operation>(item)) {
      const base = {
        method: method.toUpperCase() as 'GET' | 'POST',
        path: pathName,
        security: schemesOf(operation.security),
        roles: operation['x-roles'] ?? [],
      };
      const content = operation.requestBody?.content as Record<string, { schema: JsonSchema }> | undefined;
      if (!content) {
        targets.push({ ...base, name: `${base.method} ${pathName}` });
        continue;
      }
      for (const [mediaType, { schema }] of Object.entries(content)) {
        const members = schema.oneOf ?? [schema];
        for (const member of members) {
          const component = componentName(member);
          const own = typeContractOf(operation, component);
          const suffix = [component, mediaType === 'application/json' ? undefined : mediaType]
            .filter(Boolean)
            .join(' ');
          targets.push({
            ...base,
            name: `${base.method} ${pathName}${suffix ? ` ${suffix}` : ''}`,
            mediaType,
            schema: selfContained(document, member),
            ...(component ? { component } : {}),
            ...(own?.security ? { security: schemesOf(own.security) } : {}),
            roles: own?.roles ?? own?.requiredRoles ?? base.roles,
          });
        }
      }
    }
  }
  return targets;
}

/** Every query, command and importer type the document names: each must be some target's. */
export function documentedTypes(document: OpenApiDocument): string[] {
  const types: string[] = [];
  for (const item of Object.values(document.paths)) {
    for (const operation of Object.values<Operation>(item)) {
      for (const query of operation['x-query-types'] ?? []) types.push(`${query.queryType}Query`);
      const commands = (operation['x-command-types'] ?? []) as readonly { commandType: string }[];
      for (const command of commands) types.push(`${command.commandType}Command`);
      const importers = (operation['x-importer-types'] ?? []) as readonly { importerType: string }[];
      for (const importer of importers) types.push(`${importer.importerType}Import`);
    }
  }
  return types;
}

/** Every method the document lists for `path` (HEAD wherever GET is). */
export function documentedMethods(document: OpenApiDocument, pathName: string): string[] {
  const methods = Object.keys(document.paths[pathName] ?? {}).map((method) => method.toUpperCase());
  return methods.includes('GET') ? [...methods, 'HEAD'] : methods;
}
