import { randomUUID } from 'node:crypto';

import fc from 'fast-check';
import type Joi from 'joi';

import { allQueries, type QueryDependencies } from '../../ingress/readmodel/queries';
import { FANTASY_TEAM_COMMAND_DEFINITIONS } from '../../shared/fantasy-team/fantasy-team.commands';
import { importJobIdFor } from '../../shared/importers/import-queue';
import { importDataSchema } from '../../shared/importers/importer';
import { IMPORTERS } from '../../shared/importers/registry';
import { fieldKey, GUID_FORMAT_MESSAGE } from '../../shared/validation';
import { createHostileSubject, type HostileSubject } from '../helpers/hostile-fixture';
import {
  GUID_ACCEPTED_FORMATS,
  GUID_REFUSED_FORMATS,
  type GuidFormat,
  PROPERTY_TIMEOUT_MS,
  propertyParameters,
  spellGuid,
} from '../helpers/hostile-json';
import { fieldPaths, GUID_PATTERN_TEXT, validSamplesWith, withValueAt } from '../helpers/joi-samples';
import { expectCommandAnswer, expectImportAnswer, expectReadModelAnswer } from '../helpers/response-shapes';

/**
 * One rule for GUIDs on every endpoint (.NET's System.Text.Json's, whose message the spec quotes): any 8-4-4-4-12 hex string of any version, in any case, answered in lower case; braces,
 * parentheses, no hyphens, a URN or blanks around it are refused.
 */

/** Paths of every field the schema checks as a GUID (through the shared guid() rule). */
const guidPaths = (schema: Joi.Schema) =>
  fieldPaths(
    schema,
    (description) => !!description.rules?.some((rule) => rule.args?.regex === GUID_PATTERN_TEXT),
  );

const ALL_FORMATS: GuidFormat[] = [...GUID_ACCEPTED_FORMATS, ...GUID_REFUSED_FORMATS];
const isAccepted = (format: GuidFormat) => (GUID_ACCEPTED_FORMATS as readonly string[]).includes(format);

/** Where each endpoint puts a field's messages: the problem's `errors`, or the command's errorMessage. */
function messagesOf(body: unknown): string {
  const { errors, errorMessage } = body as { errors?: Record<string, string[]>; errorMessage?: string };
  return errors ? Object.values(errors).flat().join(' ') : String(errorMessage ?? '');
}

const QUERY_GUID_FIELDS = allQueries({} as QueryDependencies).flatMap((query) =>
  guidPaths(query.schema).map((path) => [`${query.queryType} ${fieldKey(path)}`, query, path] as const),
);
const COMMAND_GUID_FIELDS = FANTASY_TEAM_COMMAND_DEFINITIONS.flatMap((definition) =>
  guidPaths(definition.schema).map(
    (path) => [`${definition.commandType} ${fieldKey(['command', ...path])}`, definition, path] as const,
  ),
);
const IMPORTER_GUID_FIELDS = [...IMPORTERS.values()].flatMap((importer) =>
  guidPaths(importer.schema(10)).map(
    (path) => [`${importer.importerType} ${fieldKey(['importData', ...path])}`, importer, path] as const,
  ),
);

// Every case is an HTTP request and a check of Redis (PROPERTY_TIMEOUT_MS).
jest.setTimeout(PROPERTY_TIMEOUT_MS);

