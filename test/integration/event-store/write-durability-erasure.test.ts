/**
 * With WRITE_DURABILITY=replicated, a DeleteUser whose WAIT finds no replica
 * in time answers 503 "may have taken effect" after its UserDeletedEvent was written on the master
 * (credential and personal-data key dropped). The erasure's second half (the account's teams passed
 * to its tombstone, its e-mail forgotten in import records and remembered answers) must not depend
 * on the client retrying: the account is erased, so its erasure must be complete.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { Redis } from 'ioredis';
import request from 'supertest';

import { type LocalRedis, startLocalRedis } from '../../../scripts/lib/redis-server';
import { fantasyTeamDecider } from '../../../shared/fantasy-team/fantasy-team.decider';
import { closeConnections } from '../../../shared/redis/connections';
import { createTestApp, onTestCluster, type TestApp } from '../../helpers/app-fixture';
import { eventually } from '../../helpers/processes';
import { passwordGrantToken } from '../../helpers/tokens';

const PASSWORD = 'durability-erasure-password';
const describeOnServer = onTestCluster() ? describe.skip : describe;

describeOnServer('An erasure answered 503 for want of a replica', () => {
  let master: LocalRedis;
  let replica: LocalRedis | undefined;
  let subject: TestApp | undefined;
  const replicaDir = mkdtempSync(path.join(os.tmpdir(), 'fts-erasure-replica-'));

  beforeAll(async () => {
    master = await startLocalRedis();
    replica = await startLocalRedis({
      extraArgs: ['--replicaof', '127.0.0.1', String(master.port), '--dir', replicaDir],
    });
    const reader = new Redis(replica.port, '127.0.0.1', { maxRetriesPerRequest: 1 });
    await eventually(
      async () => (await reader.info('replication')).includes('master_link_status:up'),
      20_000,
    );
    await closeConnections(reader);
  });
  afterAll(async () => {
    await subject?.close();
    await replica?.stop('SIGKILL');
    await master.stop();
    rmSync(replicaDir, { recursive: true, force: true });
  });

  it('When DeleteUser answers 503 unreplicated, then the account is erased and its team has passed to the tombstone anyway', async () => {
    subject = await createTestApp({
      REDIS_URL: master.url,
      REDIS_CLUSTER_NODES: '',
      WRITE_DURABILITY: 'replicated',
      WRITE_DURABILITY_TIMEOUT_MS: '100',
    });
    const app = subject;
    const admin = `erasure-admin-${randomUUID().slice(0, 8)}@example.com`;
    const member = `erasure-member-${randomUUID().slice(0, 8)}@example.com`;
    await app.createUser({ email: admin, password: PASSWORD, roles: ['Admin'] });
    const memberId = await app.createUser({ email: member, password: PASSWORD, roles: ['Member'] });
    const memberToken = await passwordGrantToken(app.app, member, PASSWORD);
    const adminToken = await passwordGrantToken(app.app, admin, PASSWORD);
    const teamId = randomUUID();
    const created = await request(app.app)
      .post('/api/command')
      .set('Authorization', `Bearer ${memberToken}`)
      .send({
        commandType: 'CreateFantasyTeam',
        command: { aggregateRootId: teamId, name: 'Gone' },
        requestId: randomUUID(),
      });
    expect(created.status).toBe(200);

    await replica?.stop('SIGKILL');
    replica = undefined;
    const deleted = await request(app.app)
      .post('/api/command')
      .set('Authorization', `Bearer ${adminToken}`)
      .send({ commandType: 'DeleteUser', command: { aggregateRootId: memberId }, requestId: randomUUID() });
    expect(deleted.status).toBe(503);

    // The account is erased on the master (the event was written)...
    expect(await app.services.accounts.findById(memberId)).toBeNull();
    // ...so its erasure must be complete without a retry: the team no longer names the account.
    const { state } = await app.services.store.loadRecord(
      fantasyTeamDecider.aggregateType,
      teamId,
      fantasyTeamDecider.initialState,
    );
    expect(state?.ownerUserId).not.toBe(memberId);
  });
});
