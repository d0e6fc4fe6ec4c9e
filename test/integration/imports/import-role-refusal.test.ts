/**
 * An import whose submitter lacks the importer's roles can only fail, at its first row: it is not
 * queued, none of its data stays in Redis, whatever its size, its rows are never validated (one
 * JSON parse is all it costs), and its record is kept IMPORT_REFUSED_RESULT_TTL_SECONDS (issue 29).
 */
import { randomUUID } from 'node:crypto';

import request from 'supertest';

import { DEFAULT_SEASON } from '../../../shared/fantasy-team/fantasy-team.commands';
import { IMPORT_DATA_NOT_VALIDATED, processImport } from '../../../shared/importers/import-processor';
import { importJobIdFor } from '../../../shared/importers/import-queue';
import { NO_AGGREGATE_ID } from '../../../shared/importers/importer';
import { seasonId } from '../../../shared/sport/sport.model';
import { createTestApp, type TestApp } from '../../helpers/app-fixture';
import { redisContents } from '../../helpers/redis-state';
import { userIdForEmail } from '../../helpers/user-ids';

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

  /** Text of `bytes` characters, opening with `marker`, for a field no schema would take. */
  const hugeText = (marker: string, bytes = 2 * 1024 * 1024) => marker + 'x'.repeat(bytes - marker.length);
  const platformGuid = randomUUID();
  const defaultSeason = seasonId(DEFAULT_SEASON);
  const hostileCases: {
    readonly name: string;
    readonly importerType: 'PlayerSeeding' | 'UserSeeding';
    readonly priority: 'High' | 'Normal';
    readonly importData: (marker: string) => Record<string, unknown>;
    readonly aggregateId: string;
  }[] = [
    {
      name: 'a PlayerSeeding whose first platformId is 2 MB long (High)',
      importerType: 'PlayerSeeding',
      priority: 'High',
      importData: (marker) => ({ players: [{ platformId: hugeText(marker), feedId: 1, fantasyId: 1 }] }),
      aggregateId: defaultSeason,
    },
    {
      name: 'a PlayerSeeding whose first platformId is 2 MB long (Normal)',
      importerType: 'PlayerSeeding',
      priority: 'Normal',
      importData: (marker) => ({ players: [{ platformId: hugeText(marker) }, { platformId: marker }] }),
      aggregateId: defaultSeason,
    },
    {
      name: 'a PlayerSeeding whose season is 2 MB long',
      importerType: 'PlayerSeeding',
      priority: 'High',
      importData: (marker) => ({ season: hugeText(marker), players: [{ platformId: 7 }] }),
      aggregateId: defaultSeason,
    },
    {
      name: 'a PlayerSeeding whose season is a lone UTF-16 surrogate',
      importerType: 'PlayerSeeding',
      priority: 'High',
      importData: (marker) => ({ season: '\ud800', players: marker }),
      aggregateId: defaultSeason,
    },
    {
      name: 'a PlayerSeeding whose first platformId is a GUID in upper case',
      importerType: 'PlayerSeeding',
      priority: 'High',
      importData: (marker) => ({
        season: '2031',
        players: [{ platformId: platformGuid.toUpperCase(), marker }],
      }),
      aggregateId: platformGuid,
    },
    {
      name: 'a UserSeeding whose first e-mail and names are 2 MB long (High)',
      importerType: 'UserSeeding',
      priority: 'High',
      importData: (marker) => ({
        users: [{ email: `${hugeText(marker)}@example.com`, firstName: hugeText(marker), roles: [marker] }],
      }),
      aggregateId: NO_AGGREGATE_ID,
    },
    {
      name: 'a UserSeeding whose first e-mail is 2 MB long (Normal)',
      importerType: 'UserSeeding',
      priority: 'Normal',
      importData: (marker) => ({ users: [{ email: `${hugeText(marker)}@example.com` }] }),
      aggregateId: NO_AGGREGATE_ID,
    },
  ];

  it.each(hostileCases)(
    'When a Member sends $name, then it fails for the role at a valid aggregate id and leaves a record under 4 KB, no job, and none of its text in Redis or the logs',
    async ({ importerType, priority, importData, aggregateId }) => {
      const marker = `hostile-${randomUUID()}`;
      const requestId = randomUUID();
      const res = await request(subject.app)
        .post('/api/import')
        .set('Authorization', basic(member.email, member.password))
        .send({ requestId, importerType, priority, importData: importData(marker) });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject(
        priority === 'High'
          ? { status: 'Failed', processedSynchronously: true }
          : { status: 'Pending', processedSynchronously: false },
      );

      const importJobId = importJobIdFor(memberId, requestId);
      const [command, required] =
        importerType === 'PlayerSeeding' ? ['SeedPlayer', 'Admin'] : ['CreateUser', 'UserManager, Admin'];
      const message = `Import failed at aggregate ${aggregateId}: User '${member.email}' (${memberId}) lacks required roles to execute ${command}Command. Required roles: [${required}]. User roles: [Member].`;
      expect(await subject.services.importResults.get(importJobId)).toMatchObject({
        status: 'Failed',
        errorCode: 'AGGREGATE_PROCESSING_FAILED',
        message,
        errorMessage: message,
        rowErrors: [],
      });
      const { keys } = subject.services;
      expect(await subject.redis.strlen(keys.importResult(importJobId))).toBeLessThan(4 * 1024);
      expect(await subject.redis.exists(keys.importProgress(importJobId))).toBe(0);
      expect(await subject.services.importQueue.queue.getJob(importJobId)).toBeUndefined();
      const contents = await redisContents(subject.redis, subject.config.redisKeyPrefix);
      expect(Object.entries(contents).filter(([, value]) => value.includes(marker))).toEqual([]);
      expect(subject.logs.text).not.toContain(marker);
    },
  );

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

  it('When a queued import holds data its schema refuses (never validated, its submitter once role-less), then the worker runs none of it, whatever the submitter holds now', async () => {
    const managerId = await subject.createUser({
      email: `role-refusal-manager-${randomUUID().slice(0, 8)}@example.com`,
      password: member.password,
      roles: ['UserManager'],
    });
    const importJobId = randomUUID();
    const requestId = randomUUID();
    const job = {
      importJobId,
      requestId,
      importerType: 'UserSeeding',
      priority: 'Normal',
      submitterUserId: managerId,
    } as const;
    await subject.services.importResults.createPending(
      { ...job, message: 'queued', processedSynchronously: false, total: 2 },
      new Date(),
    );
    const unchecked = `unchecked-${randomUUID().slice(0, 8)}@example.com`;

    const record = await processImport(
      {
        ...job,
        importData: {
          users: [
            { email: unchecked, userType: 'Human', roles: ['Member'] },
            { email: 'not an e-mail', userType: 'Robot', roles: ['Member'] },
          ],
        },
      },
      subject.services,
      subject.services.importResults,
      subject.config,
    );

    expect(record).toMatchObject({
      status: 'Failed',
      commandsExecuted: 0,
      errorMessage: IMPORT_DATA_NOT_VALIDATED,
    });
    expect((await subject.services.accounts.findWithCredential(unchecked)).account).toBeNull();
  });
});
