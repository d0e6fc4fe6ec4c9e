import { randomUUID } from 'node:crypto';

import request from 'supertest';

import { SYSTEM_ACTOR } from '../../../shared/accounts/account';
import { scanKeys } from '../../../shared/redis/connections';
import { partitionOf } from '../../../shared/redis/partitions';
import type { AssignableRole } from '../../../shared/roles';
import { USER_VIEW_MEMBERS, type UserView } from '../../../shared/user/user-view';
import { usersProjection } from '../../../shared/user/users.projection';
import { Projector } from '../../../workers/projector/projector';
import { rebuildProjection } from '../../../workers/projector/rebuild';
import { changeAccount } from '../../helpers/account-changes';
import { createTestApp, type TestApp } from '../../helpers/app-fixture';
import { eventually } from '../../helpers/processes';
import { caughtUp, snapshotDocuments } from '../../helpers/projector-fixtures';
import { passwordGrantToken } from '../../helpers/tokens';
import { userIdForEmail } from '../../helpers/user-ids';

/**
 * GetUser and ListUsers over HTTP on a real Redis, with the users projection kept by a projector
 * in process. Each test makes its own accounts under e-mails of its own (`<tag>-...`), and lists
 * with that tag as the e-mail prefix, so tests share the app without seeing each other's accounts.
 */

const PASSWORD = 'account-queries-password';
const NOT_FOUND_LISTING = { queryType: 'GetUser', results: [], totalCount: 0 };
const VALIDATION_TITLE = 'One or more validation errors occurred.';

interface Listed {
  readonly email: string;
  readonly roles?: AssignableRole[];
  readonly userType?: 'Human' | 'ServiceAccount';
  readonly firstName?: string;
  readonly lastName?: string;
}

interface ListingAnswer {
  readonly results: UserView[];
  readonly totalCount: number;
}

const basic = (email: string) => `Basic ${Buffer.from(`${email}:${PASSWORD}`).toString('base64')}`;

/** A fresh tag, so one test's e-mails share a prefix no other test's have. */
const newTag = () => `q${randomUUID().slice(0, 8)}`;

async function startSubject(): Promise<{ subject: TestApp; projector: Projector }> {
  const subject = await createTestApp();
  const projector = new Projector(subject.redis, subject.services.keys, [usersProjection], subject.logger, {
    batchSize: 100,
    idleMs: 5,
    leaseMs: 1000,
  });
  projector.start();
  return { subject, projector };
}

