import { randomUUID } from 'node:crypto';

import fc from 'fast-check';

import {
  FANTASY_TEAM_COMMAND_DEFINITIONS,
  type FantasyTeamCommandDefinition,
} from '../../shared/fantasy-team/fantasy-team.commands';
import { fantasyTeamDecider } from '../../shared/fantasy-team/fantasy-team.decider';
import { validate } from '../../shared/validation';
import {
  createHostileSubject,
  expectPrototypesIntact,
  type HostileSubject,
} from '../helpers/hostile-fixture';
import {
  applyMutations,
  hostileGuid,
  mutations,
  PROPERTY_TIMEOUT_MS,
  propertyParameters,
  randomBodyText,
  toJsonText,
} from '../helpers/hostile-json';
import { samplesFor } from '../helpers/joi-samples';
import { expectCommandAnswer } from '../helpers/response-shapes';

/**
 * The first answer to a requestId is remembered for replay, refusals included (docs/integrators.md: the same
 * command with the same requestId gets its first answer again). That record (the answer in the
 * aggregate's partition, the request id's use and the answers naming their caller in the caller's,
 * ADR 0030) is about the answer, not the domain, so it is left out of "nothing changed".
 */
const REMEMBERED_ANSWERS = [/:idempotency:(command|use|naming):/];

// Every case is an HTTP request and a check of Redis (PROPERTY_TIMEOUT_MS).
jest.setTimeout(PROPERTY_TIMEOUT_MS);

