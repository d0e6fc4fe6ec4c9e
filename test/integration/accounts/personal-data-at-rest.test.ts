/**
 * Crypto-shredding of user events (ADR 0014): a user's personal fields are sealed under the
 * account's own key in its stream and in the global log, every read of the store and every
 * projection sees them opened, and dropping the key (DeleteUser's removeAttachments, in the same
 * append) erases them everywhere at once. Events written before sealing still read as they were.
 */
import { randomUUID } from 'node:crypto';

import { rebuildSnapshots } from '../../../scripts/lib/rebuild-snapshots';
import { SYSTEM_ACTOR } from '../../../shared/accounts/account';
import { ERASED_ATTACHMENTS } from '../../../shared/accounts/account-erasure';
import { PERSONAL_DATA_KEY_FIELD } from '../../../shared/accounts/personal-data';
import { ALL_DECIDERS } from '../../../shared/event-store/all-deciders';
import { parseEnvelope } from '../../../shared/event-store/envelope';
import { StaleAppendError } from '../../../shared/event-store/errors';
import { EventStore, STATE_VERSION_FIELD } from '../../../shared/event-store/event-store';
import { CommandHandler } from '../../../shared/event-store/handle-command';
import { logEntryContent } from '../../../shared/event-stream/log-reader';
import { fantasyTeamDecider } from '../../../shared/fantasy-team/fantasy-team.decider';
import { fantasyTeamProjection } from '../../../shared/fantasy-team/fantasy-team.projection';
import type { Projection } from '../../../shared/projections/projection';
import { partitionOf } from '../../../shared/redis/partitions';
import type { UserCommand } from '../../../shared/user/user.commands';
import { isDeletedUser, userDecider, type UserState } from '../../../shared/user/user.decider';
import { applyNextBatch } from '../../../workers/projector/apply-batch';
import { NO_CHECKPOINT } from '../../../workers/projector/batch-plan';
import { type Core, coreFixture } from '../../helpers/core-fixture';
import { userIdForEmail } from '../../helpers/user-ids';

const { buildCore } = coreFixture();

const USER = userDecider.aggregateType;
const ADMIN_ID = '0a0a0a0a-0000-4000-8000-000000000001';

/** A person no other test uses: each of these strings found in Redis can only be theirs. */
function person() {
  const tag = randomUUID().slice(0, 8);
  return {
    email: `Hortense.Valdivia-${tag}@Example.com`,
    userName: `hvaldivia-${tag}`,
    firstName: `Hortense${tag}`,
    lastName: `Valdivia${tag}`,
  };
}
const traces = (who: ReturnType<typeof person>) => [
  who.email.toLowerCase(),
  who.userName.toLowerCase(),
  who.firstName.toLowerCase(),
  who.lastName.toLowerCase(),
];
const holdsAny = (text: string, needles: readonly string[]) =>
  needles.some((needle) => text.toLowerCase().includes(needle));

async function createAccount(core: Core, who = person()) {
  const result = await core.accounts.createUser(
    SYSTEM_ACTOR,
    { ...who, userType: 'Human', roles: ['Member'], password: 'a-password-of-some-length' },
    // Each creation its own correlation: the same one again is taken for a retry of the first.
    { requestId: null, correlationId: randomUUID() },
  );
  expect(result).toMatchObject({ status: 'created' });
  expect(result.status === 'created' && result.replayed).toBeFalsy();
  return { who, userId: userIdForEmail(who.email) };
}

const adminContext = () => ({ now: new Date(), actorUserId: ADMIN_ID, actorRoles: ['Admin'] });
const metadata = { actorUserId: ADMIN_ID, requestId: null, correlationId: 'at-rest-test' };

function runUserCommand(
  core: Core,
  userId: string,
  command: UserCommand,
  removeAttachments?: readonly string[],
) {
  return core.commands.handle(userDecider, {
    aggregateId: userId,
    command,
    context: adminContext(),
    metadata,
    ...(removeAttachments ? { removeAttachments } : {}),
  });
}
const deleteUser = (core: Core, userId: string) =>
  runUserCommand(
    core,
    userId,
    { type: 'DeleteUser', data: { tombstoneId: randomUUID() } },
    ERASED_ATTACHMENTS,
  );

