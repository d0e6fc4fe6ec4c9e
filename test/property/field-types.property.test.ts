import { randomUUID } from 'node:crypto';

import fc from 'fast-check';
import type Joi from 'joi';

import { allQueries, type QueryDependencies } from '../../ingress/readmodel/queries';
import { FANTASY_TEAM_COMMAND_DEFINITIONS } from '../../shared/fantasy-team/fantasy-team.commands';
import { importDataSchema } from '../../shared/importers/importer';
import { IMPORTERS } from '../../shared/importers/registry';
import { fieldKey } from '../../shared/validation';
import { createHostileSubject, type HostileSubject } from '../helpers/hostile-fixture';
import { PROPERTY_TIMEOUT_MS, propertyParameters } from '../helpers/hostile-json';
import { type FieldPath, fieldPaths, validSamplesWith, valueAt, withValueAt } from '../helpers/joi-samples';
import { expectCommandAnswer, expectImportAnswer, expectReadModelAnswer } from '../helpers/response-shapes';

/**
 * A JSON number or boolean sent as a string (`"12"`, `"true"`) is a wrong type, refused on every
 * endpoint as .NET's System.Text.Json refuses it, never converted on some fields and refused on
 * others. Every number and boolean field is found from the registered schemas.
 */
const scalarPaths = (schema: Joi.Schema) =>
  fieldPaths(schema, (description) => description.type === 'number' || description.type === 'boolean');

const QUERY_FIELDS = allQueries({} as QueryDependencies).flatMap((query) =>
  scalarPaths(query.schema).map((path) => [`${query.queryType} ${fieldKey(path)}`, query, path] as const),
);
const COMMAND_FIELDS = FANTASY_TEAM_COMMAND_DEFINITIONS.flatMap((definition) =>
  scalarPaths(definition.schema).map(
    (path) => [`${definition.commandType} ${fieldKey(['command', ...path])}`, definition, path] as const,
  ),
);
const IMPORTER_FIELDS = [...IMPORTERS.values()].flatMap((importer) =>
  scalarPaths(importer.schema(10)).map(
    (path) => [`${importer.importerType} ${fieldKey(['importData', ...path])}`, importer, path] as const,
  ),
);

/** All the messages of an answer: the problem's `errors`, or the command's errorMessage. */
function messagesOf(body: unknown): string {
  const { errors, errorMessage } = body as { errors?: Record<string, string[]>; errorMessage?: string };
  return errors ? Object.values(errors).flat().join(' ') : String(errorMessage ?? '');
}

/** The sample with the value at `path` written as a string, and the field's key in errors. */
function quoted(sample: unknown, path: FieldPath, prefix: string[] = []) {
  return {
    body: withValueAt(sample, path, String(valueAt(sample, path))),
    key: fieldKey([...prefix, ...path]),
  };
}

// Every case is an HTTP request and a check of Redis (PROPERTY_TIMEOUT_MS).
jest.setTimeout(PROPERTY_TIMEOUT_MS);

describe('Numbers and booleans in quotes', () => {
  let subject: HostileSubject;

  beforeAll(async () => {
    subject = await createHostileSubject();
  });
  afterAll(() => subject.close());

  it('When the registries are read, then number and boolean fields are found for queries, commands and importers', () => {
    expect(QUERY_FIELDS.length).toBeGreaterThan(0);
    expect(COMMAND_FIELDS.length).toBeGreaterThan(0);
    expect(IMPORTER_FIELDS.length).toBeGreaterThan(0);
  });

  it.each(QUERY_FIELDS)(
    'When the query field %s is sent in quotes, then it is refused by name',
    async (_, query, path) => {
      const authorization = query.schemes.includes('Basic') ? subject.admin.basic : subject.admin.bearer;
      await fc.assert(
        fc.asyncProperty(validSamplesWith(query.schema, path), async (sample) => {
          const { body, key } = quoted(sample, path);
          const res = await subject.post('/api/readmodel', JSON.stringify(body), authorization);
          expectReadModelAnswer(res);
          expect(res.status).toBe(400);
          expect(messagesOf(res.body)).toContain(`${key} `);
        }),
        propertyParameters(10),
      );
    },
  );

  it.each(COMMAND_FIELDS)(
    'When the command field %s is sent in quotes, then it is refused by name',
    async (_, definition, path) => {
      await fc.assert(
        fc.asyncProperty(validSamplesWith(definition.schema, path), async (sample) => {
          const { body, key } = quoted(sample, path, ['command']);
          const envelope = { commandType: definition.commandType, command: body };
          const res = await subject.post('/api/command', JSON.stringify(envelope), subject.member.bearer);
          expectCommandAnswer(res);
          expect(res.status).toBe(400);
          expect(messagesOf(res.body)).toContain(`${key} `);
        }),
        propertyParameters(10),
      );
    },
  );

  it.each(IMPORTER_FIELDS)(
    'When the importData field %s is sent in quotes, then it is refused by name',
    async (_, importer, path) => {
      const schema = importDataSchema(importer, subject.config.imports.maxRows);
      await fc.assert(
        fc.asyncProperty(validSamplesWith(schema, path), async (sample) => {
          const { body, key } = quoted(sample, path, ['importData']);
          const request = {
            requestId: randomUUID(),
            importerType: importer.importerType,
            importData: body,
            dryRun: true,
          };
          const res = await subject.post('/api/import', JSON.stringify(request), subject.admin.basic);
          expectImportAnswer(res);
          expect(res.status).toBe(400);
          expect(messagesOf(res.body)).toContain(`${key} `);
        }),
        propertyParameters(10),
      );
    },
  );

  it.each([
    ['dryRun', { dryRun: 'true' }, 'DryRun must be true or false'],
    ['priority', { priority: 1 }, 'Priority must be a string'],
  ])(
    'When the import envelope field %s has the wrong JSON type, then it is refused by name',
    async (_, field, message) => {
      const request = {
        requestId: randomUUID(),
        importerType: 'UserSeeding',
        importData: { users: [] },
        ...field,
      };
      const res = await subject.post('/api/import', JSON.stringify(request), subject.admin.basic);
      expect(res.status).toBe(400);
      expect(messagesOf(res.body)).toContain(message);
    },
  );

  it('When the command envelope field expectedVersion is sent in quotes, then it is refused by name', async () => {
    const envelope = {
      commandType: 'UnlinkFantasyTeam',
      command: { aggregateRootId: subject.teamId },
      expectedVersion: '1',
    };
    const res = await subject.post('/api/command', JSON.stringify(envelope), subject.member.bearer);
    expect(res.status).toBe(400);
    expect(messagesOf(res.body)).toContain('ExpectedVersion must be a number');
  });

  it('When a PlayerSeeding breakdown holds numbers in quotes, then they are refused by name', async () => {
    const player = {
      feedId: 1,
      fantasyId: 1,
      platformId: randomUUID(),
      stats: { rating: 1.5, price: 100, breakdown: { 3: { projectedPoints: '4.5', priceDelta: '-1' } } },
    };
    const request = {
      requestId: randomUUID(),
      importerType: 'PlayerSeeding',
      importData: { players: [player] },
      dryRun: true,
    };
    const res = await subject.post('/api/import', JSON.stringify(request), subject.admin.basic);
    expect(res.status).toBe(400);
    expect(Object.keys((res.body as { errors: object }).errors).sort()).toEqual([
      'Players[0].Stats.Breakdown.3.PriceDelta',
      'Players[0].Stats.Breakdown.3.ProjectedPoints',
    ]);
  });
});
