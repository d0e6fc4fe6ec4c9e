/**
 * Who may grant which role, and the minimum password length of new accounts, over HTTP: an
 * escalation by import (an Admin seeds a UserManager, the UserManager seeds an Admin) must fail
 * before any account is created.
 */
import { randomUUID } from 'node:crypto';

import request from 'supertest';

import { bootstrapAdmin } from '../../../ingress/auth/bootstrap-admin';
import { SYSTEM_ACTOR } from '../../../shared/accounts/account';
import { MIN_PASSWORD_LENGTH } from '../../../shared/user/password-policy';
import { createTestApp, type TestApp } from '../../helpers/app-fixture';
import { userIdForEmail } from '../../helpers/user-ids';

const ADMIN = { email: 'grants-admin@example.com', password: 'grants-admin-password' };
const basic = (email: string, password: string) =>
  `Basic ${Buffer.from(`${email}:${password}`).toString('base64')}`;

describe('Who may grant which role', () => {
  let subject: TestApp;
  let manager: { email: string; password: string; userId: string };

  beforeAll(async () => {
    subject = await createTestApp({ ADMIN_EMAIL: ADMIN.email, ADMIN_PASSWORD: ADMIN.password });
    // The bootstrap path gives role Admin as the system: it must keep working under the grant rule.
    await bootstrapAdmin(subject.config, subject.services.accounts, subject.logger);
    manager = {
      email: `um-${randomUUID().slice(0, 8)}@example.com`,
      password: 'user-manager-password',
      userId: '',
    };
    manager.userId = userIdForEmail(manager.email);
    // As reported: the Admin seeds um@... with role UserManager, through the API.
    const seeded = await importAs(ADMIN, [
      { email: manager.email, userType: 'Human', roles: ['UserManager'], password: manager.password },
    ]);
    expect(seeded.body).toMatchObject({ status: 'Completed', commandsExecuted: 1 });
  });
  afterAll(async () => {
    await subject.services.importQueue.close();
    await subject.close();
  });

  function importAs(
    submitter: { email: string; password: string },
    users: object[],
    extra: object = {},
  ): Promise<request.Response> {
    return request(subject.app)
      .post('/api/import')
      .set('Authorization', basic(submitter.email, submitter.password))
      .send({
        requestId: randomUUID(),
        importerType: 'UserSeeding',
        priority: 'High',
        importData: { enabled: true, skipIfUsersExist: false, users },
        ...extra,
      });
  }
  const currentUser = (email: string, password: string) =>
    request(subject.app)
      .post('/api/readmodel')
      .set('Authorization', basic(email, password))
      .send({ query: { queryType: 'CurrentUser' } });
  const refusal = (role: string) =>
    `User '${manager.email}' (${manager.userId}) may not grant role ${role}. Grantable roles: [Member].`;

  it('When a UserManager seeds a user with role Admin (High), then the import Fails with the grant message, the row is named and no account exists', async () => {
    const rogue = {
      email: `rogue-${randomUUID().slice(0, 8)}@example.com`,
      password: 'rogue-admin-password',
    };
    const honest = `honest-${randomUUID().slice(0, 8)}@example.com`;
    const rogueId = userIdForEmail(rogue.email);

    const res = await importAs(manager, [
      { email: honest, userType: 'Human', roles: ['Member'], password: 'honest-member-password' },
      { email: rogue.email, userType: 'Human', roles: ['Admin'], password: rogue.password },
    ]);

    expect(res.status).toBe(200);
    const message = `Import failed at aggregate ${rogueId}: ${refusal('Admin')}`;
    expect(res.body).toMatchObject({
      status: 'Failed',
      success: false,
      errorCode: 'AGGREGATE_PROCESSING_FAILED',
      errorMessage: message,
      message,
      commandsExecuted: 0,
      eventsGenerated: 0,
      processedSynchronously: true,
    });
    expect(res.body.rowErrors).toEqual([{ index: 1, code: 'ROLE_NOT_GRANTABLE', message: refusal('Admin') }]);
    // No account by this import, not even the row the submitter may grant.
    expect(await subject.services.accounts.findById(rogueId)).toBeNull();
    expect(await subject.services.accounts.findById(userIdForEmail(honest))).toBeNull();
    const me = await currentUser(rogue.email, rogue.password);
    expect(me.status).toBe(401);
    // The job's record says the same to its submitter.
    const job = await request(subject.app)
      .post('/api/readmodel')
      .set('Authorization', basic(manager.email, manager.password))
      .send({ query: { queryType: 'GetImportJobResult', importJobId: res.body.importJobId } });
    expect(job.body.results[0]).toMatchObject({ status: 'Failed', errorMessage: message });
  });

  it('When a UserManager seeds a UserManager, then it Fails the same way', async () => {
    const email = `peer-${randomUUID().slice(0, 8)}@example.com`;
    const res = await importAs(manager, [
      { email, userType: 'Human', roles: ['Member', 'UserManager'], password: 'peer-manager-password' },
    ]);
    expect(res.body).toMatchObject({
      status: 'Failed',
      errorCode: 'AGGREGATE_PROCESSING_FAILED',
      errorMessage: `Import failed at aggregate ${userIdForEmail(email)}: ${refusal('UserManager')}`,
    });
    expect(await subject.services.accounts.findById(userIdForEmail(email))).toBeNull();
  });

  it('When the same batch is a dry run, then the dry run reports the refusal and creates nothing', async () => {
    const email = `dry-${randomUUID().slice(0, 8)}@example.com`;
    const res = await importAs(manager, [{ email, userType: 'Human', roles: ['Admin'] }], { dryRun: true });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      status: 'Failed',
      success: false,
      errorCode: 'AGGREGATE_PROCESSING_FAILED',
      errorMessage: `Import failed at aggregate ${userIdForEmail(email)}: ${refusal('Admin')}`,
    });
    expect(res.body.rowErrors).toEqual([expect.objectContaining({ index: 0, code: 'ROLE_NOT_GRANTABLE' })]);
    expect(await subject.services.accounts.findById(userIdForEmail(email))).toBeNull();
  });

  it('When a UserManager seeds a ServiceAccount, then the import Fails with the grant message and no account exists (a ServiceAccount reads what a UserManager may not)', async () => {
    const member = `m-${randomUUID().slice(0, 8)}@example.com`;
    const service = `s-${randomUUID().slice(0, 8)}@example.com`;
    const res = await importAs(manager, [
      { email: member, userType: 'Human', roles: ['Member'], password: 'seeded-member-password' },
      {
        email: service,
        userType: 'ServiceAccount',
        roles: ['ServiceAccount'],
        password: 'seeded-service-password',
      },
    ]);
    const message = `Import failed at aggregate ${userIdForEmail(service)}: ${refusal('ServiceAccount')}`;
    expect(res.body).toMatchObject({
      status: 'Failed',
      success: false,
      errorCode: 'AGGREGATE_PROCESSING_FAILED',
      errorMessage: message,
      commandsExecuted: 0,
    });
    expect(res.body.rowErrors).toEqual([
      { index: 1, code: 'ROLE_NOT_GRANTABLE', message: refusal('ServiceAccount') },
    ]);
    expect(await subject.services.accounts.findById(userIdForEmail(service))).toBeNull();
    expect(await subject.services.accounts.findById(userIdForEmail(member))).toBeNull();
  });

  it('When a UserManager seeds Members, then they are created and sign in', async () => {
    const member = { email: `m-${randomUUID().slice(0, 8)}@example.com`, password: 'seeded-member-password' };
    const res = await importAs(manager, [{ ...member, userType: 'Human', roles: ['Member'] }]);
    expect(res.body).toMatchObject({ status: 'Completed', commandsExecuted: 1 });
    expect((await currentUser(member.email, member.password)).body.data[0].roles).toEqual(['Member']);
  });

  it('When an Admin seeds a ServiceAccount, then it is created and reads GetMappedPlayers by Basic (the spec flow)', async () => {
    const service = {
      email: `s-${randomUUID().slice(0, 8)}@example.com`,
      password: 'seeded-service-password',
    };
    const res = await importAs(ADMIN, [
      { ...service, userType: 'ServiceAccount', roles: ['ServiceAccount'] },
    ]);
    expect(res.body).toMatchObject({ status: 'Completed', commandsExecuted: 1 });
    const players = await request(subject.app)
      .post('/api/readmodel')
      .set('Authorization', basic(service.email, service.password))
      .send({ query: { queryType: 'GetMappedPlayers' }, skip: 0, take: 1 });
    expect(players.status).toBe(200);
  });

  it('When an Admin seeds an Admin, then it is created', async () => {
    const email = `admin2-${randomUUID().slice(0, 8)}@example.com`;
    const res = await importAs(ADMIN, [{ email, userType: 'Human', roles: ['Admin'] }]);
    expect(res.body).toMatchObject({ status: 'Completed', commandsExecuted: 1 });
  });

  it('When AccountService.createUser is asked by a UserManager for an Admin, then it refuses too (not only the importer), and the system actor may', async () => {
    const actor = { userId: manager.userId, email: manager.email, roles: ['UserManager'] };
    const email = `direct-${randomUUID().slice(0, 8)}@example.com`;
    const refused = await subject.services.accounts.createUser(
      actor,
      { email, userType: 'Human', roles: ['Admin'] },
      { requestId: null, correlationId: randomUUID() },
    );
    expect(refused).toEqual({
      status: 'forbidden',
      userId: userIdForEmail(email),
      message: refusal('Admin'),
    });
    expect(await subject.services.accounts.findById(userIdForEmail(email))).toBeNull();
    const bySystem = await subject.services.accounts.createUser(
      SYSTEM_ACTOR,
      { email, userType: 'Human', roles: ['Admin'] },
      { requestId: null, correlationId: randomUUID() },
    );
    expect(bySystem.status).toBe('created');
  });

  it('When the bootstrap admin was created under the rule, then it signs in with role Admin', async () => {
    const me = await currentUser(ADMIN.email, ADMIN.password);
    expect(me.status).toBe(200);
    expect(me.body.data[0].roles).toEqual(['Admin']);
  });
});