/**
 * The raw text of every entry of the user's stream (its JSON) and of the entries of its partition
 * of the log that name it (every field: a reference to the stream's entry, ADR 0020).
 */
async function storedText(core: Core, userId: string): Promise<{ stream: string[]; log: string[] }> {
  const stream = await core.redis.xrange(core.keys.aggregateStream(USER, userId), '-', '+');
  const log = await core.redis.xrange(core.keys.logPartition(partitionOf(userId)), '-', '+');
  return {
    stream: stream.map(([, fields]) => fields[1] ?? ''),
    log: log
      .filter((entry) => {
        const content = logEntryContent(entry);
        return ('copy' in content ? parseEnvelope(content.copy).aggregateId : content.aggregateId) === userId;
      })
      .map(([, fields]) => fields.join(' ')),
  };
}

async function allStoredText(core: Core, userId: string): Promise<string[]> {
  const { stream, log } = await storedText(core, userId);
  return [...stream, ...log];
}

describe('Personal data of user events at rest', () => {
  it('When an account is created, then neither its stream nor the log holds its e-mail, user name or names, and every read of the store returns them', async () => {
    const core = await buildCore();
    const { who, userId } = await createAccount(core);

    const stored = await allStoredText(core, userId);
    expect(stored).toHaveLength(2); // the stream's entry and the log's reference to it
    for (const json of stored) expect(holdsAny(json, traces(who))).toBe(false);

    const expected = {
      email: who.email.toLowerCase(),
      userName: who.userName,
      firstName: who.firstName,
      lastName: who.lastName,
    };
    expect((await core.store.readStream(USER, userId))[0]?.data).toMatchObject(expected);
    expect((await core.store.readFirst(USER, userId))?.data).toMatchObject(expected);
    expect((await core.store.readVersions(USER, userId, 1, 1))[0]?.data).toMatchObject(expected);
    expect(await core.accounts.findById(userId)).toMatchObject(expected);
    expect(await core.redis.hget(core.keys.aggregateRecord(USER, userId), PERSONAL_DATA_KEY_FIELD)).toMatch(
      /^pdk1\./,
    );
  });

  it('When DeleteUser is appended with removeAttachments, then the credential and the key leave the record with that append, and the creation reads with null personal fields', async () => {
    const core = await buildCore();
    const { who, userId } = await createAccount(core);
    const recordKey = core.keys.aggregateRecord(USER, userId);
    expect(await core.redis.hexists(recordKey, 'credential')).toBe(1);

    const deleted = await deleteUser(core, userId);
    expect(deleted).toMatchObject({ accepted: true, version: 2 });

    const record = await core.redis.hgetall(recordKey);
    expect(Object.keys(record).sort()).toEqual(['state', STATE_VERSION_FIELD, 'version'].sort());
    expect(holdsAny(JSON.stringify(record), traces(who))).toBe(false);
    expect(isDeletedUser(JSON.parse(record.state ?? 'null') as UserState)).toBe(true);
    const [creation] = await core.store.readStream(USER, userId);
    expect(creation?.data).toMatchObject({ email: null, userName: null, firstName: null, lastName: null });
    expect(creation?.data).toMatchObject({ userId, roles: ['Member'] });
    expect(await core.accounts.findById(userId)).toBeNull();
  });

  it('When an append carrying removeAttachments is refused (by the decider, or by the fence), then nothing is removed', async () => {
    const core = await buildCore();
    const { userId } = await createAccount(core);
    const recordKey = core.keys.aggregateRecord(USER, userId);
    const before = await core.redis.hgetall(recordKey);

    // The decider refuses: an account cannot delete itself.
    const self = await core.commands.handle(userDecider, {
      aggregateId: userId,
      command: { type: 'DeleteUser', data: { tombstoneId: randomUUID() } },
      context: { now: new Date(), actorUserId: userId, actorRoles: ['Admin'] },
      metadata,
      removeAttachments: ERASED_ATTACHMENTS,
    });
    expect(self.accepted).toBe(false);
    // The fence refuses: the stream is not at the expected version.
    await expect(
      core.store.append({
        aggregateType: USER,
        aggregateId: userId,
        expectedVersion: 0,
        events: [],
        state: null,
        removeAttachments: ERASED_ATTACHMENTS,
      }),
    ).rejects.toBeInstanceOf(StaleAppendError);

    expect(await core.redis.hgetall(recordKey)).toEqual(before);
  });

  it('When a record holds another state shape, then it is folded again from the sealed stream, opened, and rebuildSnapshots writes it in the current shape', async () => {
    const core = await buildCore();
    const { who, userId } = await createAccount(core);
    const recordKey = core.keys.aggregateRecord(USER, userId);
    await core.redis.hset(recordKey, 'state', JSON.stringify({ shape: 'old' }), STATE_VERSION_FIELD, '1');

    expect(await core.accounts.findById(userId)).toMatchObject({ email: who.email.toLowerCase() });
    expect(await rebuildSnapshots(core.store)).toContainEqual({
      aggregateType: USER,
      scanned: 1,
      rewritten: 1,
    });
    expect(JSON.parse((await core.redis.hget(recordKey, 'state')) ?? 'null')).toMatchObject({
      email: who.email.toLowerCase(),
      firstName: who.firstName,
    });
  });

  it('When a UserCreatedEvent was written before sealing (plain), then every read returns it as it is, and a later event with fields to seal gets a fresh key attached', async () => {
    const core = await buildCore();
    // The store as it was before sealing: no codec.
    const legacyStore = new EventStore(core.redis, core.keys, ALL_DECIDERS);
    const legacyCommands = new CommandHandler(legacyStore, core.config.lock);
    const who = person();
    const userId = userIdForEmail(who.email);
    const created = await legacyCommands.handle(userDecider, {
      aggregateId: userId,
      command: {
        type: 'CreateUser',
        data: {
          userId,
          ...who,
          email: who.email.toLowerCase(),
          userType: 'Human',
          roles: ['Member'],
          emailVerified: false,
          securityStamp: randomUUID(),
        },
      },
      context: adminContext(),
      metadata,
    });
    expect(created.accepted).toBe(true);
    const { stream, log } = await storedText(core, userId);
    expect(stream.every((json) => json.includes(who.firstName))).toBe(true);
    // The log refers to the stream's entry: it holds no copy of anything.
    expect(log.some((text) => text.includes(who.firstName))).toBe(false);

    expect((await core.store.readStream(USER, userId))[0]?.data).toMatchObject({ firstName: who.firstName });
    expect(await core.accounts.findById(userId)).toMatchObject({ lastName: who.lastName });

    const reason = `${who.firstName} ${who.lastName} left the club`;
    const disabled = await runUserCommand(core, userId, {
      type: 'DisableUser',
      data: { securityStamp: randomUUID(), reason },
    });
    expect(disabled.accepted).toBe(true);
    expect(await core.redis.hget(core.keys.aggregateRecord(USER, userId), PERSONAL_DATA_KEY_FIELD)).toMatch(
      /^pdk1\./,
    );
    const [, disable] = await core.store.readStream(USER, userId);
    expect(disable?.data).toMatchObject({ reason });
    const rawDisable = (
      await core.redis.xrange(core.keys.aggregateStream(USER, userId), '0-2', '0-2')
    )[0]?.[1][1];
    expect(rawDisable).not.toContain(who.lastName);
  });

  it('When an erased e-mail is registered again, then the account has the same id and a new key: the old creation reads as null, the new one as written', async () => {
    const core = await buildCore();
    const { who, userId } = await createAccount(core);
    const recordKey = core.keys.aggregateRecord(USER, userId);
    const firstKey = await core.redis.hget(recordKey, PERSONAL_DATA_KEY_FIELD);
    await deleteUser(core, userId);

    const again = { ...who, firstName: 'Second', lastName: 'Life' };
    const { userId: sameId } = await createAccount(core, again);
    expect(sameId).toBe(userId);
    const secondKey = await core.redis.hget(recordKey, PERSONAL_DATA_KEY_FIELD);
    expect(secondKey).toMatch(/^pdk1\./);
    expect(secondKey).not.toBe(firstKey);

    const events = await core.store.readStream(USER, userId);
    expect(events.map((event) => event.eventType)).toEqual([
      'UserCreatedEvent',
      'UserDeletedEvent',
      'UserCreatedEvent',
    ]);
    expect(events[0]?.data).toMatchObject({ email: null, firstName: null });
    expect(events[2]?.data).toMatchObject({ email: who.email.toLowerCase(), firstName: 'Second' });
    expect(await core.accounts.findById(userId)).toMatchObject({ firstName: 'Second', version: 3 });
    for (const json of await allStoredText(core, userId))
      expect(holdsAny(json, [who.firstName.toLowerCase()])).toBe(false);
  });
});

