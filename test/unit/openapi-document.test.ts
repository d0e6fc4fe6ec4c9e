import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';

import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { diff } from 'jest-diff';
import Joi from 'joi';

import { COMMAND_DEFINITIONS } from '../../ingress/command/command-request';
import { buildOpenApiDocument, repositoryDocument } from '../../ingress/contract';
import {
  COMMITTED_DOCUMENT_PATH,
  documentText,
  type OpenApiDocument,
} from '../../ingress/openapi/openapi-document';
import { COMMAND_ERRORS } from '../../shared/event-store/command-answer';
import { IMPORT_ERROR_CODES } from '../../shared/importers/importer';
import { IMPORTERS } from '../../shared/importers/registry';

const ROOT = path.resolve(__dirname, '../..');
const generated = repositoryDocument();

/** A readable account of how the committed document differs from `current`, or null. */
function drift(committedText: string, current: OpenApiDocument): string | null {
  if (committedText === documentText(current)) return null;
  const committed = JSON.parse(committedText) as unknown;
  return diff(committed, JSON.parse(documentText(current)), {
    aAnnotation: `committed ${COMMITTED_DOCUMENT_PATH}`,
    bAnnotation: 'generated from the code',
    contextLines: 3,
    expand: false,
  });
}

/** Runs @seriousme/openapi-schema-validator (ESM only, so in a node of its own) on a document. */
function validateOpenApi(document: unknown): { valid: boolean; errors?: unknown } {
  const script = `
    import { Validator } from '@seriousme/openapi-schema-validator';
    let input = '';
    for await (const chunk of process.stdin) input += chunk;
    const result = await new Validator().validate(JSON.parse(input));
    process.stdout.write(JSON.stringify({ valid: result.valid, errors: result.errors }));`;
  const run = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
    cwd: ROOT,
    input: JSON.stringify(document),
    encoding: 'utf8',
  });
  if (run.status !== 0) throw new Error(`validator failed to run: ${run.stderr}`);
  return JSON.parse(run.stdout) as { valid: boolean; errors?: unknown };
}