describe('Minimum password length for new accounts', () => {
  let subject: TestApp;
  const admin = { email: 'pw-admin@example.com', password: 'pw-admin-password' };

  beforeAll(async () => {
    subject = await createTestApp();
    await subject.createUser({ ...admin, roles: ['Admin'] });
  });
  afterAll(async () => {
    await subject.services.importQueue.close();
    await subject.close();
  });

  const seed = (password: string, email = `pw-${randomUUID().slice(0, 8)}@example.com`) =>
    request(subject.app)
      .post('/api/import')
      .set('Authorization', basic(admin.email, admin.password))
      .send({
        requestId: randomUUID(),
        importerType: 'UserSeeding',
        priority: 'High',
        importData: { users: [{ email, userType: 'Human', roles: ['Member'], password }] },
      });

  it(`When a seeded password has ${MIN_PASSWORD_LENGTH - 1} characters, then a 400 problem names the field and nothing is stored`, async () => {
    const email = `short-${randomUUID().slice(0, 8)}@example.com`;
    const res = await seed('x'.repeat(MIN_PASSWORD_LENGTH - 1), email);
    expect(res.status).toBe(400);
    expect(res.body.errors).toEqual({
      'Users[0].Password': [
        `Users[0].Password length must be at least ${MIN_PASSWORD_LENGTH} characters long`,
      ],
    });
    expect(await subject.services.accounts.findById(userIdForEmail(email))).toBeNull();
  });

  it(`When a seeded password has ${MIN_PASSWORD_LENGTH} characters, then the account is created and signs in`, async () => {
    const email = `ok-${randomUUID().slice(0, 8)}@example.com`;
    const password = 'p'.repeat(MIN_PASSWORD_LENGTH);
    expect((await seed(password, email)).body).toMatchObject({ status: 'Completed' });
    const me = await request(subject.app)
      .post('/api/readmodel')
      .set('Authorization', basic(email, password))
      .send({ query: { queryType: 'CurrentUser' } });
    expect(me.status).toBe(200);
  });

  it('When an account made earlier has a shorter password, then it still signs in (sign-in checks no length)', async () => {
    const email = `legacy-${randomUUID().slice(0, 8)}@example.com`;
    await subject.createUser({ email, password: 'short-pw' });
    const me = await request(subject.app)
      .post('/api/readmodel')
      .set('Authorization', basic(email, 'short-pw'))
      .send({ query: { queryType: 'CurrentUser' } });
    expect(me.status).toBe(200);
  });
});
