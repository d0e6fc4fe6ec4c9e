/**
 * An erased account's teams pass to its tombstone id (ADR 0014): every team the owner index holds
 * (an Admin's too), archived ones included, by the service's own EraseFantasyTeamOwner, which no
 * client can send. Idempotent, and finished before the account's e-mail is registered again when a
 * crash cut it short.
 */
import { randomUUID } from 'node:crypto';

import request from 'supertest';

import { SYSTEM_ACTOR } from '../../../shared/accounts/account';
import { ERASED_ATTACHMENTS } from '../../../shared/accounts/account-erasure';
import { AggregateBusyError } from '../../../shared/event-store/errors';
import { fantasyTeamDecider, type FantasyTeamState } from '../../../shared/fantasy-team/fantasy-team.decider';
import { fantasyTeamProjection } from '../../../shared/fantasy-team/fantasy-team.projection';
import { isDeletedUser, userDecider } from '../../../shared/user/user.decider';
import { rebuildProjection } from '../../../workers/projector/rebuild';
import { createTestApp, type TestApp } from '../../helpers/app-fixture';
import { storedViews } from '../../helpers/projector-fixtures';
import { passwordGrantToken } from '../../helpers/tokens';

const PASSWORD = 'team-tombstone-password';
const TEAM = fantasyTeamDecider.aggregateType;
const metadata = { actorUserId: SYSTEM_ACTOR.userId, requestId: null, correlationId: 'team-tombstone-test' };

