/**
 * The command use case (ingress/command/run-team-command.ts), called directly on a real Redis: its
 * outcomes, without HTTP. The route's answers are test/integration/command*.test.ts's; an append
 * whose outcome is unknown (the one error it throws on purpose) is test/faults/command-outcome-unknown.test.ts's.
 */
import { randomUUID } from 'node:crypto';

import {
  type CommandCaller,
  runTeamCommand,
  type TeamCommandRequest,
} from '../../../ingress/command/run-team-command';
import { refused } from '../../../shared/event-store/command-answer';
import { FANTASY_TEAM_COMMAND_DEFINITIONS } from '../../../shared/fantasy-team/fantasy-team.commands';
import { fantasyTeamDecider } from '../../../shared/fantasy-team/fantasy-team.decider';
import { TEAM_MESSAGES } from '../../../shared/fantasy-team/fantasy-team.messages';
import { validate } from '../../../shared/validation';
import { createTestApp, type TestApp } from '../../helpers/app-fixture';
import { eventually } from '../../helpers/processes';

const TEAM = fantasyTeamDecider.aggregateType;
const MAX_TEAMS = 2;

function deferred() {
  let resolve!: () => void;
  const promise = new Promise<void>((done) => (resolve = done));
  return { promise, resolve };
}

/** A validated request for `commandType` with the given `command` fields. */
function teamCommand(
  commandType: string,
  command: Record<string, unknown>,
  extra: Partial<Omit<TeamCommandRequest, 'definition' | 'fields'>> = {},
): TeamCommandRequest {
  const definition = FANTASY_TEAM_COMMAND_DEFINITIONS.find((d) => d.commandType === commandType);
  if (!definition) throw new Error(`no definition for ${commandType}`);
  const fields = validate(definition.schema, command) as Record<string, unknown>;
  return { definition, fields, expectedVersion: 0, requestId: null, traceId: 'test', ...extra };
}

const create = (teamId: string, extra: Partial<TeamCommandRequest> = {}) =>
  teamCommand('CreateFantasyTeam', { aggregateRootId: teamId, name: 'Direct' }, extra);
const link = (teamId: string, extra: Partial<TeamCommandRequest> = {}) =>
  teamCommand(
    'LinkFantasyTeam',
    { aggregateRootId: teamId, fantasyTeamExternalId: 7, fantasyUserId: 9 },
    extra,
  );