describe('GetUser and ListUsers (POST /api/readmodel)', () => {
  let subject: TestApp;
  let projector: Projector;
  let managerToken: string;
  const ADMIN = 'queries-admin@example.com';
  const MANAGER = 'queries-manager@example.com';
  const MEMBER = 'queries-member@example.com';
  const MACHINE = 'queries-machine@example.com';

  const readModel = (body: object, authorization: string) =>
    request(subject.app).post('/api/readmodel').set('Authorization', authorization).send(body);
  const getUser = (query: object, authorization = basic(ADMIN)) =>
    readModel({ query: { queryType: 'GetUser', ...query } }, authorization);
  const listUsers = (query: object, envelope: object = {}, authorization = basic(ADMIN)) =>
    readModel({ query: { queryType: 'ListUsers', ...query }, ...envelope }, authorization);
  /** The listing's results and count, after checking it answered 200. */
  const listed = async (query: object, envelope: object = {}): Promise<ListingAnswer> => {
    const res = await listUsers(query, envelope);
    expect([res.status, res.text]).toEqual([200, res.text]);
    return res.body as ListingAnswer;
  };
  const emailsOf = (answer: ListingAnswer) => answer.results.map((user) => user.email);
  const settled = () =>
    eventually(() => caughtUp(subject.redis, subject.services.keys, [usersProjection]), 10_000, 20);

  /** Creates accounts without passwords (no hash), as the system; returns their ids in order. */
  async function createAccounts(accounts: readonly Listed[]): Promise<string[]> {
    const ids: string[] = [];
    for (const account of accounts) {
      const result = await subject.services.accounts.createUser(
        SYSTEM_ACTOR,
        { userType: 'Human', roles: ['Member'], ...account },
        { requestId: null, correlationId: 'account-queries' },
      );
      if (result.status !== 'created') throw new Error(`${account.email}: ${result.status}`);
      ids.push(result.userId);
    }
    return ids;
  }

  const stamp = () => randomUUID();
  const deleteUser = (userId: string) =>
    changeAccount(subject.services, userId, { type: 'DeleteUser', data: { tombstoneId: randomUUID() } });

  beforeAll(async () => {
    ({ subject, projector } = await startSubject());
    await subject.createUser({ email: ADMIN, password: PASSWORD, roles: ['Admin'] });
    await subject.createUser({ email: MANAGER, password: PASSWORD, roles: ['UserManager'] });
    await subject.createUser({ email: MEMBER, password: PASSWORD, roles: ['Member'] });
    await subject.createUser({
      email: MACHINE,
      password: PASSWORD,
      roles: ['ServiceAccount'],
      userType: 'ServiceAccount',
    });
    managerToken = await passwordGrantToken(subject.app, MANAGER, PASSWORD);
  });
  afterAll(async () => {
    await projector?.stop();
    await subject?.close();
  });

  describe('who may ask', () => {
    let memberToken: string;
    beforeAll(async () => {
      memberToken = await passwordGrantToken(subject.app, MEMBER, PASSWORD);
    });

    it.each([
      ['a Member by Basic', () => basic(MEMBER)],
      ['a Member by Bearer', () => `Bearer ${memberToken}`],
      ['a ServiceAccount by Basic', () => basic(MACHINE)],
    ])(
      'When %s asks for GetUser or ListUsers, then it gets the 403 Forbidden problem naming the roles, before its fields are looked at',
      async (_, authorization) => {
        for (const [queryType, query] of [
          ['GetUser', { email: ADMIN }],
          ['ListUsers', {}],
          // An invalid body still gets the 403: a caller without the role learns nothing of the fields.
          ['GetUser', { nonsense: true }],
          ['ListUsers', { role: 'Nobody' }],
        ] as const) {
          const res = await readModel({ query: { queryType, ...query } }, authorization());
          expect(res.status).toBe(403);
          expect(res.body).toMatchObject({
            title: 'Forbidden',
            status: 403,
            detail: `${queryType} requires one of the roles: UserManager, Admin.`,
          });
          expect(res.text).not.toContain(ADMIN);
        }
      },
    );
    it('When no credentials are sent, then both answer the 401 problem', async () => {
      for (const queryType of ['GetUser', 'ListUsers']) {
        const res = await request(subject.app)
          .post('/api/readmodel')
          .send({ query: { queryType, email: ADMIN } });
        expect(res.status).toBe(401);
        expect(res.body).toMatchObject({ title: 'Unauthorized', status: 401 });
      }
    });

    it('When a UserManager (Bearer) or an Admin (Basic) asks, then both are answered', async () => {
      const byManager = await getUser({ email: ADMIN }, `Bearer ${managerToken}`);
      const byAdmin = await getUser({ email: ADMIN }, basic(ADMIN));
      expect(byManager.status).toBe(200);
      expect(byManager.body).toEqual(byAdmin.body);
      await settled();
      const listing = await listUsers({ emailPrefix: 'queries-' }, {}, `Bearer ${managerToken}`);
      expect(listing.status).toBe(200);
      expect(emailsOf(listing.body as ListingAnswer)).toEqual([ADMIN, MACHINE, MANAGER, MEMBER]);
    });
  });

  describe('GetUser', () => {
    it('When asked by id or by e-mail (any case, blanks around), then it answers the account from its record: exactly the documented members, never a hash, a stamp or a key', async () => {
      const tag = newTag();
      const email = `${tag}-grace@example.com`;
      const id = await subject.createUser({
        email,
        password: PASSWORD,
        roles: ['Member', 'ServiceAccount'],
        firstName: 'Grace',
        lastName: 'Hopper',
        emailVerified: true,
      });
      const account = await subject.services.accounts.findById(id);
      if (!account) throw new Error('no account');
      const expected: UserView = {
        id,
        email,
        userName: email,
        userType: 'Human',
        roles: ['Member', 'ServiceAccount'],
        firstName: 'Grace',
        lastName: 'Hopper',
        emailVerified: true,
        disabled: false,
        createdAt: account.createdAt,
        updatedAt: account.createdAt,
        version: 1,
      };

      for (const query of [
        { id },
        { id: id.toUpperCase() },
        { email },
        { email: `  ${email.toUpperCase()} ` },
      ]) {
        const res = await getUser(query);
        expect([query, res.status]).toEqual([query, 200]);
        expect(res.body).toEqual({ queryType: 'GetUser', results: [expected], totalCount: 1 });
        const [item] = (res.body as ListingAnswer).results;
        expect(Object.keys(item ?? {})).toEqual([...USER_VIEW_MEMBERS]);
        expect(res.text).not.toMatch(/securityStamp|credential|personalDataKey|argon2|hash/i);
        expect(res.text).not.toContain(account.securityStamp);
      }
    });

    it('When the account changes, then GetUser shows it at once (no projection in between)', async () => {
      const [id = ''] = await createAccounts([{ email: `${newTag()}-change@example.com` }]);
      await changeAccount(subject.services, id, {
        type: 'DisableUser',
        data: { reason: 'audit', securityStamp: stamp() },
      });
      const res = await getUser({ id });
      expect(res.body).toMatchObject({ results: [{ id, disabled: true, version: 2 }], totalCount: 1 });
      expect(res.text).not.toContain('audit');
    });

    it('When the account does not exist or was deleted, then it answers the 404 listing, as GetFantasyTeam does for a missing team', async () => {
      const email = `${newTag()}-gone@example.com`;
      const [id = ''] = await createAccounts([{ email }]);
      expect((await getUser({ id })).status).toBe(200);
      await deleteUser(id);
      for (const query of [{ id }, { email }, { id: randomUUID() }, { email: 'nobody@example.com' }]) {
        const res = await getUser(query);
        expect([query, res.status, res.body]).toEqual([query, 404, NOT_FOUND_LISTING]);
      }
      // An id of another aggregate (a team's, say) is not an account either.
      expect((await getUser({ id: userIdForEmail('not-a-user@example.com') })).status).toBe(404);
    });

    it.each([
      [{}, { Query: ['Query must hold exactly one of [id, email]'] }],
      [
        { id: randomUUID(), email: 'a@example.com' },
        { Query: ['Query must hold exactly one of [id, email]'] },
      ],
      [{ id: 'not-a-guid' }, { Id: ['Id must be a GUID'] }],
      [{ email: 'not an e-mail' }, { Email: ['Email must be a valid email'] }],
      [{ email: 'a@example.com', userName: 'a' }, { UserName: ['UserName is not allowed'] }],
    ])('When the query is %j, then it answers the 400 validation problem %j', async (query, errors) => {
      const res = await getUser(query);
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ title: VALIDATION_TITLE, status: 400, errors });
    });
  });

  describe('ListUsers', () => {
    it('When accounts are listed a page at a time, then they come ordered by e-mail with the exact totalCount, each item as GetUser shows it', async () => {
      const tag = newTag();
      const names = [
        'mallory',
        'alice',
        'trent',
        'bob',
        'carol',
        'zoe',
        'dave',
        'erin',
        'frank',
        'peggy',
        'oscar',
        'Bob2',
      ];
      await createAccounts(names.map((name) => ({ email: `${tag}-${name}@example.com` })));
      const sorted = names.map((name) => `${tag}-${name.toLowerCase()}@example.com`).sort();
      await settled();

      const pages = [];
      for (const skip of [0, 5, 10, 15]) pages.push(await listed({ emailPrefix: tag }, { skip, take: 5 }));
      expect(pages.map((page) => page.totalCount)).toEqual([12, 12, 12, 12]);
      expect(pages.map(emailsOf)).toEqual([sorted.slice(0, 5), sorted.slice(5, 10), sorted.slice(10), []]);

      // Without skip and take: from the first, up to 100.
      expect(emailsOf(await listed({ emailPrefix: tag }))).toEqual(sorted);
      const [first] = pages[0]?.results ?? [];
      expect(Object.keys(first ?? {})).toEqual([...USER_VIEW_MEMBERS]);
      const fromRecord = await getUser({ id: first?.id });
      expect(fromRecord.body).toEqual({ queryType: 'GetUser', results: [first], totalCount: 1 });
    });

    it('When a page is asked for `after` an e-mail, then it starts after that e-mail (in any case), skip counts from there, and totalCount still counts every match', async () => {
      const tag = newTag();
      const names = ['amy', 'ben', 'cat', 'dan', 'eve', 'fay', 'gus'];
      await createAccounts(names.map((name) => ({ email: `${tag}-${name}@example.com` })));
      await settled();
      const at = (name: string) => `${tag}-${name}@example.com`;
      const after = async (envelope: object) => {
        const answer = await listed({ emailPrefix: tag }, envelope);
        return [emailsOf(answer), answer.totalCount];
      };
      expect(await after({ after: at('cat'), take: 2 })).toEqual([[at('dan'), at('eve')], 7]);
      expect(await after({ after: at('CAT').toUpperCase(), take: 2 })).toEqual([[at('dan'), at('eve')], 7]);
      expect(await after({ after: at('cat'), skip: 2, take: 2 })).toEqual([[at('fay'), at('gus')], 7]);
      // Not an account's e-mail: where it would sort.
      expect(await after({ after: `${tag}-c`, take: 1 })).toEqual([[at('cat')], 7]);
      expect(await after({ after: at('gus') })).toEqual([[], 7]);
      expect(await after({ after: 'a', take: 1 })).toEqual([[at('amy')], 7]);
      // Walking by `after` gives the pages skip gives.
      const walked: string[] = [];
      let last: string | undefined;
      for (let page = 0; page < 5; page++) {
        const answer = await listed(
          { emailPrefix: tag },
          last === undefined ? { take: 3 } : { take: 3, after: last },
        );
        walked.push(...emailsOf(answer));
        last = emailsOf(answer).at(-1) ?? last;
      }
      expect(walked).toEqual(names.map(at));
    });

    it('When filtering by role, userType, disabled and their combinations, then each listing holds exactly the matching accounts, roles as assigned', async () => {
      const tag = newTag();
      const at = (name: string) => `${tag}-${name}@example.com`;
      const ids = await createAccounts([
        { email: at('a-member') },
        { email: at('b-admin'), roles: ['Admin'] },
        { email: at('c-manager'), roles: ['UserManager', 'Member'] },
        { email: at('d-machine'), roles: ['ServiceAccount'], userType: 'ServiceAccount' },
        { email: at('e-machine-off'), roles: ['ServiceAccount'], userType: 'ServiceAccount' },
        { email: at('f-member-off') },
      ]);
      for (const id of [ids[4], ids[5]]) {
        await changeAccount(subject.services, id ?? '', {
          type: 'DisableUser',
          data: { reason: null, securityStamp: stamp() },
        });
      }
      await settled();
      const expectListing = async (filter: object, names: string[]) => {
        const answer = await listed({ emailPrefix: tag, ...filter });
        expect([filter, emailsOf(answer), answer.totalCount]).toEqual([filter, names.map(at), names.length]);
      };
      await expectListing({}, [
        'a-member',
        'b-admin',
        'c-manager',
        'd-machine',
        'e-machine-off',
        'f-member-off',
      ]);
      // Assigned roles: the Admin is not a Member here, though the hierarchy gives it Member's rights.
      await expectListing({ role: 'Member' }, ['a-member', 'c-manager', 'f-member-off']);
      await expectListing({ role: 'Admin' }, ['b-admin']);
      await expectListing({ role: 'UserManager' }, ['c-manager']);
      await expectListing({ userType: 'ServiceAccount' }, ['d-machine', 'e-machine-off']);
      await expectListing({ userType: 'Human' }, ['a-member', 'b-admin', 'c-manager', 'f-member-off']);
      await expectListing({ disabled: true }, ['e-machine-off', 'f-member-off']);
      await expectListing({ disabled: false }, ['a-member', 'b-admin', 'c-manager', 'd-machine']);
      await expectListing({ role: 'Member', disabled: false }, ['a-member', 'c-manager']);
      await expectListing({ role: 'ServiceAccount', userType: 'ServiceAccount', disabled: true }, [
        'e-machine-off',
      ]);
      await expectListing({ role: 'Admin', userType: 'ServiceAccount' }, []);
      // Paging within a filter counts the filter's matches.
      const page = await listed({ emailPrefix: tag, role: 'Member' }, { skip: 1, take: 1 });
      expect([emailsOf(page), page.totalCount]).toEqual([[at('c-manager')], 3]);
    });

    it('When an e-mail prefix is given in any case, then only the e-mails starting with it are listed and counted', async () => {
      const tag = newTag();
      await createAccounts(
        ['ann', 'anna', 'annabel', 'anne', 'bo', 'an'].map((name) => ({
          email: `${tag}-${name}@example.com`,
        })),
      );
      await settled();
      const answer = await listed({ emailPrefix: `${tag.toUpperCase()}-ANN` }, { take: 2 });
      expect(answer.totalCount).toBe(4);
      expect(emailsOf(answer)).toEqual([`${tag}-ann@example.com`, `${tag}-anna@example.com`]);
      // Pages of a range that does not start the set (`<tag>-an@` and others lie before it).
      const pageAt = async (skip: number) =>
        emailsOf(await listed({ emailPrefix: `${tag}-ann` }, { skip, take: 2 }));
      expect([await pageAt(2), await pageAt(3), await pageAt(4)]).toEqual([
        [`${tag}-annabel@example.com`, `${tag}-anne@example.com`],
        [`${tag}-anne@example.com`],
        [],
      ]);
      expect((await listed({ emailPrefix: `${tag}-anne@example.com` })).totalCount).toBe(1);
      expect((await listed({ emailPrefix: `${tag}-annz` })).totalCount).toBe(0);
      expect((await listed({ emailPrefix: `${tag}-b`, role: 'Member' })).totalCount).toBe(1);
    });

    it('When an account gets other roles, is disabled and enabled again, then it moves between the filtered listings', async () => {
      const tag = newTag();
      const [id = ''] = await createAccounts([{ email: `${tag}-mover@example.com` }]);
      const countFor = async (filter: object) => (await listed({ emailPrefix: tag, ...filter })).totalCount;
      const where = async () => ({
        member: await countFor({ role: 'Member' }),
        serviceAccount: await countFor({ role: 'ServiceAccount' }),
        enabled: await countFor({ disabled: false }),
        disabled: await countFor({ disabled: true }),
      });
      await settled();
      expect(await where()).toEqual({ member: 1, serviceAccount: 0, enabled: 1, disabled: 0 });

      await changeAccount(subject.services, id, {
        type: 'SetUserRoles',
        data: { roles: ['ServiceAccount'], securityStamp: stamp() },
      });
      await settled();
      expect(await where()).toEqual({ member: 0, serviceAccount: 1, enabled: 1, disabled: 0 });

      await changeAccount(subject.services, id, {
        type: 'DisableUser',
        data: { reason: null, securityStamp: stamp() },
      });
      await settled();
      expect(await where()).toEqual({ member: 0, serviceAccount: 1, enabled: 0, disabled: 1 });
      const [item] = (await listed({ emailPrefix: tag })).results;
      expect(item).toMatchObject({ roles: ['ServiceAccount'], disabled: true, version: 3 });

      await changeAccount(subject.services, id, { type: 'EnableUser', data: {} });
      await settled();
      expect(await where()).toEqual({ member: 0, serviceAccount: 1, enabled: 1, disabled: 0 });
    });

    it('When an account is deleted, then it leaves every listing and the projection keeps nothing of its e-mail or names', async () => {
      const tag = newTag();
      const email = `${tag}-erased@example.com`;
      const [id = ''] = await createAccounts([
        { email, roles: ['Member', 'UserManager'], firstName: `First${tag}`, lastName: `Last${tag}` },
        { email: `${tag}-kept@example.com` },
      ]);
      await settled();
      expect((await listed({ emailPrefix: tag })).totalCount).toBe(2);

      await deleteUser(id);
      await settled();
      const kept = [`${tag}-kept@example.com`];
      for (const [filter, expected] of [
        [{}, kept],
        [{ role: 'Member' }, kept],
        [{ role: 'UserManager' }, []],
        [{ disabled: false }, kept],
        [{ userType: 'Human' }, kept],
      ] as const) {
        const answer = await listed({ emailPrefix: tag, ...filter });
        expect([filter, emailsOf(answer), answer.totalCount]).toEqual([filter, expected, expected.length]);
      }
      const projection = JSON.stringify(
        await snapshotDocuments(subject.redis, subject.services.keys, usersProjection),
      );
      expect(projection).toContain(`${tag}-kept@example.com`);
      for (const personal of [email, `First${tag}`, `Last${tag}`, id])
        expect(projection).not.toContain(personal);
    });

    it.each([
      [{ query: {}, take: 1001 }, { Take: ['Take must be at most 1000'] }],
      [{ query: {}, take: 0 }, { Take: ['Take must be at least 1'] }],
      [{ query: {}, skip: -1 }, { Skip: ['Skip must be at least 0'] }],
      [{ query: {}, take: '10' }, { Take: ['Take must be a number'] }],
      [
        { query: { role: 'Public' } },
        { Role: ['Role must be one of: [Member, Admin, ServiceAccount, UserManager]'] },
      ],
      [
        { query: { role: 'admin' } },
        { Role: ['Role must be one of: [Member, Admin, ServiceAccount, UserManager]'] },
      ],
      [{ query: { userType: 'Robot' } }, { UserType: ['UserType must be one of: [Human, ServiceAccount]'] }],
      [{ query: { disabled: 'true' } }, { Disabled: ['Disabled must be true or false'] }],
      [{ query: { emailPrefix: '  ' } }, { EmailPrefix: ['EmailPrefix must not be empty'] }],
      [{ query: {}, after: '  ' }, { After: ['After must not be empty'] }],
      [{ query: {}, after: 7 }, { After: ['After must be a string'] }],
      [{ query: { email: 'a@example.com' } }, { Email: ['Email is not allowed'] }],
      [{ query: { sortBy: 'name' } }, { SortBy: ['SortBy is not allowed'] }],
    ])('When the body is %j, then it answers the 400 validation problem %j', async (body, errors) => {
      const { query, ...envelope } = body;
      const res = await listUsers(query, envelope);
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ title: VALIDATION_TITLE, status: 400, errors });
    });

    it('When the users projection is rebuilt from the log, then it holds the same keys and values and answers the same', async () => {
      const tag = newTag();
      const ids = await createAccounts(
        ['one', 'two', 'three', 'four'].map((name, i) => ({
          email: `${tag}-${name}@example.com`,
          roles: i % 2 ? (['ServiceAccount'] as AssignableRole[]) : ['Member', 'UserManager'],
        })),
      );
      await changeAccount(subject.services, ids[1] ?? '', {
        type: 'DisableUser',
        data: { reason: null, securityStamp: stamp() },
      });
      await changeAccount(subject.services, ids[2] ?? '', {
        type: 'SetUserRoles',
        data: { roles: ['Admin'], securityStamp: stamp() },
      });
      await deleteUser(ids[3] ?? '');
      await settled();
      const { keys } = subject.services;
      const answers = () =>
        Promise.all(
          [
            {},
            { emailPrefix: tag },
            { role: 'Member' },
            { disabled: true },
            { role: 'Admin', userType: 'Human' },
          ].map(async (filter) => (await listUsers(filter, { take: 1000 })).text),
        );
      const before = {
        keys: await snapshotDocuments(subject.redis, keys, usersProjection),
        answers: await answers(),
      };
      expect(Object.keys(before.keys).length).toBeGreaterThan(10);

      await rebuildProjection(subject.redis, keys, usersProjection);
      await settled();
      expect({
        keys: await snapshotDocuments(subject.redis, keys, usersProjection),
        answers: await answers(),
      }).toEqual(before);
    });
  });
});

