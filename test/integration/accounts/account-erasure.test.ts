/**
 * DeleteUser erases an account (issue 19, ADR 0014): afterwards no key of the deployment's prefix,
 * of any type (strings, hashes, lists, sets, sorted sets, streams: the events, the log partitions,
 * records, projections, import records, BullMQ's jobs and its events stream, remembered answers),
 * holds the account's e-mail (in any case), user name, first or last name, in its name or its
 * value. Its teams stay, owned by a tombstone id, and its e-mail can be registered again as a new
 * account. Everything happens over HTTP, as an operator and the account would do it.
 */
import { randomUUID } from 'node:crypto';

import request from 'supertest';

import { bootstrapAdmin } from '../../../ingress/auth/bootstrap-admin';
import { partitionOf } from '../../../shared/redis/partitions';
import { ALL_PROJECTIONS } from '../../../workers/projector/all-projections';
import { Projector } from '../../../workers/projector/projector';
import { createTestApp, type TestApp } from '../../helpers/app-fixture';
import { InProcessImportWorker } from '../../helpers/in-process-import-worker';
import { eventually } from '../../helpers/processes';
import { caughtUp } from '../../helpers/projector-fixtures';
import { redisContents } from '../../helpers/redis-state';
import { passwordGrantToken } from '../../helpers/tokens';
import { userIdForEmail } from '../../helpers/user-ids';

const ADMIN = { email: 'erasure-admin@example.com', password: 'erasure-admin-password' };
const MANAGER = { email: 'erasure-manager@example.com', password: 'erasure-manager-password' };
const basic = (email: string, password: string) =>
  `Basic ${Buffer.from(`${email}:${password}`).toString('base64')}`;

/** A person whose every personal string is distinctive: found in Redis, it can only be theirs. */
function person() {
  const tag = randomUUID().slice(0, 8);
  return {
    // Mixed case on purpose: the account is kept under the lower-case e-mail, and both must go.
    email: `Wilhelmina.Erasable-${tag}@Example.ORG`,
    userName: `wilma-username-${tag}`,
    firstName: `Wilhelmina${tag}`,
    lastName: `Erasablesdottir${tag}`,
    password: `first-life-password-${tag}`,
  };
}