/** A projection of user events that keeps what it was given: the data of each event, in order. */
const echoUsers: Projection<{ readonly seen: readonly unknown[] }> = {
  name: 'echo-users',
  aggregateType: USER,
  checkpointKey: (keys, partition) => keys.projectionCheckpoint('echo-users', partition),
  documentKey: (keys, id) => keys.projectionDocument('echo-users', id),
  keyPatterns: (keys) => keys.projectionPatterns('echo-users'),
  evolve: (doc, event) => ({ seen: [...(doc?.seen ?? []), event.data] }),
};

describe('The projector and sealed events', () => {
  it('When a batch holds sealed user events, then every projection sees them opened, with one key read per account; a batch without sealed events reads none', async () => {
    const core = await buildCore();
    const { who, userId } = await createAccount(core);
    await runUserCommand(core, userId, {
      type: 'DisableUser',
      data: { securityStamp: randomUUID(), reason: `${who.lastName} asked` },
    });
    const partition = partitionOf(userId);
    const teamId = randomUUID();
    await core.commands.handle(fantasyTeamDecider, {
      aggregateId: teamId,
      command: { type: 'CreateFantasyTeam', data: { name: 'Echo', season: '2026' } },
      context: adminContext(),
      metadata,
    });

    const hget = jest.spyOn(core.redis, 'hget');
    try {
      expect(
        await applyNextBatch(core.redis, core.keys, echoUsers, partition, NO_CHECKPOINT, 100),
      ).toMatchObject({
        entries: expect.any(Number) as number,
      });
      // Two sealed events of one account: its key is read once.
      expect(hget.mock.calls.filter(([, field]) => field === PERSONAL_DATA_KEY_FIELD)).toHaveLength(1);
      hget.mockClear();
      await applyNextBatch(
        core.redis,
        core.keys,
        fantasyTeamProjection,
        partitionOf(teamId),
        NO_CHECKPOINT,
        100,
      );
      expect(hget).not.toHaveBeenCalled();
    } finally {
      hget.mockRestore();
    }
    const doc = JSON.parse((await core.redis.get(echoUsers.documentKey(core.keys, userId))) ?? 'null') as {
      seen: Record<string, unknown>[];
    };
    expect(doc.seen[0]).toMatchObject({ email: who.email.toLowerCase(), firstName: who.firstName });
    expect(doc.seen[1]).toMatchObject({ reason: `${who.lastName} asked` });
    expect(doc.seen.every((data) => !('personalData' in data))).toBe(true);
  });

  it('When the account is erased before the projector reaches its events, then the projection sees null personal fields', async () => {
    const core = await buildCore();
    const { userId } = await createAccount(core);
    await deleteUser(core, userId);
    await applyNextBatch(core.redis, core.keys, echoUsers, partitionOf(userId), NO_CHECKPOINT, 100);
    const doc = JSON.parse((await core.redis.get(echoUsers.documentKey(core.keys, userId))) ?? 'null') as {
      seen: Record<string, unknown>[];
    };
    expect(doc.seen[0]).toMatchObject({
      userId,
      email: null,
      userName: null,
      firstName: null,
      lastName: null,
    });
  });
});
