import { randomUUID } from 'node:crypto';

import Joi from 'joi';

import { AppError } from '../../shared/errors';
import { FANTASY_TEAM_COMMAND_DEFINITIONS } from '../../shared/fantasy-team/fantasy-team.commands';
import { importDataSchema, type Importer } from '../../shared/importers/importer';
import { IMPORTERS } from '../../shared/importers/registry';
import { normalizeEmail } from '../../shared/user/user-id';
import { characterCount, MAX_VALUES_WITH_EVERY_ERROR_LISTED, text, validate } from '../../shared/validation';
import { userIdForEmail } from '../helpers/user-ids';

/** The `errors` map of the 400 problem validate() throws for `value`. */
function fieldErrorsOf(schema: Joi.Schema, value: unknown): Record<string, string[]> {
  try {
    validate(schema, value);
  } catch (error) {
    if (error instanceof AppError && error.code === 'VALIDATION_ERROR') {
      return error.details.errors as Record<string, string[]>;
    }
    throw error;
  }
  throw new Error('expected a validation error');
}

describe('validate', () => {
  const schema = Joi.object({ query: Joi.object({ id: Joi.string().required() }).required() });

  it('When a required field is missing, then the error is keyed and worded as the spec does (Id is required)', () => {
    expect(fieldErrorsOf(schema, { query: {} })).toEqual({ Id: ['Id is required'] });
  });

  it.each(['__defineGetter__', '__lookupSetter__', 'hasOwnProperty', 'constructor', 'toString'])(
    'When an unknown property is named like an Object.prototype member (%s), then it is reported like any other',
    (name) => {
      const errors = fieldErrorsOf(schema, { query: { id: 'x', [name]: 1 } });
      const key = name.charAt(0).toUpperCase() + name.slice(1);
      expect(Object.keys(errors)).toEqual([key]);
      expect(errors[key]).toEqual([`${key} is not allowed`]);
    },
  );

  it.each([
    ['a b', 'A b'],
    ["x$'y", "X$'y"],
    ['$&', '$&'],
    ['"quoted"', '"quoted"'],
  ])(
    'When an unknown property name holds blanks, quotes or $ patterns (%s), then its message names it exactly',
    (name, key) => {
      expect(fieldErrorsOf(schema, { query: { id: 'x', [name]: 1 } })).toEqual({
        [key]: [`${key} is not allowed`],
      });
    },
  );
});

describe('text(): strings as the document counts them', () => {
  const schema = Joi.object({
    name: text({ min: 1, max: 100, notBlank: true }).trim().required(),
    password: text({ min: 8, max: 1024 }),
  });

  it('When a trimmed field is sent longer than its maximum only by blanks, then it is refused as too long, as the document bounds the string sent', () => {
    const optional = Joi.object({ short: text({ max: 5 }).trim().allow('') });
    expect(fieldErrorsOf(optional, { short: ' '.repeat(6) })).toEqual({
      Short: ['Short length must be less than or equal to 5 characters long'],
    });
    expect(fieldErrorsOf(optional, { short: '  ab  ' })).toEqual({
      Short: ['Short length must be less than or equal to 5 characters long'],
    });
    expect(validate(optional, { short: ' ab  ' })).toEqual({ short: 'ab' });
  });

  it('When a name is 51 emoji (102 UTF-16 units) under a 100-character limit, then it is accepted, and 101 emoji are refused', () => {
    expect(characterCount('😀'.repeat(51))).toBe(51);
    expect(validate(schema, { name: '😀'.repeat(51) })).toEqual({ name: '😀'.repeat(51) });
    expect(fieldErrorsOf(schema, { name: '😀'.repeat(101) })).toEqual({
      Name: ['Name length must be less than or equal to 100 characters long'],
    });
  });

  it('When a password is 6 astral characters (12 UTF-16 units) under an 8-character minimum, then it is refused', () => {
    expect(fieldErrorsOf(schema, { name: 'n', password: '𝒜'.repeat(6) })).toEqual({
      Password: ['Password length must be at least 8 characters long'],
    });
    expect(validate(schema, { name: 'n', password: '𝒜'.repeat(8) })).toMatchObject({
      password: '𝒜'.repeat(8),
    });
  });

  it.each(['\ud800', 'a\udc00@x.test', 'ok\udbff'])(
    'When a string holds a lone surrogate (%j), then it is refused as ill-formed text, naming the field',
    (value) => {
      expect(fieldErrorsOf(schema, { name: value })).toEqual({
        Name: ['Name must be well-formed Unicode text (it holds a lone UTF-16 surrogate)'],
      });
    },
  );

  it('When a trimmed name is only blanks, then it is refused as empty (the document says pattern \\S)', () => {
    expect(fieldErrorsOf(schema, { name: '   ' })).toEqual({ Name: ['Name must not be empty'] });
  });
});

describe('Ids derived from e-mails', () => {
  it('When an e-mail holds a lone surrogate, then deriving its id throws the 400 validation error, never a URIError', () => {
    for (const derive of [userIdForEmail, normalizeEmail]) {
      let thrown: unknown;
      try {
        derive('a\udc00@x.test');
      } catch (error) {
        thrown = error;
      }
      expect(thrown).toBeInstanceOf(AppError);
      expect((thrown as AppError).status).toBe(400);
    }
    expect(userIdForEmail(' A@x.test ')).toBe(userIdForEmail('a@x.test'));
  });
});

