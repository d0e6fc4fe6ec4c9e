import fc from 'fast-check';
import Joi from 'joi';

import { allQueries, type QueryDependencies } from '../../ingress/readmodel/queries';
import { FANTASY_TEAM_COMMAND_DEFINITIONS } from '../../shared/fantasy-team/fantasy-team.commands';
import { guid, plainCheckFor, text } from '../../shared/validation';
import { plainCheckHeldToJoi } from '../helpers/joi-samples';
import { expectExercised, leastExpected } from '../helpers/property-seed';

/**
 * The plain check that spares joi the service's most frequent bodies only ever accepts what joi
 * accepts, and returns what joi returns: every value it does not pass goes to joi, which words the
 * errors. Held here to joi itself on bodies near each schema it covers.
 */

/** The team commands whose schemas the plain check covers (SetFantasyTeamRoster's bounded array is `.when`). */
const PLAIN_TEAM_COMMANDS: readonly string[] = [
  'CreateFantasyTeam',
  'LinkFantasyTeam',
  'UnlinkFantasyTeam',
  'ArchiveFantasyTeam',
];

/** The schemas only need no collaborator: the queries are built with none. */
const QUERIES = allQueries({} as QueryDependencies);

const numbers = fc.oneof(
  fc.integer({ min: -5, max: 1005 }),
  fc.constantFrom(-0, 0.5, 1e21, 2 ** 53, 2 ** 53 - 1, -(2 ** 53), Number.MAX_VALUE, 1000, 1001),
  fc.double({ noNaN: true }),
);
/** Strings near the text() and guid() rules: GUIDs in either case, blanks, astral and lone surrogates. */
const texts = fc.oneof(
  fc.string({ maxLength: 4 }),
  fc.uuid(),
  fc.uuid().map((id) => id.toUpperCase()),
  fc.uuid().map((id) => ` ${id}`),
  { weight: 4, arbitrary: edgeTexts() },
);
/** The strings each text() rule turns on. */
function edgeTexts() {
  return fc.constantFrom(
    '',
    ' ',
    ' x ',
    '\ud800',
    'a\udc00b',
    '😀',
    '😀'.repeat(10),
    'İ',
    'x'.repeat(11),
    `${' '.repeat(10)}x`,
    'x',
    '2026',
  );
}
const scalars = fc.oneof(numbers, texts, fc.boolean(), fc.constant(null), fc.constantFrom('10', '0'));
/**
 * The share of drawn bodies each property's plain check accepts, measured over many seeds (1.5-1.75%
 * of the envelope bodies, 23-25% of the text() and guid() ones), rounded down: the bounds below are
 * six standard deviations under what these shares make of 20,000 draws.
 */
const ENVELOPE_ACCEPTED_SHARE = 0.015;
const TEXT_ACCEPTED_SHARE = 0.22;
const RUNS = 20_000;

const queryTypes = fc.constantFrom(
  ...QUERIES.map((query) => query.queryType),
  'currentuser',
  ' CurrentUser',
  '',
);
const memberNames = fc.constantFrom('queryType', 'skip', 'take', 'id', 'extra', '__proto__', 'constructor');

/**
 * A body near a query's, as JSON.parse gives it (the body reader's): its envelope, the query's
 * type, members right and wrong, extra members; a few texts for what a JSON round trip loses (-0)
 * or what only JSON.parse makes (`__proto__` as an own member).
 */
const bodies = fc.oneof(
  fc
    .record(
      {
        query: fc.oneof(
          { weight: 3, arbitrary: fc.record({ queryType: queryTypes }) },
          fc.record({ queryType: fc.oneof(queryTypes, scalars) }, { requiredKeys: [] }),
          fc
            .tuple(queryTypes, fc.dictionary(memberNames, scalars, { maxKeys: 2 }))
            .map(([queryType, rest]) => ({
              queryType,
              ...rest,
            })),
          scalars,
          fc.array(scalars, { maxLength: 2 }),
        ),
        skip: numbers,
        take: numbers,
        other: scalars,
      },
      { requiredKeys: ['query'] },
    )
    .map((body) => JSON.parse(JSON.stringify(body)) as unknown),
  fc
    .constantFrom(
      'null',
      '[]',
      '"x"',
      '1',
      '{"query":{"queryType":"CurrentUser"},"skip":-0,"take":-0}',
      '{"query":{"queryType":"CurrentUser"},"skip":-0}',
      '{"__proto__":{},"query":{"queryType":"CurrentUser"}}',
      '{"query":{"queryType":"CurrentUser","__proto__":1}}',
      '{"query":{"queryType":"CurrentUser"},"skip":1e3,"take":1.0}',
    )
    .map((json) => JSON.parse(json) as unknown),
);

