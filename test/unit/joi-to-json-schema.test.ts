import Joi from 'joi';

import { joiToJsonSchema } from '../../ingress/openapi/joi-to-json-schema';
import { boundedArray, guid, long, seasonYear, text } from '../../shared/validation';

/** What joi refuses beyond, unless a number is .unsafe(). */
const SAFE_RANGE = { minimum: -Number.MAX_SAFE_INTEGER, maximum: Number.MAX_SAFE_INTEGER };

describe('joiToJsonSchema', () => {
  it('When a member is required, then it is listed in required and the object is closed', () => {
    expect(joiToJsonSchema(Joi.object({ a: Joi.string().required(), b: Joi.boolean() }))).toEqual({
      type: 'object',
      properties: { a: { type: 'string' }, b: { type: 'boolean' } },
      required: ['a'],
      additionalProperties: false,
    });
  });

  it('When the service helpers are used, then GUIDs, longs and seasons keep their patterns, formats and safe range', () => {
    expect(joiToJsonSchema(guid())).toEqual({
      type: 'string',
      pattern: '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$',
      format: 'uuid',
    });
    expect(joiToJsonSchema(long())).toEqual({
      type: 'integer',
      format: 'int64',
      minimum: -Number.MAX_SAFE_INTEGER,
      maximum: Number.MAX_SAFE_INTEGER,
    });
    expect(joiToJsonSchema(long().min(1))).toMatchObject({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER });
    expect(joiToJsonSchema(seasonYear().default('2026'))).toEqual({
      type: 'string',
      pattern: '^\\d{4}$',
      default: '2026',
    });
  });

  it('When values are listed or null is allowed, then const, enum and a null type say so', () => {
    expect(joiToJsonSchema(Joi.string().valid('Only'))).toEqual({ type: 'string', const: 'Only' });
    expect(joiToJsonSchema(Joi.string().valid('Normal', 'High').default('Normal'))).toEqual({
      type: 'string',
      enum: ['Normal', 'High'],
      default: 'Normal',
    });
    expect(joiToJsonSchema(text({ max: 10 }).allow(null, '').default(null))).toEqual({
      type: ['string', 'null'],
      maxLength: 10,
      default: null,
    });
  });

  it('When a member is required only for some value of a sibling, then the object says so with if/then', () => {
    const schema = Joi.object({
      userType: Joi.string().valid('Human', 'ServiceAccount').required(),
      password: text({ min: 8 }).when('userType', { is: 'ServiceAccount', then: Joi.required() }),
    });
    expect(joiToJsonSchema(schema)).toMatchObject({
      properties: { password: { type: 'string', minLength: 8 } },
      required: ['userType'],
      allOf: [
        {
          if: { properties: { userType: { const: 'ServiceAccount' } }, required: ['userType'] },
          then: { required: ['password'] },
        },
      ],
    });
  });

  it('When a number has no limit of its own, then the schema states the safe range joi enforces (issue 23, found by the contract fuzzer)', () => {
    expect(joiToJsonSchema(Joi.number())).toEqual({ type: 'number', ...SAFE_RANGE });
    expect(joiToJsonSchema(Joi.number().integer().min(0))).toEqual({
      type: 'integer',
      minimum: 0,
      maximum: Number.MAX_SAFE_INTEGER,
    });
    expect(joiToJsonSchema(Joi.number().less(5))).toEqual({
      type: 'number',
      exclusiveMaximum: 5,
      minimum: -Number.MAX_SAFE_INTEGER,
    });
    // What the service answers beyond it: the document may not promise more.
    expect(
      Joi.number()
        .integer()
        .min(0)
        .validate(Number.MAX_SAFE_INTEGER + 1).error,
    ).toBeDefined();
  });

  it('When a limit is another member (round <= finalRound), then it is said in words, not as an invalid keyword', () => {
    const schema = joiToJsonSchema(
      Joi.object({
        finalRound: Joi.number().integer(),
        round: Joi.number().integer().max(Joi.ref('finalRound')),
      }),
    );
    expect(schema.properties?.round).toEqual({
      type: 'integer',
      description: 'At most `finalRound`.',
      ...SAFE_RANGE,
    });
  });

  it('When members are keyed by a pattern, then they become patternProperties and nothing else', () => {
    const schema = joiToJsonSchema(Joi.object().pattern(/^\d+$/, Joi.number()).allow(null));
    expect(schema).toEqual({
      type: ['object', 'null'],
      patternProperties: { '^\\d+$': { type: 'number', ...SAFE_RANGE } },
      additionalProperties: false,
    });
  });

  it('When an array checks its length before its items (boundedArray), then it is an array with maxItems and items', () => {
    const schema = Joi.object({
      rows: boundedArray(Joi.string(), 3, '{{#label}} holds at most 3 rows').required(),
    });
    expect(joiToJsonSchema(schema)).toEqual({
      type: 'object',
      properties: { rows: { type: 'array', maxItems: 3, items: { type: 'string' } } },
      required: ['rows'],
      additionalProperties: false,
    });
    expect(joiToJsonSchema(boundedArray(Joi.number(), 2))).toEqual({
      type: 'array',
      maxItems: 2,
      items: { type: 'number', ...SAFE_RANGE },
    });
  });

  it('When a condition on the value itself tests more than its own rules, then generation fails naming the path', () => {
    const schema = Joi.object({
      rows: Joi.array().when(Joi.array().min(2), { then: Joi.array().items(Joi.string()) }),
    });
    expect(() => joiToJsonSchema(schema)).toThrow(
      /\$\.rows uses a condition on anything but a sibling member/,
    );
  });

  it('When exactly one of two members must be sent (.xor), then oneOf requires each in turn, and other member rules are refused', () => {
    const schema = Joi.object({ id: Joi.string(), email: Joi.string() }).xor('id', 'email');
    expect(joiToJsonSchema(schema)).toEqual({
      type: 'object',
      properties: { id: { type: 'string' }, email: { type: 'string' } },
      additionalProperties: false,
      oneOf: [{ required: ['id'] }, { required: ['email'] }],
    });
    expect(() => joiToJsonSchema(Joi.object({ a: Joi.string(), b: Joi.string() }).or('a', 'b'))).toThrow(
      /\$ uses the member rule "or"/,
    );
  });

  it('When a member needs its peer (.with), then dependentRequired names the peer', () => {
    const schema = Joi.object({ minVersion: Joi.boolean(), platformId: Joi.string() }).with(
      'minVersion',
      'platformId',
    );
    expect(joiToJsonSchema(schema)).toEqual({
      type: 'object',
      properties: { minVersion: { type: 'boolean' }, platformId: { type: 'string' } },
      additionalProperties: false,
      dependentRequired: { minVersion: ['platformId'] },
    });
  });

  it('When a schema uses a joi feature without a conversion, then generation fails naming the path', () => {
    expect(() => joiToJsonSchema(Joi.object({ when: Joi.date() }))).toThrow(
      /\$\.when uses the joi type "date"/,
    );
    expect(() => joiToJsonSchema(Joi.object({ code: Joi.string().pattern(/^a$/i) }))).toThrow(
      /\$\.code uses the regular expression flags "i"/,
    );
    expect(() => joiToJsonSchema(Joi.string().invalid('x'))).toThrow(/invalid\(\) values/);
  });

  it("When a string length is bounded, then text()'s character bounds are minLength/maxLength and joi's UTF-16 ones are refused", () => {
    expect(joiToJsonSchema(text({ min: 1, max: 100, notBlank: true }))).toEqual({
      type: 'string',
      minLength: 1,
      maxLength: 100,
      pattern: '\\S',
    });
    expect(() => joiToJsonSchema(Joi.object({ name: Joi.string().max(100) }))).toThrow(
      /\$\.name uses the string rule "max" \(it counts UTF-16 units.*use text\(\{ min, max \}\)/,
    );
    expect(() => joiToJsonSchema(Joi.string().min(1))).toThrow(/string rule "min"/);
    expect(() => joiToJsonSchema(Joi.string().length(4))).toThrow(/string rule "length"/);
  });
});
