import fc from 'fast-check';

import { allQueries, type QueryDependencies } from '../../ingress/readmodel/queries';
import type { RegisteredQuery } from '../../ingress/readmodel/query-definition';
import { validate } from '../../shared/validation';
import {
  createHostileSubject,
  expectPrototypesIntact,
  type HostileSubject,
} from '../helpers/hostile-fixture';
import {
  applyMutations,
  type HostileObject,
  mutations,
  PROPERTY_TIMEOUT_MS,
  propertyParameters,
  randomBodyText,
  toJsonText,
  wrongType,
} from '../helpers/hostile-json';
import { samplesFor } from '../helpers/joi-samples';
import { expectReadModelAnswer } from '../helpers/response-shapes';

/**
 * Every registered query, read from the registry so a new one is covered without a line here.
 * Only names, schemes and schemas are used from these instances: their handlers are never called,
 * so they need no connection (the app under test builds its own).
 */
const QUERIES: readonly RegisteredQuery[] = allQueries({} as QueryDependencies);

// Every case is an HTTP request and a check of Redis (PROPERTY_TIMEOUT_MS).
jest.setTimeout(PROPERTY_TIMEOUT_MS);

describe('POST /api/readmodel under hostile input', () => {
  let subject: HostileSubject;

  beforeAll(async () => {
    subject = await createHostileSubject();
  });
  afterAll(() => subject.close());

  /** The caller that passes the query's scheme and roles, so its own fields are what is tested. */
  const authorizationFor = (query: RegisteredQuery) =>
    query.schemes.includes('Basic') ? subject.admin.basic : subject.admin.bearer;

  /** A query answers from projections and never writes: Redis must be exactly as it was. */
  async function expectAnsweredWithoutChange(text: string, authorization: string) {
    const before = await subject.state();
    const res = await subject.post('/api/readmodel', text, authorization);
    expectReadModelAnswer(res);
    expect(await subject.state()).toEqual(before);
    expectPrototypesIntact();
    return res;
  }

  it.each(QUERIES.map((query) => [query.queryType, query] as const))(
    'When a valid %s body is drawn from its schema, then the schema accepts most of them (the properties below start from valid bodies)',
    (_, query) => {
      const samples = fc.sample(samplesFor(query.schema), 50);
      const accepted = samples.filter((sample) => {
        try {
          validate(query.schema, sample);
          return true;
        } catch {
          return false;
        }
      });
      expect(accepted.length).toBeGreaterThanOrEqual(40);
    },
  );

  it.each(QUERIES.map((query) => [query.queryType, query] as const))(
    'When the fields of a %s query are mutated (wrong types, huge strings, deep nesting, odd numbers and GUIDs, prototype keys), then it answers a documented shape, never a 5xx, and changes nothing',
    async (_, query) => {
      await fc.assert(
        fc.asyncProperty(samplesFor(query.schema), mutations, async (valid, edits) => {
          await expectAnsweredWithoutChange(
            toJsonText(applyMutations(valid, edits)),
            authorizationFor(query),
          );
        }),
        propertyParameters(30),
      );
    },
  );

  it('When the body is any JSON at all, or not JSON, then the answer is a documented shape, never a 5xx, and nothing changes', async () => {
    await fc.assert(
      fc.asyncProperty(randomBodyText, async (text) => {
        await expectAnsweredWithoutChange(text, subject.admin.basic);
      }),
      propertyParameters(100),
    );
  });

  it.each(QUERIES.map((query) => [query.queryType, query] as const))(
    'When a valid %s body also holds a __proto__ member anywhere, then it is ignored: the status is that of the body without it',
    async (_, query) => {
      await fc.assert(
        fc.asyncProperty(
          samplesFor(query.schema),
          wrongType,
          fc.boolean(),
          async (valid, payload, inQuery) => {
            const body = applyMutations(valid, []) as HostileObject;
            const plain = toJsonText(body);
            // Hostile objects have no prototype, so this makes an own member, as JSON.parse would.
            const target = inQuery ? (body.query as HostileObject) : body;
            target['__proto__'] = payload;
            const withProto = toJsonText(body);
            expect(withProto).toContain('"__proto__"');
            const authorization = authorizationFor(query);
            const [expected, actual] = [
              await expectAnsweredWithoutChange(plain, authorization),
              await expectAnsweredWithoutChange(withProto, authorization),
            ];
            expect(actual.status).toBe(expected.status);
          },
        ),
        propertyParameters(15),
      );
    },
  );
});
