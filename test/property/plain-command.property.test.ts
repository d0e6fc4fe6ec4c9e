import { randomUUID } from 'node:crypto';

import fc from 'fast-check';

import {
  COMMAND_DEFINITIONS,
  commandEnvelopeSchema,
  commandRequestSchema,
} from '../../ingress/command/command-request';
import { AppError } from '../../shared/errors';
import { isLeftToJoi, plainCheckFor, validateWithJoi } from '../../shared/validation';
import { propertyParameters } from '../helpers/hostile-json';

/**
 * The command path checks the envelope and then the command's fields with the plain checks derived
 * from their joi schemas (shared/validation.ts), as parseCommandRequest's validate() calls do.
 * These properties hold that pair to the joi schemas alone: whatever it accepts, joi accepts and
 * answers the same way; whatever joi refuses, it leaves to joi (which words the refusal).
 */

const DEFINITIONS = COMMAND_DEFINITIONS.map((routed) => routed.definition);
const TYPES_WITH_PLAIN_FORM = DEFINITIONS.filter((d) => plainCheckFor(d.schema) !== null).map(
  (d) => d.commandType,
);

/** What the plain checks make of a body, in parseCommandRequest's order, or undefined: joi's. */
function byPlainChecks(body: Record<string, unknown>): Record<string, unknown> | undefined {
  const envelope = plainCheckFor(commandEnvelopeSchema)?.(body);
  if (envelope === undefined || isLeftToJoi(envelope)) return undefined;
  const { commandType, command } = envelope as { commandType: string; command: unknown };
  const definition = DEFINITIONS.find((d) => d.commandType === commandType);
  const fields = definition && plainCheckFor(definition.schema)?.(command);
  if (fields === undefined || isLeftToJoi(fields)) return undefined;
  return { ...(envelope as Record<string, unknown>), command: fields };
}

/** What the joi schemas alone make of a body: the validated envelope, or 'refused'. */
function byJoi(body: Record<string, unknown>): Record<string, unknown> | 'refused' {
  const definition = DEFINITIONS.find((d) => d.commandType === body.commandType);
  if (!definition) return 'refused';
  try {
    return validateWithJoi(commandRequestSchema(definition), body) as Record<string, unknown>;
  } catch (error) {
    if (error instanceof AppError && error.code === 'VALIDATION_ERROR') return 'refused';
    throw error;
  }
}

/** Values near each field's edges: the forms a plain check must accept, and many it must not. */
const anyValue = fc.oneof(
  fc.constant(undefined),
  fc.constant(null),
  fc.constant(''),
  fc.constant(' '),
  fc.constant(-0),
  fc.constant(0),
  fc.constant(1),
  fc.constant(-1),
  fc.constant(1.5),
  fc.constant(Number.MAX_SAFE_INTEGER),
  fc.constant(Number.MAX_SAFE_INTEGER + 1),
  fc.constant(-Number.MAX_SAFE_INTEGER),
  fc.constant('12'),
  fc.constant(true),
  fc.constant([]),
  fc.constant({}),
  fc.constant('\ud800'),
  fc.constant('x'.repeat(1000)),
  fc.constant('x'.repeat(1001)),
  fc.constant('😀'.repeat(1000)),
  fc.constant(`${' '.repeat(1000)}x`),
  fc.uuid().map((id) => id.toUpperCase()),
  fc.uuid(),
  fc.constant(`${randomUUID()} `),
  fc.constant(`{${randomUUID()}}`),
  fc.integer(),
  fc.string(),
);

const memberName = fc.constantFrom(
  'aggregateRootId',
  'fantasyTeamExternalId',
  'fantasyUserId',
  'unlinkReason',
  'name',
  'season',
  '__proto__',
  'constructor',
  'AggregateRootId',
);

const commandObject = fc.oneof(
  fc.dictionary(memberName, anyValue, { maxKeys: 4 }),
  fc.record({
    aggregateRootId: anyValue,
    fantasyTeamExternalId: anyValue,
    fantasyUserId: anyValue,
    unlinkReason: anyValue,
  }),
  fc.record({ aggregateRootId: fc.uuid(), fantasyTeamExternalId: anyValue, fantasyUserId: anyValue }),
  fc.record({ aggregateRootId: fc.uuid(), unlinkReason: anyValue }, { requiredKeys: ['aggregateRootId'] }),
  anyValue,
);

