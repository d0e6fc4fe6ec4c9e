/**
 * `npm run users:seal-legacy` (sealLegacyUserEvents): user events written before sealing get their
 * personal fields sealed in the streams and in the log, so that erasure covers every account
 * (ADR 0014, "Legacy events"); an erased account's are sealed under a key no one keeps. Entry ids
 * stay, so projectors go on from their checkpoints.
 */
import { randomUUID } from 'node:crypto';

import { sealLegacyUserEvents } from '../../../scripts/lib/legacy-sealing';
import { rewriteLogPartition } from '../../../scripts/lib/rewrite-log';
import { SYSTEM_ACTOR } from '../../../shared/accounts/account';
import { ERASED_ATTACHMENTS } from '../../../shared/accounts/account-erasure';
import { PERSONAL_DATA_KEY_FIELD } from '../../../shared/accounts/personal-data';
import { ALL_DECIDERS } from '../../../shared/event-store/all-deciders';
import { EventStore } from '../../../shared/event-store/event-store';
import { CommandHandler } from '../../../shared/event-store/handle-command';
import { fantasyTeamDecider } from '../../../shared/fantasy-team/fantasy-team.decider';
import type { Projection } from '../../../shared/projections/projection';
import { LOG_PARTITIONS, partitionOf } from '../../../shared/redis/partitions';
import type { UserCommand } from '../../../shared/user/user.commands';
import { userDecider } from '../../../shared/user/user.decider';
import { applyNextBatch } from '../../../workers/projector/apply-batch';
import { NO_CHECKPOINT } from '../../../workers/projector/batch-plan';
import { coreFixture } from '../../helpers/core-fixture';
import { rewriteInPre0020Format } from '../../helpers/pre-0020-format';
import { redisContents } from '../../helpers/redis-state';
import { userIdForEmail } from '../../helpers/user-ids';

const { buildCore } = coreFixture();

const USER = userDecider.aggregateType;
const context = () => ({ now: new Date(), actorUserId: SYSTEM_ACTOR.userId, actorRoles: ['Admin'] });
const metadata = { actorUserId: SYSTEM_ACTOR.userId, requestId: null, correlationId: 'legacy-test' };

function person(label: string) {
  const tag = randomUUID().slice(0, 8);
  return {
    email: `${label}-${tag}@example.com`,
    userName: `${label}-name-${tag}`,
    firstName: `${label}First${tag}`,
    lastName: `${label}Last${tag}`,
  };
}

/** A projection of user events that counts what it was given, per account. */
const countUsers: Projection<{ readonly events: number }> = {
  name: 'count-users',
  aggregateType: USER,
  checkpointKey: (keys, partition) => keys.projectionCheckpoint('count-users', partition),
  documentKey: (keys, id) => keys.projectionDocument('count-users', id),
  keyPatterns: (keys) => keys.projectionPatterns('count-users'),
  evolve: (doc) => ({ events: (doc?.events ?? 0) + 1 }),
};