describe('DeleteUser: erasure of an account', () => {
  let subject: TestApp;
  let worker: InProcessImportWorker;
  let projector: Projector;
  let adminToken: string;

  beforeAll(async () => {
    subject = await createTestApp({ JWT_SECRET: 'account-erasure-test-jwt-secret-of-32-chars' });
    await subject.createUser({ ...ADMIN, roles: ['Admin'] });
    await subject.createUser({ ...MANAGER, roles: ['UserManager'] });
    adminToken = await passwordGrantToken(subject.app, ADMIN.email, ADMIN.password);
    worker = new InProcessImportWorker(subject);
    worker.start();
    projector = new Projector(subject.redis, subject.services.keys, ALL_PROJECTIONS, subject.logger, {
      idleMs: 5,
    });
    projector.start();
  });
  afterAll(async () => {
    await projector.stop();
    await worker.close();
    await subject.services.importQueue.close();
    await subject.close();
  });

  const { keys } = { keys: () => subject.services.keys };
  /** Runs a UserSeeding import through the queue (Normal: a BullMQ job) and waits for its end. */
  async function seed(submitter: { email: string; password: string }, users: object[]) {
    const res = await request(subject.app)
      .post('/api/import')
      .set('Authorization', basic(submitter.email, submitter.password))
      .send({
        requestId: randomUUID(),
        importerType: 'UserSeeding',
        priority: 'Normal',
        importData: { users },
      });
    expect(res.status).toBe(200);
    const importJobId = res.body.importJobId as string;
    await eventually(
      async () => (await subject.services.importResults.get(importJobId))?.status !== 'Pending',
      20_000,
    );
    // The worker replaces a finished job's data with its summary right after recording the result
    // (an import its submitter may not run is refused in the ingress: no job).
    await eventually(async () => {
      const job = await subject.services.importQueue.queue.getJob(importJobId);
      return !job || job.data.summary !== undefined;
    });
    return (await subject.services.importResults.get(importJobId))!;
  }
  const row = (who: ReturnType<typeof person>, password = who.password, roles = ['Member']) => ({
    email: who.email,
    userName: who.userName,
    firstName: who.firstName,
    lastName: who.lastName,
    userType: 'Human',
    roles,
    password,
  });
  const command = (token: string, body: object) =>
    request(subject.app).post('/api/command').set('Authorization', `Bearer ${token}`).send(body);
  const currentUser = (authorization: string) =>
    request(subject.app)
      .post('/api/readmodel')
      .set('Authorization', authorization)
      .send({ query: { queryType: 'CurrentUser' } });
  const getTeam = (token: string, id: string) =>
    request(subject.app)
      .post('/api/readmodel')
      .set('Authorization', `Bearer ${token}`)
      .send({ query: { queryType: 'GetFantasyTeam', id } });
  const projected = () => eventually(() => caughtUp(subject.redis, keys(), ALL_PROJECTIONS), 10_000, 20);

  /** Every key of the prefix whose name or value holds one of `needles`, any case, with what it holds. */
  async function keysHolding(needles: readonly string[]): Promise<Record<string, string[]>> {
    const contents = await redisContents(subject.redis, subject.config.redisKeyPrefix);
    expect(Object.keys(contents).length).toBeGreaterThan(20);
    const found: Record<string, string[]> = {};
    for (const [key, value] of Object.entries(contents)) {
      const text = `${key}\n${value}`.toLowerCase();
      const held = needles.filter((needle) => text.includes(needle.toLowerCase()));
      if (held.length) found[key] = held;
    }
    return found;
  }

  it('When an account seeded by an import, signed in, owning teams and projected is deleted, then no key holds its e-mail, user name or names; its teams belong to a tombstone; and its e-mail registers again as a new account', async () => {
    const who = person();
    const userId = userIdForEmail(who.email);
    const needles = [who.email, who.userName, who.firstName, who.lastName];

    // 1. Seeded (a UserManager) by a UserSeeding import (a record and a finished BullMQ job), then
    //    refused by a second one (a record whose row was it), as an operator re-running a file would.
    const seeded = row(who, who.password, ['UserManager']);
    expect(await seed(ADMIN, [seeded])).toMatchObject({ status: 'Completed', commandsExecuted: 1 });
    expect(await seed(ADMIN, [seeded])).toMatchObject({
      status: 'Failed',
      rowErrors: [expect.objectContaining({ index: 0, code: 'USER_EXISTS' })],
    });

    // 2. It signs in both ways, and leaves what its own refused requests leave behind, which the
    //    spec's messages word with its e-mail: an import granting a role beyond its reach, and an
    //    account command on an Admin sent with a requestId (its answer is remembered for 24 h).
    const token = await passwordGrantToken(subject.app, who.email, who.password);
    expect((await currentUser(basic(who.email, who.password))).status).toBe(200);
    expect((await currentUser(`Bearer ${token}`)).status).toBe(200);
    const ownImport = await seed(who, [row(person(), undefined, ['Admin'])]);
    expect(ownImport).toMatchObject({
      status: 'Failed',
      rowErrors: [expect.objectContaining({ code: 'ROLE_NOT_GRANTABLE' })],
    });
    expect(ownImport.errorMessage).toContain(who.email.toLowerCase());
    const refused = await command(token, {
      requestId: randomUUID(),
      commandType: 'SetUserRoles',
      command: { aggregateRootId: userIdForEmail(ADMIN.email), roles: ['Member'] },
    });
    expect(refused.status).toBe(403);
    expect(refused.body.errorMessage).toContain(who.email.toLowerCase());

    // 3. It owns teams (one archived); an Admin disabled it once, naming it in the reason.
    const teams = [randomUUID(), randomUUID()];
    for (const aggregateRootId of teams) {
      expect(
        (
          await command(token, {
            commandType: 'CreateFantasyTeam',
            command: { aggregateRootId, name: 'Mine' },
          })
        ).status,
      ).toBe(200);
    }
    expect(
      (await command(token, { commandType: 'ArchiveFantasyTeam', command: { aggregateRootId: teams[1] } }))
        .status,
    ).toBe(200);
    const reason = `${who.firstName} ${who.lastName} asked for a pause`;
    expect(
      (
        await command(adminToken, {
          commandType: 'DisableUser',
          command: { aggregateRootId: userId, reason },
        })
      ).status,
    ).toBe(200);
    expect(
      (await command(adminToken, { commandType: 'EnableUser', command: { aggregateRootId: userId } })).status,
    ).toBe(200);

    // 4. The projections hold it; and Redis, before the erasure, does hold its data where the
    //    service keeps it in the clear (so the scan below can see it): its record's state, the users
    //    projection's document and e-mail indexes, the import record and the remembered answer.
    await projected();
    const before = Object.keys(await keysHolding(needles));
    expect(before).toEqual(
      expect.arrayContaining([
        keys().aggregateRecord('user', userId),
        keys().users.user(userId),
        keys().users.byEmail(partitionOf(userId), 'all', 'all', 'all'),
        keys().importResult(ownImport.importJobId),
        expect.stringContaining(':idempotency:command:'),
      ]),
    );

    // 5. An Admin deletes it.
    const deleted = await command(adminToken, {
      commandType: 'DeleteUser',
      command: { aggregateRootId: userId },
    });
    expect(deleted.status).toBe(200);
    expect(deleted.body).toMatchObject({ success: true, eventCount: 1, commandType: 'DeleteUser' });
    await projected();

    // 6. Nothing anywhere holds its e-mail, user name or names; and what is sealed no longer opens:
    //    its key left with the UserDeletedEvent, so even the service reads its events as null.
    expect(await keysHolding(needles)).toEqual({});
    const events = await subject.services.store.readStream('user', userId);
    expect(events.map((event) => event.eventType)).toEqual([
      'UserCreatedEvent',
      'UserDisabledEvent',
      'UserEnabledEvent',
      'UserDeletedEvent',
    ]);
    expect(events[0]?.data).toMatchObject({ email: null, userName: null, firstName: null, lastName: null });
    expect(events[1]?.data).toMatchObject({ reason: null });

    // 7. Its credentials are dead, its teams stayed, owned by one tombstone id that names no account.
    expect((await currentUser(basic(who.email, who.password))).status).toBe(401);
    expect((await currentUser(`Bearer ${token}`)).status).toBe(401);
    const owners = await Promise.all(
      teams.map(
        async (id) =>
          ((await getTeam(adminToken, id)).body.results[0] as { ownerUserId: string }).ownerUserId,
      ),
    );
    const tombstoneId = owners[0] ?? '';
    expect(owners).toEqual([tombstoneId, tombstoneId]);
    expect(tombstoneId).not.toBe(userId);
    expect(await subject.services.accounts.findById(tombstoneId)).toBeNull();

    // 8. The e-mail registers again: the same id (ADR 0004), a new account with a new password,
    //    owning none of the old teams.
    const newPassword = `second-life-password-${randomUUID().slice(0, 8)}`;
    const again = await seed(MANAGER, [
      { ...row(who, newPassword), firstName: 'Renewed', lastName: 'Person' },
    ]);
    expect(again).toMatchObject({ status: 'Completed', commandsExecuted: 1 });
    expect((await currentUser(basic(who.email, who.password))).status).toBe(401);
    const me = await currentUser(basic(who.email, newPassword));
    expect(me.status).toBe(200);
    expect(me.body.data[0]).toMatchObject({ email: who.email.toLowerCase() });
    const newToken = await passwordGrantToken(subject.app, who.email, newPassword);
    for (const id of teams) {
      expect((await getTeam(newToken, id)).body).toMatchObject({ results: [], totalCount: 0 });
      expect((await getTeam(adminToken, id)).body.results[0]).toMatchObject({ ownerUserId: tombstoneId });
    }
    expect(await subject.redis.zcard(keys().ownerTeams(userId))).toBe(0);
    // The first life's import record is under the same submitter id, but not the new account's.
    const readImport = (authorization: string) =>
      request(subject.app)
        .post('/api/readmodel')
        .set('Authorization', authorization)
        .send({ query: { queryType: 'GetImportJobResult', importJobId: ownImport.importJobId } });
    expect((await readImport(`Bearer ${newToken}`)).body).toEqual({
      queryType: 'GetImportJobResult',
      results: [],
      totalCount: 0,
    });
    expect((await readImport(`Bearer ${adminToken}`)).body).toMatchObject({ totalCount: 1 });
    // Nothing of the first life came back with the second: its names are still nowhere.
    expect(await keysHolding([who.firstName, who.lastName])).toEqual({});
  });

  it('When the bootstrap ADMIN_EMAIL account was deleted, then the next start does not create it again with the password of the environment', async () => {
    const config = {
      ...subject.config,
      adminEmail: `bootstrap-${randomUUID().slice(0, 8)}@example.com`,
      adminPassword: 'bootstrap-admin-password',
    };
    await bootstrapAdmin(config, subject.services.accounts, subject.logger);
    const userId = userIdForEmail(config.adminEmail);
    expect(await subject.services.accounts.findById(userId)).toMatchObject({ roles: ['Admin'] });
    const deleted = await command(adminToken, {
      commandType: 'DeleteUser',
      command: { aggregateRootId: userId },
    });
    expect(deleted.status).toBe(200);

    await bootstrapAdmin(config, subject.services.accounts, subject.logger);
    expect(await subject.services.accounts.findById(userId)).toBeNull();
    expect((await currentUser(basic(config.adminEmail, config.adminPassword))).status).toBe(401);
  });
});