const anyGuid = fc.oneof(
  fc.uuid(),
  fc.uuid().map((id) => id.toUpperCase()),
);
const anyLong = fc.integer({ min: -Number.MAX_SAFE_INTEGER, max: Number.MAX_SAFE_INTEGER });

/** Valid bodies of the commands with a plain form, each with one member changed or added, or none. */
const nearlyValid = fc
  .tuple(
    fc.oneof(
      fc.record({
        commandType: fc.constant('LinkFantasyTeam'),
        command: fc.record({
          aggregateRootId: anyGuid,
          fantasyTeamExternalId: anyLong,
          fantasyUserId: anyLong,
        }),
      }),
      fc.record({
        commandType: fc.constant('UnlinkFantasyTeam'),
        command: fc.record(
          { aggregateRootId: anyGuid, unlinkReason: fc.oneof(fc.string(), anyValue) },
          { requiredKeys: ['aggregateRootId'] },
        ),
      }),
      fc.record({
        commandType: fc.constant('CreateFantasyTeam'),
        command: fc.record(
          {
            aggregateRootId: anyGuid,
            name: fc.oneof(fc.string(), fc.constantFrom(' x ', 'Team 😀', '\tA', 'x'.repeat(100)), anyValue),
            season: fc.oneof(fc.constantFrom('2026', '1999', ' 2026', '20266'), anyValue),
          },
          { requiredKeys: ['aggregateRootId', 'name'] },
        ),
      }),
    ),
    fc.option(fc.nat(1_000)),
    fc.option(fc.oneof(fc.constant(null), anyGuid)),
    fc.option(fc.tuple(fc.constantFrom('body', 'command'), memberName, anyValue)),
  )
  .map(([valid, expectedVersion, requestId, change]) => {
    const sent: Record<string, unknown> = { ...valid, command: { ...valid.command } };
    if (expectedVersion !== null) sent.expectedVersion = expectedVersion;
    if (requestId !== null) sent.requestId = requestId;
    if (change) {
      const [where, member, value] = change;
      const target = where === 'body' ? sent : (sent.command as Record<string, unknown>);
      target[where === 'body' && member === 'name' ? 'expectedVersion' : member] = value;
    }
    return sent;
  });

const body = fc.oneof(
  { arbitrary: nearlyValid, weight: 3 },
  fc.record(
    {
      commandType: fc.oneof(
        fc.constantFrom(...TYPES_WITH_PLAIN_FORM, 'SetFantasyTeamRoster', 'linkFantasyTeam'),
        anyValue,
      ),
      command: commandObject,
      expectedVersion: anyValue,
      requestId: fc.oneof(fc.constant(null), anyGuid, anyValue),
      extra: anyValue,
    },
    { requiredKeys: [] },
  ),
);

/** JSON round trip: the endpoint only ever sees what JSON.parse makes (`__proto__` as an own member). */
function asParsed(value: unknown): Record<string, unknown> {
  return JSON.parse(JSON.stringify(value) ?? 'null') as Record<string, unknown>;
}

describe('the plain form of a command', () => {
  it('is answered as the joi schemas answer it, or left to them', () => {
    let plainOnes = 0;
    fc.assert(
      fc.property(body, (generated) => {
        const sent = asParsed(generated);
        const plain = byPlainChecks(sent);
        if (plain === undefined) return;
        plainOnes += 1;
        expect(byJoi(sent)).toStrictEqual(plain);
      }),
      propertyParameters(3000),
    );
    // The generator reaches the plain form often enough for the property to say something.
    expect(plainOnes).toBeGreaterThan(100);
  });

  it('covers CreateFantasyTeam, LinkFantasyTeam and UnlinkFantasyTeam as clients send them', () => {
    const id = randomUUID().toUpperCase();
    const bodies = [
      {
        commandType: 'LinkFantasyTeam',
        command: { aggregateRootId: id, fantasyTeamExternalId: 7, fantasyUserId: 9 },
        requestId: randomUUID(),
      },
      { commandType: 'UnlinkFantasyTeam', command: { aggregateRootId: id }, expectedVersion: 3 },
      {
        commandType: 'UnlinkFantasyTeam',
        command: { aggregateRootId: id, unlinkReason: 'moved' },
        requestId: null,
      },
      { commandType: 'CreateFantasyTeam', command: { aggregateRootId: id, name: ' Spurs ' } },
    ];
    for (const sent of bodies) {
      const plain = byPlainChecks(sent);
      expect(plain).toBeDefined();
      expect(plain).toStrictEqual(byJoi(sent));
    }
  });
});
