/**
 * Imports: a requestId belongs to its caller. Two accounts sending the same
 * requestId get two independent jobs; neither sees the other's record, nor takes its id.
 */
import { randomUUID } from 'node:crypto';

import request from 'supertest';

import { importJobIdFor } from '../../../shared/importers/import-queue';
import { createTestApp, type TestApp } from '../../helpers/app-fixture';
import { userIdForEmail } from '../../helpers/user-ids';

const basic = (email: string, password: string) =>
  `Basic ${Buffer.from(`${email}:${password}`).toString('base64')}`;

describe('Import request ids are scoped by the submitter', () => {
  let subject: TestApp;
  const owner = { email: 'rid-owner@example.com', password: 'rid-owner-password' };
  const other = { email: 'rid-other@example.com', password: 'rid-other-password' };
  const existing = 'rid-existing-user@example.com';

  beforeAll(async () => {
    subject = await createTestApp();
    await subject.createUser({ ...owner, roles: ['UserManager'] });
    await subject.createUser({ ...other, roles: ['UserManager'] });
    await subject.createUser({ email: existing, password: 'rid-existing-password' });
  });
  afterAll(async () => {
    await subject.services.importQueue.close();
    await subject.close();
  });

  const submit = (
    caller: { email: string; password: string },
    requestId: string,
    users: object[],
    priority = 'High',
  ) =>
    request(subject.app)
      .post('/api/import')
      .set('Authorization', basic(caller.email, caller.password))
      .send({
        requestId,
        importerType: 'UserSeeding',
        priority,
        importData: { enabled: true, skipIfUsersExist: false, users },
      });
  const jobResult = (caller: { email: string; password: string }, importJobId: string) =>
    request(subject.app)
      .post('/api/readmodel')
      .set('Authorization', basic(caller.email, caller.password))
      .send({ query: { queryType: 'GetImportJobResult', importJobId } });
  const freshUser = (tag: string) => ({
    email: `rid-${tag}-${randomUUID().slice(0, 8)}@example.com`,
    userType: 'Human',
    roles: ['Member'],
  });

  it("When a second account resends the owner's requestId, then it gets its own job, none of the owner's record (no e-mails, no error text), and the owner's resend still answers the owner's job", async () => {
    const requestId = randomUUID();
    // The owner's import fails on an existing e-mail: its record holds the existing account's id
    // and the error (a row is named by its index, never its e-mail: ADR 0014).
    const first = await submit(owner, requestId, [{ email: existing, userType: 'Human', roles: ['Member'] }]);
    expect(first.body).toMatchObject({ status: 'Failed', errorCode: 'AGGREGATE_PROCESSING_FAILED' });
    expect(first.text).toContain(userIdForEmail(existing));
    expect(first.text).not.toContain(existing);

    const mine = freshUser('other');
    const second = await submit(other, requestId, [mine]);

    expect(second.status).toBe(200);
    expect(second.body.importJobId).not.toBe(first.body.importJobId);
    expect(second.body.importJobId).toBe(importJobIdFor(userIdForEmail(other.email), requestId));
    expect(second.body).toMatchObject({ requestId, status: 'Completed', commandsExecuted: 1, rowErrors: [] });
    expect(second.text).not.toContain(userIdForEmail(existing));
    expect(second.text).not.toContain('User already exists');
    expect(await subject.services.accounts.findById(userIdForEmail(mine.email))).not.toBeNull();

    // The owner's resend answers the owner's first job, unchanged.
    const resent = await submit(owner, requestId, [freshUser('ignored')]);
    expect(resent.body).toEqual(first.body);
    // And each reads only its own record.
    expect((await jobResult(other, first.body.importJobId)).status).toBe(404);
    expect((await jobResult(owner, second.body.importJobId)).status).toBe(404);
    expect((await jobResult(owner, first.body.importJobId)).body.results[0].rowErrors).toEqual([
      { index: 0, code: 'USER_EXISTS', message: 'User already exists' },
    ]);
  });

  it('When another account sends a requestId first, then the owner sending it later still gets a fresh job of its own (the id is not poisoned)', async () => {
    const requestId = randomUUID();
    const squatter = await submit(other, requestId, [
      { email: existing, userType: 'Human', roles: ['Member'] },
    ]);
    expect(squatter.body.status).toBe('Failed');

    const mine = freshUser('owner');
    const res = await submit(owner, requestId, [mine]);
    expect(res.body).toMatchObject({ requestId, status: 'Completed', commandsExecuted: 1 });
    expect(res.body.importJobId).not.toBe(squatter.body.importJobId);
    expect(res.text).not.toContain(existing);
  });

  it('When the owner queued a Normal import and another account sends its requestId, then the other gets a Pending job of its own, with its own id', async () => {
    const requestId = randomUUID();
    const queued = await submit(owner, requestId, [freshUser('queued')], 'Normal');
    expect(queued.body).toMatchObject({ status: 'Pending' });
    const second = await submit(other, requestId, [freshUser('queued-other')], 'Normal');
    expect(second.body).toMatchObject({ status: 'Pending' });
    expect(second.body.importJobId).not.toBe(queued.body.importJobId);
    const jobs = await Promise.all(
      [queued, second].map((res) => subject.services.importQueue.queue.getJob(res.body.importJobId)),
    );
    expect(jobs.map((job) => job?.data.submitterUserId)).toEqual([
      userIdForEmail(owner.email),
      userIdForEmail(other.email),
    ]);
  });
});