describe('GUIDs on every endpoint', () => {
  let subject: HostileSubject;

  beforeAll(async () => {
    subject = await createHostileSubject();
  });
  afterAll(() => subject.close());

  /** The answer must name the field as not a GUID exactly when the spelling is a refused one. */
  function expectGuidVerdict(status: number, body: unknown, key: string, format: GuidFormat) {
    const refusal = `${key} must be a GUID`;
    if (isAccepted(format)) {
      expect(messagesOf(body)).not.toContain(refusal);
    } else {
      expect(status).toBe(400);
      expect(messagesOf(body)).toContain(refusal);
    }
  }

  it('When the registries are read, then every GUID field of every query, command and importer is found here', () => {
    expect(QUERY_GUID_FIELDS.length).toBeGreaterThan(0);
    expect(COMMAND_GUID_FIELDS.length).toBeGreaterThan(0);
    expect(IMPORTER_GUID_FIELDS.length).toBeGreaterThan(0);
  });

  it.each(QUERY_GUID_FIELDS)(
    'When the query field %s holds a GUID in any spelling, then only the refused spellings are refused',
    async (_, query, path) => {
      const authorization = query.schemes.includes('Basic') ? subject.admin.basic : subject.admin.bearer;
      await fc.assert(
        fc.asyncProperty(
          validSamplesWith(query.schema, path),
          fc.uuid(),
          fc.constantFrom(...ALL_FORMATS),
          async (valid, guid, format) => {
            const body = withValueAt(valid, path, spellGuid(guid, format));
            const res = await subject.post('/api/readmodel', JSON.stringify(body), authorization);
            expectReadModelAnswer(res);
            expectGuidVerdict(res.status, res.body, fieldKey(path), format);
          },
        ),
        propertyParameters(15),
      );
    },
  );

  it.each(COMMAND_GUID_FIELDS)(
    'When the command field %s holds a GUID in any spelling, then only the refused spellings are refused',
    async (_, definition, path) => {
      await fc.assert(
        fc.asyncProperty(
          validSamplesWith(definition.schema, path),
          fc.uuid(),
          fc.constantFrom(...ALL_FORMATS),
          async (valid, guid, format) => {
            const command = withValueAt(valid, path, spellGuid(guid, format));
            const body = { commandType: definition.commandType, command };
            const res = await subject.post('/api/command', JSON.stringify(body), subject.member.bearer);
            expectCommandAnswer(res);
            expectGuidVerdict(res.status, res.body, fieldKey(['command', ...path]), format);
          },
        ),
        propertyParameters(15),
      );
    },
  );

  it.each(IMPORTER_GUID_FIELDS)(
    'When the importData field %s holds a GUID in any spelling, then only the refused spellings are refused',
    async (_, importer, path) => {
      const schema = importDataSchema(importer, subject.config.imports.maxRows);
      await fc.assert(
        fc.asyncProperty(
          validSamplesWith(schema, path),
          fc.uuid(),
          fc.constantFrom(...ALL_FORMATS),
          async (valid, guid, format) => {
            const importData = withValueAt(valid, path, spellGuid(guid, format));
            const body = {
              requestId: randomUUID(),
              importerType: importer.importerType,
              importData,
              dryRun: true,
            };
            const res = await subject.post('/api/import', JSON.stringify(body), subject.admin.basic);
            expectImportAnswer(res);
            expectGuidVerdict(res.status, res.body, fieldKey(['importData', ...path]), format);
          },
        ),
        propertyParameters(15),
      );
    },
  );

  it('When a command requestId is spelled in any case, then it is echoed in lower case; in a refused spelling, it fails with the spec message', async () => {
    await fc.assert(
      fc.asyncProperty(fc.uuid(), fc.constantFrom(...ALL_FORMATS), async (guid, format) => {
        const body = {
          commandType: 'UnlinkFantasyTeam',
          command: { aggregateRootId: subject.teamId },
          requestId: spellGuid(guid, format),
        };
        const res = await subject.post('/api/command', JSON.stringify(body), subject.member.bearer);
        expectCommandAnswer(res);
        if (isAccepted(format)) {
          // The team exists and is not linked: the rule's answer, under the request's id in lower case.
          expect(res.body).toMatchObject({
            requestId: guid.toLowerCase(),
            errorMessage: 'Team has no linked fantasy identity',
          });
        } else {
          expect(res.status).toBe(400);
          expect(res.body).toMatchObject({
            requestId: null,
            errorMessage: GUID_FORMAT_MESSAGE,
            errorCode: 'COMMAND_VALIDATION_ERROR',
          });
        }
      }),
      propertyParameters(20),
    );
  });

  it('When an import requestId is spelled in any case, then every spelling names the same job; in a refused spelling, it fails with the spec message', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.uuid(),
        fc.constantFrom(...ALL_FORMATS),
        fc.constantFrom(...GUID_ACCEPTED_FORMATS),
        async (guid, format, again) => {
          const submit = (requestId: string) =>
            subject.post(
              '/api/import',
              JSON.stringify({ requestId, importerType: 'UserSeeding', importData: { users: [] } }),
              subject.admin.basic,
            );
          const first = await submit(spellGuid(guid, format));
          expectImportAnswer(first);
          if (!isAccepted(format)) {
            expect(first.status).toBe(400);
            expect((first.body as { errors: unknown }).errors).toEqual({ RequestId: [GUID_FORMAT_MESSAGE] });
            return;
          }
          const jobId = importJobIdFor(subject.admin.userId, guid.toLowerCase());
          expect(first.body).toMatchObject({ requestId: guid.toLowerCase(), importJobId: jobId });
          const second = await submit(spellGuid(guid, again));
          expect(second.body).toMatchObject({ requestId: guid.toLowerCase(), importJobId: jobId });
          const result = await subject.post(
            '/api/readmodel',
            JSON.stringify({
              query: { queryType: 'GetImportJobResult', importJobId: spellGuid(jobId, again) },
            }),
            subject.admin.basic,
          );
          expect(result.status).toBe(200);
          expect((result.body as { results: { importJobId: string }[] }).results[0]?.importJobId).toBe(jobId);
        },
      ),
      propertyParameters(15),
    );
  });
});