describe('POST /api/command under hostile input', () => {
  let subject: HostileSubject;

  beforeAll(async () => {
    subject = await createHostileSubject();
  });
  afterAll(() => subject.close());

  /** A team of the member's own, so rules run on an aggregate that exists. */
  async function newTeam(): Promise<string> {
    const id = randomUUID();
    const res = await subject.post(
      '/api/command',
      JSON.stringify({
        commandType: 'CreateFantasyTeam',
        command: { aggregateRootId: id, name: 'Property XI' },
      }),
      subject.member.bearer,
    );
    expect(res.status).toBe(200);
    return id;
  }

  /** Sends a command; a refusal (any status but 200) must leave Redis exactly as it was. */
  async function send(text: string) {
    const before = await subject.state(REMEMBERED_ANSWERS);
    const res = await subject.post('/api/command', text, subject.member.bearer);
    expectCommandAnswer(res);
    if (res.status !== 200) expect(await subject.state(REMEMBERED_ANSWERS)).toEqual(before);
    expectPrototypesIntact();
    return res;
  }

  /** The spec's envelope around a command drawn from its schema, aimed at `teamId` half the time. */
  function envelopes(definition: FantasyTeamCommandDefinition, teamId: string) {
    return fc.record(
      {
        commandType: fc.constant(definition.commandType),
        command: fc.tuple(samplesFor(definition.schema), hostileGuid([teamId])).map(([command, id]) => ({
          ...(command as object),
          aggregateRootId: id,
        })),
        expectedVersion: fc.nat({ max: 3 }),
        requestId: fc.uuid(),
      },
      { requiredKeys: ['commandType', 'command'] },
    );
  }

  it.each(
    FANTASY_TEAM_COMMAND_DEFINITIONS.map((definition) => [definition.commandType, definition] as const),
  )(
    'When a valid %s command is drawn from its schema, then the schema accepts most of them (the properties below start from valid bodies)',
    (_, definition) => {
      const samples = fc.sample(samplesFor(definition.schema), 50);
      const accepted = samples.filter((sample) => {
        try {
          validate(definition.schema, sample);
          return true;
        } catch {
          return false;
        }
      });
      expect(accepted.length).toBeGreaterThanOrEqual(40);
    },
  );

  it.each(
    FANTASY_TEAM_COMMAND_DEFINITIONS.map((definition) => [definition.commandType, definition] as const),
  )(
    'When the envelope or the fields of a %s command are mutated, then it answers the spec 2.6 shape (or a problem before the route), never a 5xx, and a refusal changes nothing',
    async (_, definition) => {
      const teamId = await newTeam();
      await fc.assert(
        fc.asyncProperty(envelopes(definition, teamId), mutations, async (valid, edits) => {
          await send(toJsonText(applyMutations(valid, edits)));
        }),
        propertyParameters(30),
      );
    },
  );

  it('When the body is any JSON at all, or not JSON, then the answer is a documented shape, never a 5xx, and a refusal changes nothing', async () => {
    await fc.assert(
      fc.asyncProperty(randomBodyText, async (text) => {
        await send(text);
      }),
      propertyParameters(100),
    );
  });

  it('When a roster holds 300,000 entries (a 1 MB body), then it is refused by its length at once, never a 500', async () => {
    const teamId = await newTeam();
    const players = new Array<string>(300_000).fill('{}').join(',');
    const started = Date.now();
    const res = await send(
      `{"commandType":"SetFantasyTeamRoster","command":{"aggregateRootId":"${teamId}","players":[${players}]}}`,
    );
    expect(res.status).toBe(400);
    expect((res.body as { errorMessage: string }).errorMessage).toContain(
      'Players must contain less than or equal to 300 items',
    );
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  describe('Longs (spec 2.5: fantasyTeamExternalId and fantasyUserId)', () => {
    /** The events of a team as stored: raw JSON text, so no parser of ours can round what it shows. */
    async function storedEvents(teamId: string): Promise<string[]> {
      const key = subject.services.keys.aggregateStream(fantasyTeamDecider.aggregateType, teamId);
      const entries = await subject.redis.xrange(key, '-', '+');
      return entries.map(([, fields]) => fields[1] ?? '');
    }

    const link = (teamId: string, externalId: string, userId: string) =>
      `{"commandType":"LinkFantasyTeam","command":{"aggregateRootId":"${teamId}",` +
      `"fantasyTeamExternalId":${externalId},"fantasyUserId":${userId}}}`;

    it('When a long beyond 2^53 - 1 is sent (as JSON text, which JSON.stringify cannot write), then it is refused, never rounded, and no event is written', async () => {
      const teamId = await newTeam();
      const beyond = fc.bigInt({ min: 2n ** 53n, max: 2n ** 100n }).map(String);
      const safe = fc.bigInt({ min: 1n, max: BigInt(Number.MAX_SAFE_INTEGER) }).map(String);
      await fc.assert(
        fc.asyncProperty(fc.boolean(), beyond, safe, async (inExternalId, big, fine) => {
          const res = await send(inExternalId ? link(teamId, big, fine) : link(teamId, fine, big));
          expect(res.status).toBe(400);
          const field = inExternalId ? 'FantasyTeamExternalId' : 'FantasyUserId';
          expect(res.body).toMatchObject({
            errorCode: 'COMMAND_VALIDATION_ERROR',
            errorMessage: `${field} is beyond the supported range`,
          });
        }),
        propertyParameters(30),
      );
      expect(await storedEvents(teamId)).toHaveLength(1); // its creation only
    });

    it('When a long up to 2^53 - 1 is sent, then the event stores exactly those digits', async () => {
      const teamId = await newTeam();
      const safe = fc.bigInt({ min: 1n, max: BigInt(Number.MAX_SAFE_INTEGER) }).map(String);
      await fc.assert(
        fc.asyncProperty(safe, safe, async (externalId, userId) => {
          expect((await send(link(teamId, externalId, userId))).status).toBe(200);
          const linked = (await storedEvents(teamId)).at(-1) ?? '';
          expect(linked).toContain(`"fantasyTeamExternalId":${externalId},`);
          expect(linked).toContain(`"fantasyUserId":${userId},`);
          const unlink = { commandType: 'UnlinkFantasyTeam', command: { aggregateRootId: teamId } };
          expect((await send(JSON.stringify(unlink))).status).toBe(200);
        }),
        propertyParameters(15),
      );
    });

    it.each([
      ['0.5', 'must be an integer'],
      ['1.5', 'must be an integer'],
      ['-2.25', 'must be an integer'],
      ['"12"', 'must be a number'],
      ['1e400', 'cannot be infinity'],
      ['-1', 'FantasyTeamExternalId must be positive'],
      ['0', 'FantasyTeamExternalId must be positive'],
      ['-9007199254740993', 'is beyond the supported range'],
    ])(
      'When fantasyTeamExternalId is %s, then the command is refused (%s) and no event is written',
      async (text, message) => {
        const teamId = await newTeam();
        const res = await send(link(teamId, text, '7'));
        expect(res.status).toBe(400);
        expect(res.body).toMatchObject({ errorCode: 'COMMAND_VALIDATION_ERROR' });
        expect(String((res.body as { errorMessage: string }).errorMessage)).toContain(message);
        expect(await storedEvents(teamId)).toHaveLength(1);
      },
    );
  });
});
