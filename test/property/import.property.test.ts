import { randomUUID } from 'node:crypto';

import fc from 'fast-check';

import { importBodyBounds } from '../../ingress/import/import-body-bounds';
import { BODY_MESSAGES } from '../../shared/http/request-body';
import { IMPORT_PRIORITIES, importDataSchema, type Importer } from '../../shared/importers/importer';
import { IMPORTERS } from '../../shared/importers/registry';
import { validate } from '../../shared/validation';
import {
  createHostileSubject,
  expectPrototypesIntact,
  type HostileSubject,
} from '../helpers/hostile-fixture';
import {
  applyMutations,
  hostileEmail,
  mutations,
  PROPERTY_TIMEOUT_MS,
  propertyParameters,
  randomBodyText,
  toJsonText,
} from '../helpers/hostile-json';
import { samplesFor } from '../helpers/joi-samples';
import { expectExercised, leastExpected } from '../helpers/property-seed';
import { expectImportAnswer } from '../helpers/response-shapes';

/** Every registered importer, from the registry, so a new one is covered without a line here. */
const IMPORTER_CASES = [...IMPORTERS.values()].map((importer) => [importer.importerType, importer] as const);

/**
 * How many bodies drawn from an importer's schema the schema accepts: 88.7% of UserSeeding's (4,000
 * draws; an e-mail or a name the generator draws may still break a rule of the schema) and all of
 * PlayerSeeding's, rounded down. It was "40 of 50", a lucky number: 3% of runs drew 39.
 */
const VALID_SAMPLES = 500;
const VALID_ACCEPTED_SHARE = 0.85;

/** The one key any import request changes: the bytes its account sent this minute. */
const IMPORT_BYTE_BUDGET = [/:rate:import-bytes:/];

/** A dry run checks everything and changes nothing, so its 200 must change nothing too. */
function isDryRun(text: string): boolean {
  try {
    return (JSON.parse(text) as { dryRun?: unknown } | null)?.dryRun === true;
  } catch {
    return false;
  }
}

// Every case is an HTTP request and a check of Redis (PROPERTY_TIMEOUT_MS).
jest.setTimeout(PROPERTY_TIMEOUT_MS);

