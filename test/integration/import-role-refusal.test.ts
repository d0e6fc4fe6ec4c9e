/**
 * An import whose submitter lacks the importer's roles can only fail, at its first row: it is not
 * queued, none of its data stays in Redis, whatever its size, its rows are never validated (one
 * JSON parse is all it costs), and its record is kept IMPORT_REFUSED_RESULT_TTL_SECONDS (issue 29).
 */
import { randomUUID } from 'node:crypto';

import request from 'supertest';

import { userIdForEmail } from '../../shared/domain/user/user-id';
import { importJobIdFor } from '../../shared/importers/import-queue';
import { createTestApp, type TestApp } from '../helpers/app-fixture';
import { redisContents } from '../helpers/redis-state';

const basic = (email: string, password: string) =>
  `Basic ${Buffer.from(`${email}:${password}`).toString('base64')}`;

describe('Imports of a submitter without the importer roles', () => {
  let subject: TestApp;
  let memberId: string;
  const member = { email: 'role-refusal-member@example.com', password: 'role-refusal-password' };

  beforeAll(async () => {
    subject = await createTestApp();
    memberId = await subject.createUser({ ...member, roles: ['Member'] });
  });
  afterAll(async () => {
    await subject.services.importQueue.close();
    await subject.close();
  });

  it('When a Member queues a large UserSeeding, then the answer is the queued one, nothing is queued, no row is kept in Redis, and the record says the role is missing', async () => {
    const requestId = randomUUID();
    const marker = `refused-row-${randomUUID().slice(0, 8)}`;
    const users = Array.from({ length: 2_000 }, (_, i) => ({
      email: `${marker}-${i}@example.com`,
      userType: 'Human',
      roles: ['Member'],
    }));
    const res = await request(subject.app)
      .post('/api/import')
      .set('Authorization', basic(member.email, member.password))
      .send({ requestId, importerType: 'UserSeeding', priority: 'Normal', importData: { users } });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'Pending', processedSynchronously: false });

    const importJobId = importJobIdFor(memberId, requestId);
    expect(res.body.importJobId).toBe(importJobId);
    expect(await subject.services.importQueue.queue.getJob(importJobId)).toBeUndefined();

    const result = await request(subject.app)
      .post('/api/readmodel')
      .set('Authorization', basic(member.email, member.password))
      .send({ query: { queryType: 'GetImportJobResult', importJobId } });
    expect(result.status).toBe(200);
    expect(result.body.results[0]).toMatchObject({
      status: 'Failed',
      errorCode: 'AGGREGATE_PROCESSING_FAILED',
      success: false,
    });
    expect(result.body.results[0].errorMessage).toMatch(/lacks required roles to execute CreateUserCommand/);

    const contents = await redisContents(subject.redis, subject.config.redisKeyPrefix);
    expect(JSON.stringify(contents)).not.toContain(marker);
  });

  /** A High UserSeeding of `users` sent by the Member; the import queue of this app stays idle. */
  const memberImport = (users: unknown[], extra: Record<string, unknown> = {}) =>
    request(subject.app)
      .post('/api/import')
      .set('Authorization', basic(member.email, member.password))
      .send({
        requestId: randomUUID(),
        importerType: 'UserSeeding',
        priority: 'High',
        importData: { users },
        ...extra,
      });

  it('When a Member sends a UserSeeding whose rows the schema refuses, then it is still accepted and fails at its first row for the role: the rows of a role-less import are never validated', async () => {
    const first = `unvalidated-${randomUUID().slice(0, 8)}@example.com`;
    const users = [
      { email: first, userType: 'Martian', roles: ['Overlord'], firstName: 42 },
      ...Array.from({ length: 50 }, () => ({ userType: 'Human', roles: 'not-a-list' })),
    ];
    const res = await memberImport(users);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      status: 'Failed',
      processedSynchronously: true,
      success: false,
      commandsExecuted: 0,
      errorCode: 'AGGREGATE_PROCESSING_FAILED',
      errorMessage: `Import failed at aggregate ${userIdForEmail(first)}: User '${member.email}' (${memberId}) lacks required roles to execute CreateUserCommand. Required roles: [UserManager, Admin]. User roles: [Member].`,
    });
  });

  it("When a Member's import is refused for the role, then its record is kept IMPORT_REFUSED_RESULT_TTL_SECONDS (24 h), not the 30 days of IMPORT_RESULT_TTL_SECONDS", async () => {
    const res = await memberImport([
      { email: `ttl-${randomUUID().slice(0, 8)}@example.com`, userType: 'Human', roles: ['Member'] },
    ]);
    expect(res.body).toMatchObject({ status: 'Failed', errorCode: 'AGGREGATE_PROCESSING_FAILED' });
    expect(subject.config.imports.resultTtlSeconds).toBe(30 * 86_400);
    const ttl = await subject.redis.ttl(subject.services.keys.importResult(res.body.importJobId as string));
    expect(ttl).toBeGreaterThan(86_400 - 60);
    expect(ttl).toBeLessThanOrEqual(86_400);
  });

  it('When a UserManager sends the same rows the schema refuses, then it gets the 400 naming them: only a role-less import skips the row checks', async () => {
    const manager = {
      email: `role-refusal-manager-${randomUUID().slice(0, 8)}@example.com`,
      password: member.password,
    };
    await subject.createUser({ ...manager, roles: ['UserManager'] });
    const res = await request(subject.app)
      .post('/api/import')
      .set('Authorization', basic(manager.email, manager.password))
      .send({
        requestId: randomUUID(),
        importerType: 'UserSeeding',
        priority: 'High',
        importData: { users: [{ email: 'x@example.com', userType: 'Martian', roles: ['Member'] }] },
      });
    expect(res.status).toBe(400);
    expect(Object.keys((res.body as { errors: object }).errors)).toEqual(['Users[0].UserType']);
  });
});
