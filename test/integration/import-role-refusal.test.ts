/**
 * An import whose submitter lacks the importer's roles can only fail, at its first row: it is not
 * queued, and none of its data stays in Redis, whatever its size.
 */
import { randomUUID } from 'node:crypto';

import request from 'supertest';

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
});