describe('Teams of an erased account', () => {
  let subject: TestApp;

  beforeAll(async () => {
    subject = await createTestApp({ LOCK_WAIT_MS: '200' });
  });
  afterAll(() => subject.close());

  /** A new account with a token; `roles` defaults to Member. */
  const newAccount = async (roles: ('Member' | 'Admin')[] = ['Member']) => {
    const email = `owner-${randomUUID().slice(0, 8)}@example.com`;
    const userId = await subject.createUser({ email, password: PASSWORD, roles });
    return { email, userId, token: await passwordGrantToken(subject.app, email, PASSWORD) };
  };
  const send = (token: string, body: object) =>
    request(subject.app).post('/api/command').set('Authorization', `Bearer ${token}`).send(body);
  const createTeam = async (token: string) => {
    const aggregateRootId = randomUUID();
    const res = await send(token, {
      commandType: 'CreateFantasyTeam',
      command: { aggregateRootId, name: 'Kept' },
    });
    expect(res.status).toBe(200);
    return aggregateRootId;
  };
  const ownerOf = async (teamId: string) =>
    (await subject.services.store.loadRecord<FantasyTeamState>(TEAM, teamId, fantasyTeamDecider.initialState))
      .state?.ownerUserId;
  const indexed = (userId: string) => subject.redis.zrange(subject.services.keys.ownerTeams(userId), 0, -1);
  const passTeams = (userId: string, tombstoneId: string) =>
    subject.services.teamTombstone.passTeams(userId, tombstoneId, metadata);

  it('When an account is erased, then each of its teams, archived ones too, passes to the tombstone, the projection follows, the index is emptied, and a second run passes none', async () => {
    const member = await newAccount();
    const teams = [await createTeam(member.token), await createTeam(member.token)];
    const archive = await send(member.token, {
      commandType: 'ArchiveFantasyTeam',
      command: { aggregateRootId: teams[1] },
    });
    expect(archive.status).toBe(200);
    expect((await indexed(member.userId)).sort()).toEqual([...teams].sort());

    const tombstoneId = randomUUID();
    expect(await passTeams(member.userId, tombstoneId)).toBe(2);
    for (const teamId of teams) expect(await ownerOf(teamId)).toBe(tombstoneId);
    expect(await indexed(member.userId)).toEqual([]);
    expect(await passTeams(member.userId, tombstoneId)).toBe(0);

    await rebuildProjection(subject.redis, subject.services.keys, fantasyTeamProjection);
    const views = await storedViews(subject.redis, subject.services.keys, teams);
    expect(views.map((view) => view?.ownerUserId)).toEqual([tombstoneId, tombstoneId]);
    expect(views[1]).toMatchObject({ archived: true, version: 3 });
    // The old owner no longer reaches them: answered as a missing team (ADR 0038).
    const link = await send(member.token, {
      commandType: 'LinkFantasyTeam',
      command: { aggregateRootId: teams[0], fantasyTeamExternalId: 1, fantasyUserId: 2 },
    });
    expect(link.status).toBe(400);
    expect(link.body).toMatchObject({ errorMessage: 'Cannot link non-existent team' });
  });

  it("When an Admin creates teams, then they are indexed under the Admin (no bound), and pass to the Admin's tombstone on erasure", async () => {
    const admin = await newAccount(['Admin']);
    const teams = [await createTeam(admin.token), await createTeam(admin.token)];
    expect((await indexed(admin.userId)).sort()).toEqual([...teams].sort());
    const tombstoneId = randomUUID();
    expect(await passTeams(admin.userId, tombstoneId)).toBe(2);
    for (const teamId of teams) expect(await ownerOf(teamId)).toBe(tombstoneId);
  });

  it("When an Admin's teams were created before Admin teams were indexed, then the start's ensureIndexed indexes every team under its owner once, and erasure passes them", async () => {
    const admin = await newAccount(['Admin']);
    const teamId = await createTeam(admin.token);
    const { teamLimit, keys } = subject.services;
    // As an older version left it: the team only in its records, no index run yet.
    await subject.redis.zrem(keys.ownerTeams(admin.userId), teamId);
    await subject.redis.del(keys.ownerTeamsIndexed());

    await teamLimit.ensureIndexed();
    expect(await indexed(admin.userId)).toEqual([teamId]);
    // Once only: a later start does not scan again.
    await subject.redis.zrem(keys.ownerTeams(admin.userId), teamId);
    await teamLimit.ensureIndexed();
    expect(await indexed(admin.userId)).toEqual([]);
    await subject.redis.del(keys.ownerTeamsIndexed());
    await teamLimit.ensureIndexed();

    const tombstoneId = randomUUID();
    expect(await passTeams(admin.userId, tombstoneId)).toBe(1);
    expect(await ownerOf(teamId)).toBe(tombstoneId);
  });

  it.each([
    ['a Member', 'Member'],
    ['an Admin', 'Admin'],
  ] as const)(
    'When %s sends EraseFantasyTeamOwner to POST /api/command, then 400 UNKNOWN_COMMAND_TYPE and the team keeps its owner',
    async (_label, role) => {
      const owner = await newAccount();
      const teamId = await createTeam(owner.token);
      const caller = role === 'Member' ? owner : await newAccount(['Admin']);
      const res = await send(caller.token, {
        commandType: 'EraseFantasyTeamOwner',
        command: { aggregateRootId: teamId, fromUserId: owner.userId, tombstoneId: caller.userId },
      });
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({
        success: false,
        eventCount: 0,
        errorCode: 'UNKNOWN_COMMAND_TYPE',
        errorMessage: 'Unknown command type: EraseFantasyTeamOwner',
      });
      expect(await ownerOf(teamId)).toBe(owner.userId);
      expect(await subject.services.store.streamLength(TEAM, teamId)).toBe(1);
    },
  );

  it('When one team is busy, then the others pass, the call fails, the busy team stays indexed, and the next run passes it', async () => {
    const member = await newAccount();
    const [free, busy] = [await createTeam(member.token), await createTeam(member.token)];
    const lock = subject.services.keys.aggregateLock(TEAM, busy ?? '');
    await subject.redis.set(lock, 'someone-else', 'PX', 60_000);
    const tombstoneId = randomUUID();
    await expect(passTeams(member.userId, tombstoneId)).rejects.toBeInstanceOf(AggregateBusyError);
    expect(await ownerOf(free ?? '')).toBe(tombstoneId);
    expect(await indexed(member.userId)).toEqual([busy]);

    await subject.redis.del(lock);
    expect(await passTeams(member.userId, tombstoneId)).toBe(1);
    expect(await ownerOf(busy ?? '')).toBe(tombstoneId);
    expect(await indexed(member.userId)).toEqual([]);
  });

  it('When the process died after the UserDeletedEvent and before the teams passed, then registering the e-mail again passes them to the tombstone first, and the new account owns none', async () => {
    const member = await newAccount();
    const teams = [await createTeam(member.token), await createTeam(member.token)];
    // What the use case writes before it passes the teams; the "crash" comes right after.
    const deleted = await subject.services.commands.handle(userDecider, {
      aggregateId: member.userId,
      command: { type: 'DeleteUser', data: { tombstoneId: randomUUID() } },
      context: { now: new Date(), actorUserId: SYSTEM_ACTOR.userId, actorRoles: ['Admin'] },
      metadata,
      removeAttachments: ERASED_ATTACHMENTS,
    });
    expect(deleted.accepted).toBe(true);
    const tombstone = deleted.accepted ? deleted.state : null;
    if (!isDeletedUser(tombstone)) throw new Error('not deleted');
    for (const teamId of teams) expect(await ownerOf(teamId)).toBe(member.userId);

    const again = await subject.services.accounts.createUser(
      SYSTEM_ACTOR,
      { email: member.email, userType: 'Human', roles: ['Member'], password: PASSWORD },
      { requestId: null, correlationId: randomUUID() },
    );
    expect(again).toMatchObject({ status: 'created', userId: member.userId });
    for (const teamId of teams) expect(await ownerOf(teamId)).toBe(tombstone.tombstoneId);
    expect(await indexed(member.userId)).toEqual([]);
    // The new account signs in, and its first team is counted alone.
    const token = await passwordGrantToken(subject.app, member.email, PASSWORD);
    const fresh = await createTeam(token);
    expect(await indexed(member.userId)).toEqual([fresh]);
  });
});