describe('the plain check in front of joi', () => {
  it('When CurrentUser’s body is checked, then the plain check covers it', () => {
    const currentUser = QUERIES.find((query) => query.queryType === 'CurrentUser');

    expect(currentUser && plainCheckFor(currentUser.schema)).toEqual(expect.any(Function));
  });

  it('When a body passes the plain check, then joi accepts it too and cleans it to the same value', () => {
    let accepted = 0;
    const covered = QUERIES.map((query) => query.schema).filter((schema) => plainCheckFor(schema) !== null);
    expect(covered.length).toBeGreaterThan(0);

    fc.assert(
      fc.property(fc.constantFrom(...covered), bodies, (schema, body) => {
        if (plainCheckHeldToJoi(schema, body)) accepted += 1;
      }),
      { numRuns: RUNS },
    );
    // Not vacuous: a good share of the bodies were the plain check's to accept.
    expectExercised(
      'bodies the plain check accepted',
      accepted,
      leastExpected(RUNS, ENVELOPE_ACCEPTED_SHARE),
    );
  });

  it('When a body passes the plain check of a text() or guid() schema, then joi accepts it too and cleans it to the same value', () => {
    const schemas = [
      Joi.object({ id: guid().required() }),
      Joi.object({ id: guid().allow(null).description('documented') }),
      Joi.object({ name: text({ max: 10 }) }),
      Joi.object({ name: text({ min: 2, max: 10, notBlank: true }).trim().required() }),
      Joi.object({ name: text({ max: 10 }).allow(null, '').default(null) }),
      Joi.object({ name: text({ max: 10 }).trim().allow('') }),
      Joi.object({ name: text().uppercase().default('X') }),
      Joi.object({ name: text().uppercase().allow('x', null) }),
      Joi.object({
        season: text()
          .pattern(/^\d{4}$/, { name: 'a 4-digit year' })
          .default('2026'),
      }),
      Joi.object({ any: Joi.object().required(), text: Joi.string() }),
    ];
    const values = fc.oneof(texts, fc.constant(null), fc.constant(undefined), numbers, fc.constant({}));
    const members = fc.constantFrom('id', 'name', 'season', 'any', 'text', 'other');
    let accepted = 0;
    fc.assert(
      fc.property(
        fc.constantFrom(...schemas),
        fc.dictionary(members, values, { maxKeys: 3 }),
        (schema, generated) => {
          const body = JSON.parse(JSON.stringify(generated)) as unknown;
          expect(plainCheckFor(schema)).toEqual(expect.any(Function));
          if (plainCheckHeldToJoi(schema, body)) accepted += 1;
        },
      ),
      { numRuns: RUNS },
    );
    expectExercised('bodies the plain check accepted', accepted, leastExpected(RUNS, TEXT_ACCEPTED_SHARE));
  });

  it('When a schema uses anything beyond known keys, exact values, text() and guid() strings and strict bounded integers, then it is left to joi whole', () => {
    const beyond = [
      Joi.object({ n: Joi.number().integer() }), // converts "1" to 1: not strict
      Joi.object({ a: Joi.number().strict() }).unknown(true),
      Joi.object({ a: Joi.string().valid('x').insensitive() }),
      Joi.object({
        a: Joi.number()
          .strict()
          .default(() => 1),
      }),
      Joi.object({ a: Joi.number().strict(), b: Joi.number().strict() }).xor('a', 'b'),
      Joi.object({
        a: Joi.number()
          .strict()
          .custom((value: number) => value),
      }),
      Joi.object({ a: Joi.string().min(2) }), // counts UTF-16 units, not characters
      Joi.object({ a: Joi.string().email() }),
      Joi.object({ a: Joi.string().normalize() }),
      Joi.object({ a: Joi.string().replace(/x/, 'y') }),
      Joi.object({ a: Joi.string().truncate() }),
      Joi.object({ a: Joi.string().empty('') }),
      Joi.object({ a: Joi.string().insensitive().allow('x') }),
      Joi.object({ a: Joi.string().pattern(/x/, { invert: true }) }),
      Joi.object({ a: Joi.string().allow(1) }),
      Joi.object({ a: Joi.string().prefs({ convert: false }).lowercase() }),
      ...FANTASY_TEAM_COMMAND_DEFINITIONS.filter(
        ({ commandType }) => !PLAIN_TEAM_COMMANDS.includes(commandType),
      ).map((definition) => definition.schema),
    ];

    for (const schema of beyond) expect(plainCheckFor(schema as Joi.Schema)).toBeNull();
  });

  it('When a team command is one clients send most, then its schema has a plain check', () => {
    for (const { commandType, schema } of FANTASY_TEAM_COMMAND_DEFINITIONS) {
      if (PLAIN_TEAM_COMMANDS.includes(commandType))
        expect(plainCheckFor(schema)).toEqual(expect.any(Function));
    }
  });
});
