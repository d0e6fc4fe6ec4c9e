/**
 * WRITE_DURABILITY on one Redis server with a replica of its own (ADR 0021): `replicated` answers a
 * command 200 only once the replica has its events, and the 503 that names the requestId when no
 * replica confirms them in time; the retry with that requestId answers 200 once the replica is
 * back, without a second event. `local` answers without asking. The cluster's failover, with its
 * own masters and replicas, is test/faults/failover.test.ts.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { Redis } from 'ioredis';
import request from 'supertest';

import { type LocalRedis, startLocalRedis } from '../../scripts/lib/redis-server';
import { closeConnections } from '../../shared/redis/connections';
import { createTestApp, onTestCluster, type TestApp } from '../helpers/app-fixture';
import { eventually } from '../helpers/processes';
import { passwordGrantToken } from '../helpers/tokens';

const TEAM = 'fantasy-team';
const PASSWORD = 'write-durability-password';

// Servers of its own, the same on both runs: the cluster run need not repeat it.
const describeOnServer = onTestCluster() ? describe.skip : describe;

describeOnServer('WRITE_DURABILITY on a Redis server with a replica', () => {
  let master: LocalRedis;
  let replica: LocalRedis | undefined;
  let replicaReader: Redis | undefined;
  const apps: TestApp[] = [];
  // A replica writes the RDB of its first sync to its directory: a temporary one, not the checkout.
  const replicaDir = mkdtempSync(path.join(os.tmpdir(), 'fts-replica-'));

  /** A replica of `master` on `port` (a free one when 0), its first sync done. */
  async function startReplica(port = 0): Promise<void> {
    replica = await startLocalRedis({
      port,
      extraArgs: ['--replicaof', '127.0.0.1', String(master.port), '--dir', replicaDir],
    });
    replicaReader = new Redis(replica.port, '127.0.0.1', { maxRetriesPerRequest: 1 });
    const reader = replicaReader;
    await eventually(
      async () => (await reader.info('replication')).includes('master_link_status:up'),
      20_000,
    );
  }

  async function stopReplica(): Promise<number> {
    const port = replica?.port ?? 0;
    await closeConnections(...(replicaReader ? [replicaReader] : []));
    await replica?.stop('SIGKILL');
    replica = undefined;
    replicaReader = undefined;
    return port;
  }

  beforeAll(async () => {
    master = await startLocalRedis();
    await startReplica();
  });
  afterAll(async () => {
    await Promise.all(apps.map((app) => app.close()));
    await stopReplica();
    await master.stop();
    rmSync(replicaDir, { recursive: true, force: true });
  });

  /** The app on the private master with `durability`, and a Member's bearer token. */
  async function appWith(durability: 'local' | 'replicated') {
    const subject = await createTestApp({
      REDIS_URL: master.url,
      REDIS_CLUSTER_NODES: '',
      WRITE_DURABILITY: durability,
      WRITE_DURABILITY_TIMEOUT_MS: '200',
    });
    apps.push(subject);
    const email = `durability-${randomUUID().slice(0, 8)}@example.com`;
    await subject.createUser({ email, password: PASSWORD });
    const token = await passwordGrantToken(subject.app, email, PASSWORD);
    const send = (body: object) =>
      request(subject.app).post('/api/command').set('Authorization', `Bearer ${token}`).send(body);
    const streamKey = (teamId: string) => subject.services.keys.aggregateStream(TEAM, teamId);
    return { subject, send, streamKey };
  }

  const create = (teamId: string, requestId = randomUUID()) => ({
    commandType: 'CreateFantasyTeam',
    command: { aggregateRootId: teamId, name: 'Durable' },
    requestId,
  });

  it('With replicated, when a replica is up, then a command answered 200 is on the replica already', async () => {
    const { send, streamKey } = await appWith('replicated');
    const teamId = randomUUID();

    const answer = await send(create(teamId));

    expect(answer.status).toBe(200);
    expect(await replicaReader?.xlen(streamKey(teamId))).toBe(1);
  });

  it('With replicated, when no replica confirms in time, then the 503 problem says the command may have taken effect and names the requestId, and the retry with it answers 200 once a replica is back, with one event', async () => {
    const { subject, send, streamKey } = await appWith('replicated');
    const teamId = randomUUID();
    const requestId = randomUUID();
    const port = await stopReplica();
    try {
      const unconfirmed = await send(create(teamId, requestId));

      expect(unconfirmed.status).toBe(503);
      expect(unconfirmed.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(unconfirmed.headers['retry-after']).toBe('1');
      expect(unconfirmed.body).toMatchObject({
        status: 503,
        title: 'Service Unavailable',
        detail: `No Redis replica confirmed the command in time (WRITE_DURABILITY=replicated): the command may have taken effect. Send it again with the same requestId ${requestId} to learn its outcome; it is applied at most once.`,
      });
      // It did take effect on the master.
      expect(await subject.redis.xlen(streamKey(teamId))).toBe(1);
      // Retried while still no replica confirms: the same 503, and still one event.
      expect((await send(create(teamId, requestId))).status).toBe(503);
    } finally {
      await startReplica(port);
    }

    const retried = await send(create(teamId, requestId));

    expect(retried.status).toBe(200);
    expect(retried.body).toEqual({
      requestId,
      success: true,
      eventCount: 1,
      commandType: 'CreateFantasyTeam',
      version: 1,
    });
    expect(await subject.redis.xlen(streamKey(teamId))).toBe(1);
    expect(await replicaReader?.xlen(streamKey(teamId))).toBe(1);
  });

  it('With replicated, when a command without a requestId is not confirmed, then the 503 problem says a resend could apply it twice', async () => {
    const { send } = await appWith('replicated');
    const port = await stopReplica();
    try {
      const { requestId: _omitted, ...body } = create(randomUUID());

      const unconfirmed = await send(body);

      expect(unconfirmed.status).toBe(503);
      expect(unconfirmed.body.detail).toBe(
        'No Redis replica confirmed the command in time (WRITE_DURABILITY=replicated): the command may have taken effect. It carried no requestId, so sending it again could apply it twice: read the team first.',
      );
    } finally {
      await startReplica(port);
    }
  });

  it('With local (the default), when no replica is up, then a command is answered 200 as soon as the master has it', async () => {
    const { subject, send, streamKey } = await appWith('local');
    const teamId = randomUUID();
    const port = await stopReplica();
    try {
      const answer = await send(create(teamId));

      expect(answer.status).toBe(200);
      expect(await subject.redis.xlen(streamKey(teamId))).toBe(1);
    } finally {
      await startReplica(port);
    }
  });
});