describe('ListUsers over a whole table', () => {
  let subject: TestApp;
  let projector: Projector;

  beforeAll(async () => {
    ({ subject, projector } = await startSubject());
  });
  afterAll(async () => {
    await projector?.stop();
    await subject?.close();
  });

  it("When no filter is given, then every account of the deployment is listed by e-mail (byte order of the lower-case e-mail), and every key it wrote carries the deployment prefix and its account's partition tag", async () => {
    const admin = 'whole-admin@example.com';
    await subject.createUser({ email: admin, password: PASSWORD, roles: ['Admin'] });
    const emails = [
      'Zed@Example.com',
      'amy@example.com',
      'émile@example.com',
      'bob@example.org',
      'bob@example.com',
    ];
    for (const email of emails) {
      await subject.services.accounts.createUser(
        SYSTEM_ACTOR,
        { email, userType: 'Human', roles: ['Member'] },
        { requestId: null, correlationId: 'whole-table' },
      );
    }
    await eventually(() => caughtUp(subject.redis, subject.services.keys, [usersProjection]), 10_000, 20);
    const expected = [admin, ...emails.map((email) => email.toLowerCase())].sort((a, b) =>
      Buffer.compare(Buffer.from(a), Buffer.from(b)),
    );
    const res = await request(subject.app)
      .post('/api/readmodel')
      .set('Authorization', basic(admin))
      .send({ query: { queryType: 'ListUsers' }, take: 1000 });
    expect(res.status).toBe(200);
    const answer = res.body as ListingAnswer;
    expect([answer.results.map((user) => user.email), answer.totalCount]).toEqual([
      expected,
      expected.length,
    ]);

    // Every key the projection wrote carries the deployment's prefix and a partition's tag: a
    // document its account's, and nothing is left under the tag of the layout before ADR 0032.
    const { keys } = subject.services;
    const written: string[] = [];
    for (const pattern of usersProjection.keyPatterns(keys)) {
      for await (const found of scanKeys(subject.redis, pattern)) written.push(...found);
    }
    expect(written.length).toBeGreaterThan(expected.length);
    for (const key of written) expect(key).toMatch(new RegExp(`^${keys.prefix}\\{p(\\d|1[0-5])\\}:users:`));
    for (const user of answer.results) {
      expect(written).toContain(keys.users.user(user.id));
      expect(keys.users.user(user.id).startsWith(`${keys.prefix}{p${partitionOf(user.id)}}:`)).toBe(true);
    }
  });
});