describe('runTeamCommand', () => {
  let subject: TestApp;
  /** Set by a test to pause the next append (between deciding and appending). */
  let pauseNextAppend: ((aggregateId: string) => Promise<void>) | undefined;

  beforeAll(async () => {
    subject = await createTestApp(
      { MAX_TEAMS_PER_OWNER: String(MAX_TEAMS), LOCK_TTL_MS: '1000', LOCK_WAIT_MS: '100' },
      {},
      {
        beforeAppend: async (aggregateId) => {
          const pause = pauseNextAppend;
          pauseNextAppend = undefined;
          await pause?.(aggregateId);
        },
      },
    );
  });
  afterAll(async () => {
    await subject.close();
  });

  const member = (): CommandCaller => ({ userId: randomUUID(), roles: ['Member'] });
  const run = (caller: CommandCaller, request: TeamCommandRequest) =>
    runTeamCommand(subject.services, caller, request);
  /** The next append waits, between deciding and appending, until `resume` is resolved. */
  const pauseTheNextAppend = () => {
    const paused = deferred();
    const resume = deferred();
    pauseNextAppend = async () => {
      paused.resolve();
      await resume.promise;
    };
    return { paused, resume };
  };
  const streamLength = (teamId: string) => subject.services.store.streamLength(TEAM, teamId);

  it('When a Member creates a team, then it succeeds with one event; the same requestId from the same caller replays that outcome without running again', async () => {
    const caller = member();
    const teamId = randomUUID();
    const requestId = randomUUID();
    expect(await run(caller, create(teamId, { requestId }))).toEqual({
      kind: 'succeeded',
      eventCount: 1,
      version: 1,
    });
    expect(await run(caller, create(teamId, { requestId }))).toEqual({
      kind: 'succeeded',
      eventCount: 1,
      version: 1,
    });
    expect(await streamLength(teamId)).toBe(1);
  });

  it('When the caller lacks the role Member, then it is refused with COMMAND_FORBIDDEN and nothing is written', async () => {
    const teamId = randomUUID();
    const outcome = await run({ userId: randomUUID(), roles: [] }, create(teamId));
    expect(outcome).toEqual(refused('COMMAND_FORBIDDEN', 'CreateFantasyTeam requires the role Member.'));
    expect(await streamLength(teamId)).toBe(0);
  });

  it('When a caller reuses its requestId for another command, then it is refused with DUPLICATE_REQUEST_ID; another caller may use the same id for a request of its own', async () => {
    const caller = member();
    const requestId = randomUUID();
    expect(await run(caller, create(randomUUID(), { requestId }))).toMatchObject({ kind: 'succeeded' });

    const reused = await run(caller, create(randomUUID(), { requestId }));
    expect(reused).toEqual(
      refused('DUPLICATE_REQUEST_ID', `requestId ${requestId} was already used for another command`),
    );
    const other = member();
    const otherTeam = randomUUID();
    expect(await run(other, create(otherTeam, { requestId }))).toEqual({
      kind: 'succeeded',
      eventCount: 1,
      version: 1,
    });
    expect(await streamLength(otherTeam)).toBe(1);
  });

  it('When the expectedVersion is not the team’s version, then it is refused with CONCURRENCY_CONFLICT naming both versions', async () => {
    const caller = member();
    const teamId = randomUUID();
    await run(caller, create(teamId));
    expect(await run(caller, link(teamId, { expectedVersion: 5 }))).toEqual(
      refused('CONCURRENCY_CONFLICT', 'Expected version 5, but the team is at version 1'),
    );
    expect(await streamLength(teamId)).toBe(1);
  });

  it('When a rule fails, then it is refused with COMMAND_VALIDATION_ERROR and the decider’s message, and a resend with the same requestId gets that refusal back, even when now valid', async () => {
    const caller = member();
    const teamId = randomUUID();
    const requestId = randomUUID();
    await run(caller, create(teamId));
    const expected = refused('COMMAND_VALIDATION_ERROR', TEAM_MESSAGES.externalIdNotPositive);
    const refusal = teamCommand(
      'LinkFantasyTeam',
      { aggregateRootId: teamId, fantasyTeamExternalId: 0, fantasyUserId: 9 },
      { requestId },
    );
    expect(await run(caller, refusal)).toEqual(expected);
    expect(await run(caller, link(teamId, { requestId }))).toEqual(expected);
    expect(await streamLength(teamId)).toBe(1);
  });

  it('When an owner holds the most teams, then one more is refused with COMMAND_VALIDATION_ERROR and not created, while an Admin is not bounded', async () => {
    const caller = member();
    for (let i = 0; i < MAX_TEAMS; i++)
      expect(await run(caller, create(randomUUID()))).toMatchObject({ kind: 'succeeded' });
    const extra = randomUUID();
    expect(await run(caller, create(extra))).toEqual(
      refused('COMMAND_VALIDATION_ERROR', TEAM_MESSAGES.ownerTeamLimit(MAX_TEAMS)),
    );
    expect(await streamLength(extra)).toBe(0);

    const admin: CommandCaller = { userId: randomUUID(), roles: ['Member', 'Admin'] };
    for (let i = 0; i <= MAX_TEAMS; i++)
      expect(await run(admin, create(randomUUID()))).toMatchObject({ kind: 'succeeded' });
  });

  it('When the team is busy past the lock wait, then it is refused with AGGREGATE_BUSY', async () => {
    const caller = member();
    const teamId = randomUUID();
    await run(caller, create(teamId));
    const { paused, resume } = pauseTheNextAppend();
    const holding = run(caller, link(teamId));
    await paused.promise;
    try {
      expect(await run(caller, link(teamId))).toEqual(
        refused('AGGREGATE_BUSY', 'The team is busy with another command. Retry shortly.'),
      );
    } finally {
      resume.resolve();
    }
    await holding;
  });

  it.each([
    [
      0,
      'AGGREGATE_BUSY',
      'The team changed while this command was being handled; nothing was written. Retry shortly.',
    ],
    [1, 'CONCURRENCY_CONFLICT', 'Expected version 1, but the team is at version 2'],
  ])(
    'When the append’s fence refuses a stale decision and the caller expected version %s, then it is refused with %s and nothing more is written',
    async (expectedVersion, code, message) => {
      const caller = member();
      const teamId = randomUUID();
      await run(caller, create(teamId));
      const { paused, resume } = pauseTheNextAppend();
      const stale = run(caller, link(teamId, { expectedVersion }));
      await paused.promise;
      // The paused holder's lock lapses; another command takes the team on to version 2.
      await eventually(
        async () =>
          (await run(caller, teamCommand('ArchiveFantasyTeam', { aggregateRootId: teamId }))).kind ===
          'succeeded',
        5_000,
        50,
      );
      resume.resolve();
      expect(await stale).toEqual({ kind: 'refused', code, message });
      expect(await streamLength(teamId)).toBe(2);
    },
  );
});