describe('The OpenAPI document', () => {
  it('When the code is generated again, then docs/openapi.json is what it gives (else: npm run openapi)', () => {
    const difference = drift(readFileSync(path.join(ROOT, COMMITTED_DOCUMENT_PATH), 'utf8'), generated);
    if (difference) {
      throw new Error(
        `${COMMITTED_DOCUMENT_PATH} differs from the joi schemas and registries; run \`npm run openapi\` and commit it:\n${difference}`,
      );
    }
  });

  it('When a query schema changes, then the drift check fails and names the new field', () => {
    const committedText = documentText(generated);
    const changed = buildOpenApiDocument({
      queries: [
        {
          queryType: 'GetMappedPlayers',
          description: 'changed',
          schemes: ['Basic'],
          roles: ['ServiceAccount'],
          schema: Joi.object({
            query: Joi.object({
              queryType: Joi.string().valid('GetMappedPlayers').required(),
              teamSize: Joi.number(),
            }),
          }),
          response: { type: 'object' },
          handle: () => Promise.resolve({ body: {} }),
        },
      ],
      commands: COMMAND_DEFINITIONS,
      importers: [...IMPORTERS.values()],
      maxImportRows: 10,
    });
    expect(drift(committedText, changed)).toContain('teamSize');
    expect(drift(committedText, generated)).toBeNull();
  });

  it('When validated against the OpenAPI 3.1 schema, then it is valid; a broken one is not', () => {
    expect(validateOpenApi(generated)).toEqual({ valid: true });
    const broken = { ...generated, paths: { '/healthz': { get: { responses: { '200': {} } } } } };
    expect(validateOpenApi(broken).valid).toBe(false);
  });

  it('When every schema is compiled by ajv (draft 2020-12, strict), then none is refused', () => {
    const ajv = new Ajv2020({ strict: true, strictRequired: false });
    addFormats(ajv);
    ajv.addVocabulary(['discriminator']);
    const text = JSON.stringify(generated.components.schemas).replaceAll(
      '"#/components/schemas/',
      '"#/$defs/',
    );
    const schemas = JSON.parse(text) as Record<string, unknown>;
    for (const name of Object.keys(schemas)) {
      expect(() => ajv.compile({ $defs: schemas, $ref: `#/$defs/${name}` })).not.toThrow();
    }
  });

  it('When its examples are checked against their own schemas, then every one of them is valid', () => {
    const ajv = new Ajv2020({ strict: true, strictRequired: false, allErrors: true });
    addFormats(ajv);
    ajv.addVocabulary(['discriminator']);
    const contractId = 'https://contract.invalid/openapi';
    const local = (value: unknown): Record<string, unknown> =>
      JSON.parse(
        JSON.stringify(value).replaceAll('"#/components/schemas/', `"${contractId}#/$defs/`),
      ) as Record<string, unknown>;
    ajv.addSchema({ $id: contractId, $defs: local(generated.components.schemas) });

    const checked: string[] = [];
    for (const [pathName, item] of Object.entries(generated.paths)) {
      for (const [method, operation] of Object.entries(item)) {
        const contents = [
          ...Object.entries((operation.requestBody?.content ?? {}) as Record<string, unknown>).map(
            ([type, media]) => [`${method} ${pathName} request ${type}`, media] as const,
          ),
          ...Object.entries(operation.responses).flatMap(([status, response]) =>
            Object.entries(response.content ?? {}).map(
              ([type, media]) => [`${method} ${pathName} ${status} ${type}`, media] as const,
            ),
          ),
        ];
        for (const [where, media] of contents) {
          const { schema, examples = {} } = media as {
            schema: unknown;
            examples?: Record<string, { value: unknown }>;
          };
          const validate = ajv.compile(local(schema));
          for (const [name, example] of Object.entries(examples)) {
            checked.push(`${where} ${name}`);
            if (!validate(example.value)) {
              throw new Error(`example ${name} of ${where} is invalid: ${JSON.stringify(validate.errors)}`);
            }
          }
        }
      }
    }
    expect(checked.length).toBeGreaterThanOrEqual(20);
  });

  it('When the registries list queries, commands, importers and error codes, then the document has every one', () => {
    const readModel = generated.paths['/api/readmodel']?.post;
    expect(readModel?.['x-query-types']?.map((query) => query.queryType)).toEqual([
      'GetTeamRatingInputByTeamId',
      'GetMappedPlayers',
      'CurrentUser',
      'GetFantasyTeam',
      'AvailableImporters',
      'GetImportJobResult',
      'GetUser',
      'ListUsers',
      'ListWebhookSubscriptions',
      'GetWebhookDeliveries',
    ]);
    const commandBody = generated.paths['/api/command']?.post?.requestBody as {
      content: Record<string, { schema: { discriminator: { mapping: Record<string, string> } } }>;
    };
    expect(Object.keys(commandBody.content['application/json']?.schema.discriminator.mapping ?? {})).toEqual(
      COMMAND_DEFINITIONS.map(({ definition }) => definition.commandType),
    );
    const importBody = generated.paths['/api/import']?.post?.requestBody as typeof commandBody;
    expect(Object.keys(importBody.content['application/json']?.schema.discriminator.mapping ?? {})).toEqual([
      ...IMPORTERS.keys(),
    ]);

    const text = JSON.stringify(generated);
    for (const code of [...Object.keys(COMMAND_ERRORS), ...IMPORT_ERROR_CODES])
      expect(text).toContain(`"${code}"`);
    expect(generated.components.securitySchemes).toEqual({
      basicAuth: expect.objectContaining({ type: 'http', scheme: 'basic' }),
      bearerAuth: expect.objectContaining({ type: 'http', scheme: 'bearer', bearerFormat: 'JWT' }),
      metricsToken: expect.objectContaining({ type: 'http', scheme: 'bearer' }),
    });
    expect(
      readModel?.['x-query-types']?.find((query) => query.queryType === 'GetMappedPlayers'),
    ).toMatchObject({
      security: [{ basicAuth: [] }],
      roles: ['ServiceAccount'],
      module: 'sport-core',
    });
  });

  it('When a client reads the basicAuth scheme, then it says credentials are UTF-8, as the challenge does (RFC 7617)', () => {
    const basicAuth = generated.components.securitySchemes.basicAuth as { description?: string };
    expect(basicAuth.description).toMatch(/UTF-8/);
    expect(basicAuth.description).toContain('charset="UTF-8"');
    expect(JSON.stringify(generated)).toContain(
      'Basic realm=\\"fantasy-team-service\\", charset=\\"UTF-8\\", Bearer realm=\\"fantasy-team-service\\"',
    );
  });
});