describe('POST /api/import under hostile input', () => {
  let subject: HostileSubject;
  let maxRows: number;

  beforeAll(async () => {
    subject = await createHostileSubject();
    maxRows = subject.config.imports.maxRows;
  });
  afterAll(() => subject.close());

  /**
   * Submits an import; a refusal, or a dry run, must leave Redis exactly as it was, but for the
   * account's import byte budget, which is charged before the body is read (ADR 0023).
   */
  async function submit(text: string) {
    const before = await subject.state(IMPORT_BYTE_BUDGET);
    const res = await subject.post('/api/import', text, subject.admin.basic);
    expectImportAnswer(res);
    if (res.status !== 200 || isDryRun(text)) expect(await subject.state(IMPORT_BYTE_BUDGET)).toEqual(before);
    expectPrototypesIntact();
    return res;
  }

  /** The spec's 2.7 request around importData drawn from the importer's own schema. */
  const requests = (importer: Importer) =>
    fc.record(
      {
        requestId: fc.uuid(),
        importerType: fc.constant(importer.importerType),
        importData: samplesFor(importDataSchema(importer, maxRows)),
        priority: fc.constantFrom(...IMPORT_PRIORITIES),
        dryRun: fc.boolean(),
      },
      { requiredKeys: ['requestId', 'importerType', 'importData'] },
    );

  it.each(IMPORTER_CASES)(
    'When valid %s importData is drawn from its schema, then the schema accepts most of it (the properties below start from valid bodies)',
    (_, importer) => {
      const schema = importDataSchema(importer, subject.config.imports.maxRows);
      const samples = fc.sample(samplesFor(schema), VALID_SAMPLES);
      const accepted = samples.filter((sample) => {
        try {
          validate(schema, sample);
          return true;
        } catch {
          return false;
        }
      });
      expectExercised(
        `${importer.importerType} bodies drawn from its schema that it accepts`,
        accepted.length,
        leastExpected(VALID_SAMPLES, VALID_ACCEPTED_SHARE),
      );
    },
  );

  it.each(IMPORTER_CASES)(
    'When the envelope or the importData of a %s import is mutated, then it answers the spec 2.7 shape or a problem, never a 5xx, and a refusal or a dry run changes nothing',
    async (_, importer) => {
      await fc.assert(
        fc.asyncProperty(requests(importer), mutations, async (valid, edits) => {
          await submit(toJsonText(applyMutations(valid, edits)));
        }),
        propertyParameters(30),
      );
    },
  );

  it('When the body is any JSON at all, or not JSON, then the answer is a documented shape, never a 5xx, and a refusal changes nothing', async () => {
    await fc.assert(
      fc.asyncProperty(randomBodyText, async (text) => {
        await submit(text);
      }),
      propertyParameters(100),
    );
  });

  it('When UserSeeding importData holds 200,000 rows (more objects than the largest valid import), then the 400 says so before the body is parsed', async () => {
    const rows = new Array<string>(200_000).fill('{"email":"x"}').join(',');
    const res = await submit(
      `{"requestId":"${randomUUID()}","importerType":"UserSeeding","importData":{"users":[${rows}]}}`,
    );
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({
      errors: {
        $: [BODY_MESSAGES.tooManyContainers(importBodyBounds(subject.config.imports.maxRows).maxContainers)],
      },
    });
  });

  it('When UserSeeding importData holds 200,000 unknown members (more different keys than any import), then the 400 says so before the body is parsed', async () => {
    const members = Array.from({ length: 200_000 }, (_, i) => `"m${i}":1`).join(',');
    const res = await submit(
      `{"requestId":"${randomUUID()}","importerType":"UserSeeding","importData":{"users":[],${members}}}`,
    );
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({
      errors: {
        $: [
          BODY_MESSAGES.tooManyDistinctKeys(importBodyBounds(subject.config.imports.maxRows).maxDistinctKeys),
        ],
      },
    });
  });

  it.each([
    // Past IMPORT_MAX_ROWS (10,000) yet within the body's bounds (ADR 0033): the schema names it.
    ['20,000 rows', `{"users":[${new Array<string>(20_000).fill('{"email":"x"}').join(',')}]}`, 'Users'],
    [
      'an unknown member of 30,000 values',
      `{"users":[],"m0":[${new Array<string>(30_000).fill('0').join(',')}]}`,
      'M0',
    ],
  ])(
    'When UserSeeding importData holds %s (megabytes of bad values), then the 400 names the first error, never a 500',
    async (_, importData, key) => {
      const started = Date.now();
      const res = await submit(
        `{"requestId":"${randomUUID()}","importerType":"UserSeeding","importData":${importData}}`,
      );
      expect(res.status).toBe(400);
      expect(Object.keys((res.body as { errors: object }).errors)).toEqual([key, '$']);
      expect(Date.now() - started).toBeLessThan(10_000);
    },
  );

  describe('E-mails of UserSeeding (spec 4.6)', () => {
    const seed = (email: string) =>
      JSON.stringify({
        requestId: randomUUID(),
        importerType: 'UserSeeding',
        importData: { users: [{ email, userType: 'Human', roles: ['Member'] }] },
        dryRun: true,
      });

    it("When a user's e-mail is unicode, overlong, malformed or padded, then the import answers a dry run or refuses that e-mail alone", async () => {
      await fc.assert(
        fc.asyncProperty(hostileEmail, async (email) => {
          const res = await submit(seed(email));
          if (res.status === 200) return;
          expect(res.status).toBe(400);
          expect(Object.keys((res.body as { errors: object }).errors)).toEqual(['Users[0].Email']);
        }),
        propertyParameters(40),
      );
    });

    it.each([
      ['a local part of 65 octets', `${'a'.repeat(65)}@example.com`],
      ['a local part of 40 two-octet characters (80 octets)', `${'ü'.repeat(40)}@example.com`],
      ['a domain label of 64 characters', `ada@${'d'.repeat(64)}.example`],
      [
        '260 characters in all',
        `${'a'.repeat(64)}@${'d'.repeat(63)}.${'e'.repeat(63)}.${'f'.repeat(63)}.com`,
      ],
      ['a NUL', 'ada\u0000@example.com'],
      ['a header injection', 'ada@example.com\r\nBcc: eve@example.com'],
      ['no domain', 'ada@'],
    ])("When a user's e-mail has %s, then it is refused", async (_, email) => {
      const res = await submit(seed(email));
      expect(res.status).toBe(400);
      expect((res.body as { errors: Record<string, string[]> }).errors['Users[0].Email']).toContain(
        'Users[0].Email must be a valid email',
      );
    });

    it.each([
      ['a unicode local part and domain', 'jürgen@bücher.example'],
      ['a local part of 64 octets', `${'a'.repeat(64)}@example.com`],
      ['blanks around it (trimmed)', ' ada@example.com '],
    ])("When a user's e-mail has %s, then it is accepted", async (_, email) => {
      const res = await submit(seed(email));
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ status: 'Completed', dryRun: { wouldCreate: 1 } });
    });
  });

  it('When importerType is any string no importer has, then the answer is 400 UNKNOWN_IMPORTER_TYPE with the all-zero job id, and nothing is queued', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.uuid(),
        // Non-empty and at most 100 UTF-16 units: the envelope refuses others before the lookup.
        fc
          .string({ unit: 'binary', minLength: 1, maxLength: 50 })
          .filter((name) => name.length <= 100 && !IMPORTERS.has(name)),
        async (requestId, importerType) => {
          const res = await submit(JSON.stringify({ requestId, importerType, importData: {} }));
          expect(res.status).toBe(400);
          expect(res.body).toMatchObject({ errorCode: 'UNKNOWN_IMPORTER_TYPE', importerType });
        },
      ),
      propertyParameters(30),
    );
  });
});