describe('Sealing the user events written before sealing', () => {
  it('When legacy accounts (live, erased, erased and registered again) are sealed, then no stream or log entry holds their fields in the clear, the live ones read as before, the erased ones as null, and entry ids stay', async () => {
    const { config, redis, ...core } = await buildCore();
    // The service as it was before sealing: no codec.
    const legacy = new CommandHandler(new EventStore(redis, core.keys, ALL_DECIDERS), config.lock);
    const run = (
      commands: CommandHandler,
      userId: string,
      command: UserCommand,
      remove?: readonly string[],
    ) =>
      commands.handle(userDecider, {
        aggregateId: userId,
        command,
        context: context(),
        metadata,
        ...(remove ? { removeAttachments: remove } : {}),
      });
    const createLegacy = async (who: ReturnType<typeof person>) => {
      const userId = userIdForEmail(who.email);
      const data = { userId, ...who, userType: 'Human' as const, roles: ['Member' as const] };
      const command: UserCommand = {
        type: 'CreateUser',
        data: { ...data, emailVerified: false, securityStamp: randomUUID() },
      };
      expect((await run(legacy, userId, command)).accepted).toBe(true);
      return userId;
    };
    const deleteUser = (userId: string) =>
      run(
        core.commands,
        userId,
        { type: 'DeleteUser', data: { tombstoneId: randomUUID() } },
        ERASED_ATTACHMENTS,
      );

    // A live legacy account, with a legacy disable reason naming it.
    const live = person('live');
    const liveId = await createLegacy(live);
    const reason = `${live.firstName} asked`;
    await run(legacy, liveId, { type: 'DisableUser', data: { securityStamp: randomUUID(), reason } });
    // An erased legacy account: its plain creation outlived its erasure.
    const erased = person('erased');
    const erasedId = await createLegacy(erased);
    await deleteUser(erasedId);
    // A legacy account erased and registered again (sealed, under a new key).
    const before = person('before');
    const againId = await createLegacy(before);
    await deleteUser(againId);
    const after = { ...person('after'), email: before.email };
    await core.accounts.createUser(
      SYSTEM_ACTOR,
      { ...after, userType: 'Human', roles: ['Member'] },
      { requestId: null, correlationId: randomUUID() },
    );
    // A team in the log, and a projection that has read everything so far.
    await core.commands.handle(fantasyTeamDecider, {
      aggregateId: randomUUID(),
      command: { type: 'CreateFantasyTeam', data: { name: 'Beside', season: '2026' } },
      context: context(),
      metadata,
    });
    // Stored as that version stored it: full envelopes, and the log holding copies of them.
    await rewriteInPre0020Format(redis, core.keys);
    for (let partition = 0; partition < LOG_PARTITIONS; partition++) {
      await applyNextBatch(redis, core.keys, countUsers, partition, NO_CHECKPOINT, 1000);
    }
    const logIds = async () =>
      Promise.all(
        Array.from({ length: LOG_PARTITIONS }, async (_, p) =>
          (await redis.xrange(core.keys.logPartition(p), '-', '+')).map(([id]) => id),
        ),
      );
    const idsBefore = await logIds();
    // The e-mail of `before` is the new account's too (same e-mail, same id): its record holds it.
    const plainNames = [
      erased.email,
      ...[erased, before].flatMap((who) => [who.userName, who.firstName, who.lastName]),
    ];
    const liveNames = [live.userName, live.firstName, live.lastName];
    const holding = async (needles: readonly string[]) =>
      Object.entries(await redisContents(redis, config.redisKeyPrefix))
        .filter(([, value]) => needles.some((needle) => value.includes(needle)))
        .map(([key]) => key)
        .sort();
    expect((await holding(plainNames)).length).toBeGreaterThan(0);

    expect(await sealLegacyUserEvents(core.store)).toEqual({
      accounts: 3,
      sealed: 1,
      shredded: 2,
      logEntries: 4,
    });

    // Nothing of the erased lives is left anywhere; the live account only in its record's snapshot.
    expect(await holding(plainNames)).toEqual([]);
    expect(await holding(liveNames)).toEqual([core.keys.aggregateRecord(USER, liveId)]);
    expect(await holding([reason])).toEqual([core.keys.aggregateRecord(USER, liveId)]);
    // The live account reads as before, under a key it now has.
    expect(await redis.hget(core.keys.aggregateRecord(USER, liveId), PERSONAL_DATA_KEY_FIELD)).toMatch(
      /^pdk1\./,
    );
    const liveEvents = await core.store.readStream(USER, liveId);
    expect(liveEvents[0]?.data).toMatchObject({ firstName: live.firstName, lastName: live.lastName });
    expect(liveEvents[1]?.data).toMatchObject({ reason });
    // The erased lives read as null; the new life of the re-registered e-mail as written.
    expect((await core.store.readStream(USER, erasedId))[0]?.data).toMatchObject({
      email: null,
      firstName: null,
    });
    const againEvents = await core.store.readStream(USER, againId);
    expect(againEvents[0]?.data).toMatchObject({ email: null, firstName: null });
    expect(againEvents[2]?.data).toMatchObject({ firstName: after.firstName });
    // Same entries, same ids: the projection goes on from its checkpoints and sees only what is new.
    expect(await logIds()).toEqual(idsBefore);
    await run(core.commands, liveId, { type: 'EnableUser', data: {} });
    const progressed = await Promise.all(
      Array.from({ length: LOG_PARTITIONS }, async (_, partition) => {
        const checkpoint = (await redis.get(countUsers.checkpointKey(core.keys, partition))) ?? NO_CHECKPOINT;
        const result = await applyNextBatch(redis, core.keys, countUsers, partition, checkpoint, 1000);
        return result === 'fenced' ? -1 : result.entries;
      }),
    );
    expect(progressed.reduce((sum, n) => sum + n, 0)).toBe(1);
    expect(progressed[partitionOf(liveId)]).toBe(1);

    // A second run has nothing left to do.
    expect(await sealLegacyUserEvents(core.store)).toEqual({
      accounts: 3,
      sealed: 0,
      shredded: 0,
      logEntries: 0,
    });
  });
});