describe('Arrays over their limit', () => {
  /** The 400's field errors, and how long validate() took to say so. */
  function refusal(schema: Joi.Schema, value: unknown) {
    const started = Date.now();
    const errors = fieldErrorsOf(schema, value);
    return { errors, ms: Date.now() - started };
  }
  const many = <T>(count: number, item: T) => Array.from({ length: count }, () => item);

  it('When a roster holds 300,000 entries (a 1 MB command of `{}`), then only its length is reported', () => {
    const roster = FANTASY_TEAM_COMMAND_DEFINITIONS.find(
      (definition) => definition.commandType === 'SetFantasyTeamRoster',
    );
    const { errors, ms } = refusal(roster?.schema ?? Joi.any(), {
      aggregateRootId: randomUUID(),
      players: many(300_000, {}),
    });
    expect(errors).toMatchObject({ Players: ['Players must contain less than or equal to 300 items'] });
    expect(ms).toBeLessThan(2_000);
  });

  it('When a user to seed has a million roles, then only the length of the list is reported', () => {
    const schema = importDataSchema(IMPORTERS.get('UserSeeding') as Importer, 10);
    const user = { email: 'ada@example.com', userType: 'Human', roles: many(1_000_000, 'x') };
    const { errors } = refusal(schema, { users: [user] });
    expect(errors).toMatchObject({
      'Users[0].Roles': ['Users[0].Roles must contain less than or equal to 16 items'],
    });
  });

  it.each(['UserSeeding', 'PlayerSeeding'])(
    'When a %s batch holds 200,000 malformed rows, then only the row limit is reported',
    (importerType) => {
      const schema = importDataSchema(IMPORTERS.get(importerType) as Importer, 10);
      const rowsKey = importerType === 'UserSeeding' ? 'users' : 'players';
      const { errors } = refusal(schema, { [rowsKey]: many(200_000, { email: 'x' }) });
      const key = rowsKey === 'users' ? 'Users' : 'Players';
      expect(errors).toMatchObject({ [key]: [`${key} holds at most 10 rows per import`] });
    },
  );

  it('When an array is within its limit, then its items are still checked one by one', () => {
    const schema = importDataSchema(IMPORTERS.get('UserSeeding') as Importer, 10);
    const errors = fieldErrorsOf(schema, { users: [{ email: 'x', userType: 'Human', roles: ['Member'] }] });
    expect(errors).toEqual({ 'Users[0].Email': ['Users[0].Email must be a valid email'] });
  });
});

describe('Bodies with more values than are listed in full', () => {
  const userSeeding = () => importDataSchema(IMPORTERS.get('UserSeeding') as Importer, 10_000);

  it('When an importData holds 200,000 unknown members, then the 400 names the first and says why it is alone', () => {
    const importData: Record<string, unknown> = { users: [] };
    for (let i = 0; i < 200_000; i += 1) importData[`m${i}`] = 1;
    const errors = fieldErrorsOf(userSeeding(), importData);
    expect(errors).toEqual({
      M0: ['M0 is not allowed'],
      $: [
        `The body holds more than ${MAX_VALUES_WITH_EVERY_ERROR_LISTED} values: only its first error is listed.`,
      ],
    });
  });

  it('When 10,000 rows (the row limit) each have a dozen wrong fields, then the 400 names the first error only', () => {
    const row = Object.fromEntries(Array.from({ length: 12 }, (_, i) => [`extra${i}`, i]));
    const errors = fieldErrorsOf(userSeeding(), {
      users: Array.from({ length: 10_000 }, () => ({ ...row })),
    });
    expect(Object.keys(errors)).toHaveLength(2);
    expect(errors.$).toHaveLength(1);
  });

  it('When a body is within the limit, then every error is listed', () => {
    const rows = Array.from({ length: 100 }, () => ({ email: 'x', userType: 'Human', roles: ['Member'] }));
    const errors = fieldErrorsOf(userSeeding(), { users: rows });
    expect(Object.keys(errors)).toHaveLength(100);
    expect(errors).not.toHaveProperty('$');
  });

  it('When a valid body is over the limit, then it passes as it would below it', () => {
    const rows = Array.from({ length: 5_000 }, (_, i) => ({
      email: `user${i}@example.com`,
      userType: 'Human',
      roles: ['Member'],
      firstName: 'Ada',
    }));
    const valid = validate(userSeeding(), { users: rows }) as { users: unknown[] };
    expect(valid.users).toHaveLength(5_000);
  });

  it('When nesting is 100,000 levels deep, then counting its values does not overflow the stack', () => {
    let deep: unknown = 1;
    for (let i = 0; i < 100_000; i += 1) deep = { a: deep };
    expect(fieldErrorsOf(userSeeding(), { users: [], deep })).toMatchObject({
      Deep: ['Deep is not allowed'],
    });
  });
});

describe('A member of the request body sent inside its container', () => {
  const schema = Joi.object({
    query: Joi.object({
      queryType: Joi.string().valid('ListThings').required(),
      name: Joi.string(),
    }).required(),
    skip: Joi.number().integer(),
    take: Joi.number().integer(),
  });
  const errorsOf = (body: unknown): unknown => {
    try {
      validate(schema, body);
    } catch (error) {
      return (error as AppError).details.errors;
    }
    return undefined;
  };

  it('When take is sent inside query, then the 400 says it goes beside query, and an unknown member is simply not allowed', () => {
    expect(errorsOf({ query: { queryType: 'ListThings', take: 10, colour: 'red' } })).toEqual({
      Take: ['Take is not allowed in query: send it beside query, as a member of the request body'],
      Colour: ['Colour is not allowed'],
    });
    expect(errorsOf({ query: { queryType: 'ListThings' }, take: 10 })).toBeUndefined();
  });
});
