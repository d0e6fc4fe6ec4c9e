import { randomUUID } from 'node:crypto';

import fc from 'fast-check';

import { commandRequestSchema, plainTeamCommand } from '../../ingress/command/command-request';
import { FANTASY_TEAM_COMMAND_DEFINITIONS } from '../../shared/commands/fantasy-team-command-definitions';
import { AppError } from '../../shared/errors';
import { validate } from '../../shared/validation';
import { propertyParameters } from '../helpers/hostile-json';

/**
 * The command path checks a team command's plainest form without joi (plain-fields.ts). These
 * properties hold that check to the joi schemas: whatever it accepts, joi accepts and answers the
 * same way; whatever joi refuses, it leaves to joi (which words the refusal).
 */

const TYPES_WITH_PLAIN_FORM = FANTASY_TEAM_COMMAND_DEFINITIONS.filter((d) => d.plainFields).map(
  (d) => d.commandType,
);

/** What the joi schemas make of a body: the validated envelope, or 'refused'. */
function byJoi(body: Record<string, unknown>): Record<string, unknown> | 'refused' {
  const definition = FANTASY_TEAM_COMMAND_DEFINITIONS.find((d) => d.commandType === body.commandType);
  if (!definition) return 'refused';
  try {
    return validate(commandRequestSchema(definition), body) as Record<string, unknown>;
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
    ),
    fc.option(fc.nat(1_000)),
    fc.option(fc.tuple(fc.constantFrom('body', 'command'), memberName, anyValue)),
  )
  .map(([valid, expectedVersion, change]) => {
    const sent: Record<string, unknown> = { ...valid, command: { ...valid.command } };
    if (expectedVersion !== null) sent.expectedVersion = expectedVersion;
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
        fc.constantFrom(...TYPES_WITH_PLAIN_FORM, 'CreateFantasyTeam', 'linkFantasyTeam'),
        anyValue,
      ),
      command: commandObject,
      expectedVersion: anyValue,
      requestId: fc.oneof(fc.constant(null), fc.uuid()),
      extra: anyValue,
    },
    { requiredKeys: [] },
  ),
);

/** JSON round trip: the endpoint only ever sees what JSON.parse makes (`__proto__` as an own member). */
function asParsed(value: unknown): Record<string, unknown> {
  return JSON.parse(JSON.stringify(value) ?? 'null') as Record<string, unknown>;
}

describe('the plain form of a team command', () => {
  it('is answered as the joi schemas answer it, or left to them', () => {
    let plainOnes = 0;
    fc.assert(
      fc.property(body, (generated) => {
        const sent = asParsed(generated);
        const requestId = typeof sent.requestId === 'string' ? sent.requestId.toLowerCase() : null;
        const plain = plainTeamCommand(sent, requestId);
        if (plain === undefined) return;
        plainOnes += 1;
        const joi = byJoi(sent);
        expect(joi).not.toBe('refused');
        const validated = joi as { command: Record<string, unknown>; expectedVersion: number };
        expect(plain.family).toBe('team');
        expect(plain.request.fields).toStrictEqual(validated.command);
        expect(plain.request.expectedVersion).toBe(validated.expectedVersion);
        expect(plain.request.definition.commandType).toBe(sent.commandType);
      }),
      propertyParameters(3000),
    );
    // The generator reaches the plain form often enough for the property to say something.
    expect(plainOnes).toBeGreaterThan(100);
  });

  it('covers LinkFantasyTeam and UnlinkFantasyTeam as clients send them', () => {
    const id = randomUUID().toUpperCase();
    const bodies = [
      {
        commandType: 'LinkFantasyTeam',
        command: { aggregateRootId: id, fantasyTeamExternalId: 7, fantasyUserId: 9 },
      },
      { commandType: 'UnlinkFantasyTeam', command: { aggregateRootId: id }, expectedVersion: 3 },
      {
        commandType: 'UnlinkFantasyTeam',
        command: { aggregateRootId: id, unlinkReason: 'moved' },
        requestId: null,
      },
    ];
    for (const sent of bodies) {
      const plain = plainTeamCommand(sent, null);
      expect(plain?.request.fields).toStrictEqual((byJoi(sent) as { command: unknown }).command);
    }
  });
});