/** Every schema object of the document, with its JSON pointer (examples and values are not walked). */
function* schemaObjects(node: unknown, pointer = '#'): Generator<[string, Record<string, unknown>]> {
  if (Array.isArray(node)) {
    for (const [i, item] of node.entries()) yield* schemaObjects(item, `${pointer}/${i}`);
    return;
  }
  if (typeof node !== 'object' || node === null) return;
  yield [pointer, node as Record<string, unknown>];
  for (const [key, value] of Object.entries(node)) {
    if (!['const', 'enum', 'default', 'example', 'examples'].includes(key))
      yield* schemaObjects(value, `${pointer}/${key}`);
  }
}

describe('The OpenAPI document, read by client generators', () => {
  it('When a generator looks for where to send requests, then servers names the serving host', () => {
    expect(generated).toMatchObject({ servers: [{ url: '/' }] });
  });

  it('When an enum or a const is read, then it has the type of its values (a nullable enum is ["string","null"])', () => {
    const untyped = [...schemaObjects(generated)]
      .filter(([, schema]) => ('enum' in schema || 'const' in schema) && !('type' in schema))
      .map(([pointer]) => pointer);
    expect(untyped).toEqual([]);
    const importJob = generated.components.schemas.GetImportJobResultResult as {
      properties: { results: { items: { properties: { errorCode: unknown } } } };
    };
    expect(importJob.properties.results.items.properties.errorCode).toEqual({
      type: ['string', 'null'],
      enum: [...IMPORT_ERROR_CODES, null],
    });
  });

  it('When a member has a default, then the document says it in words and never as `default` (openapi-typescript would make it required)', () => {
    const withDefault = [...schemaObjects(generated)].filter(([, schema]) => 'default' in schema);
    expect(withDefault.map(([pointer]) => pointer)).toEqual([]);
    const command = generated.components.schemas.CreateFantasyTeamCommand as {
      properties: { expectedVersion: { description: string } };
      required: string[];
    };
    expect(command.properties.expectedVersion.description).toContain('Default: `0`.');
    expect(command.required).not.toContain('expectedVersion');
  });

  it('When a generator pairs a query with its answer, then ReadModelQueryTypes names its request, answer and schemes', () => {
    const pairing = generated.components.schemas.ReadModelQueryTypes as {
      properties: Record<string, unknown>;
      required: string[];
    };
    const queries = generated.paths['/api/readmodel']?.post?.['x-query-types'] ?? [];
    expect(pairing.required).toEqual(queries.map((query) => query.queryType));
    for (const query of queries) {
      expect(pairing.properties[query.queryType]).toMatchObject({
        properties: {
          request: query.request,
          answer: query.responses['200'],
          schemes: {
            items: {
              enum: query.security.map((entry) =>
                Object.keys(entry)[0] === 'basicAuth' ? 'Basic' : 'Bearer',
              ),
            },
          },
        },
      });
    }
  });

  it('When a status has its own shape or a problem, then its JSON media type lists both (hey-api keeps only that one)', () => {
    const statuses = [
      ['/api/import', '400', 'ImportResponse', 'Problem400'],
      ['/api/auth/token', '400', 'OAuthError', 'Problem400'],
      ['/api/readmodel', '404', 'NotFoundListing', 'Problem404'],
    ] as const;
    for (const [path, status, own, problem] of statuses) {
      const content = generated.paths[path]?.post?.responses[status]?.content;
      expect(Object.keys(content ?? {})[0]).toBe('application/json');
      expect(content?.['application/json']?.schema).toEqual({
        anyOf: [{ $ref: `#/components/schemas/${own}` }, { $ref: `#/components/schemas/${problem}` }],
      });
    }
  });

  it("When a client reads the import's 401, then it has no content and its description says to read the status", () => {
    const unauthorized = generated.paths['/api/import']?.post?.responses['401'];
    expect(unauthorized?.content).toBeUndefined();
    expect(unauthorized?.description).toContain('no body at all');
    expect(unauthorized?.description).toContain('Tell it by the status');
  });
});