describe('Rewriting a log partition beside live appends', () => {
  it.each([
    ['a few entries', 3],
    ['more than the swap copies at once', 1_001],
  ])(
    'When %s are appended while the partition is copied, then they are kept, in order, after the rewritten entries, with every id unchanged',
    async (_label, appendedDuring) => {
      const { redis, ...core } = await buildCore();
      const teamId = randomUUID();
      const partition = partitionOf(teamId);
      const teamCommand = (name: string) =>
        core.commands.handle(fantasyTeamDecider, {
          aggregateId: teamId,
          command:
            name === 'create'
              ? { type: 'CreateFantasyTeam', data: { name: 'Rewritten', season: '2026' } }
              : { type: 'SetFantasyTeamRoster', data: { players: [] } },
          context: context(),
          metadata,
        });
      await teamCommand('create');
      for (let i = 0; i < 4; i++) await teamCommand('roster');
      const log = core.keys.logPartition(partition);
      const before = await redis.xrange(log, '-', '+');

      let calls = 0;
      const replaced = await rewriteLogPartition(redis, core.keys, partition, async (entries) => {
        calls += 1;
        if (calls === 1) for (let i = 0; i < appendedDuring; i++) await teamCommand('roster');
        // The first entry is "rewritten" (to the same fields: what matters here is where it goes).
        return entries.map(([id, fields]) => (id === before[0]?.[0] ? fields : null));
      });

      expect(replaced).toBe(1);
      const after = await redis.xrange(log, '-', '+');
      expect(after).toHaveLength(before.length + appendedDuring);
      expect(after.slice(0, before.length)).toEqual(before);
      expect(after.map(([id]) => id)).toEqual([...after.map(([id]) => id)].sort(compareIds));
      expect(await redis.exists(core.keys.logPartitionRewrite(partition))).toBe(0);
      // New entries still get ids above every id the partition gave.
      await teamCommand('roster');
      const [last] = await redis.xrevrange(log, '+', '-', 'COUNT', 1);
      expect(compareIds(last?.[0] ?? '0-0', after.at(-1)?.[0] ?? '0-0')).toBeGreaterThan(0);
    },
    30_000,
  );

  it('When a stream changed after it was read, then its rewrite is refused and writes nothing', async () => {
    const { redis, ...core } = await buildCore();
    const who = person('fenced');
    await core.accounts.createUser(
      SYSTEM_ACTOR,
      { ...who, userType: 'Human', roles: ['Member'] },
      { requestId: null, correlationId: randomUUID() },
    );
    const userId = userIdForEmail(who.email);
    const stream = core.keys.aggregateStream(USER, userId);
    const record = core.keys.aggregateRecord(USER, userId);
    const key = (await redis.hget(record, PERSONAL_DATA_KEY_FIELD)) ?? '';
    const stored = await redis.xrange(stream, '-', '+');
    // Read at length 0, or under another key: both refused.
    expect(await redis.rewriteStream(stream, record, 0, PERSONAL_DATA_KEY_FIELD, key, 'keep', '')).toBe(-1);
    expect(
      await redis.rewriteStream(stream, record, 1, PERSONAL_DATA_KEY_FIELD, 'pdk1.other', 'keep', '', '{}'),
    ).toBe(-1);
    expect(await redis.xrange(stream, '-', '+')).toEqual(stored);
  });
});

/** Orders stream entry ids (`<ms>-<seq>`) numerically. */
function compareIds(a: string, b: string): number {
  const [aMs = 0, aSeq = 0] = a.split('-').map(Number);
  const [bMs = 0, bSeq = 0] = b.split('-').map(Number);
  return aMs - bMs || aSeq - bSeq;
}
