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

import { type LocalRedis, startLocalRedis } from '../../../scripts/lib/redis-server';
import { ReplicaConfirmation } from '../../../shared/event-store/write-durability';
import { closeConnections } from '../../../shared/redis/connections';
import { createTestApp, onTestCluster, type TestApp } from '../../helpers/app-fixture';
import { parseExposition, sampleSum } from '../../helpers/metrics';
import { eventually } from '../../helpers/processes';
import { passwordGrantToken } from '../../helpers/tokens';

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
  async function appWith(durability: 'local' | 'replicated', timeoutMs = 200) {
    const subject = await createTestApp({
      REDIS_URL: master.url,
      REDIS_CLUSTER_NODES: '',
      WRITE_DURABILITY: durability,
      WRITE_DURABILITY_TIMEOUT_MS: String(timeoutMs),
    });
    apps.push(subject);
    const email = `durability-${randomUUID().slice(0, 8)}@example.com`;
    await subject.createUser({ email, password: PASSWORD });
    const token = await passwordGrantToken(subject.app, email, PASSWORD);
    const send = (body: object) =>
      request(subject.app).post('/api/command').set('Authorization', `Bearer ${token}`).send(body);
    const read = (query: object) =>
      request(subject.app).post('/api/readmodel').set('Authorization', `Bearer ${token}`).send({ query });
    const streamKey = (teamId: string) => subject.services.keys.aggregateStream(TEAM, teamId);
    return { subject, send, read, streamKey };
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

  it('With replicated, when no replica confirms in time, then fts_writes_unconfirmed_total counts the write by aggregate type and reason', async () => {
    const { subject, send } = await appWith('replicated');
    const port = await stopReplica();
    try {
      expect((await send(create(randomUUID()))).status).toBe(503);
    } finally {
      await startReplica(port);
    }
    expect((await send(create(randomUUID()))).status).toBe(200);

    const samples = parseExposition((await subject.metrics.exposition()).text);
    const unconfirmed = (reason: string) =>
      sampleSum(samples, 'fts_writes_unconfirmed_total', { aggregate_type: TEAM, reason });
    expect(unconfirmed('unreplicated')).toBe(1);
    expect(unconfirmed('unanswered')).toBe(0);
  });

  it('With replicated, while a WAIT waits for a replica, then another command and a read are answered without waiting for it', async () => {
    const { subject, send, read } = await appWith('replicated', 1_500);
    const port = await stopReplica();
    try {
      const started = performance.now();
      const waiting = send(create(randomUUID())).then((answer) => ({
        status: answer.status,
        tookMs: performance.now() - started,
      }));
      // Its WAIT is under way: the master holds a client blocked.
      await eventually(
        async () => /blocked_clients:[1-9]/.test(await subject.redis.info('clients')),
        1_000,
        10,
      );

      const othersStarted = performance.now();
      const refused = await send({
        commandType: 'UnlinkFantasyTeam',
        command: { aggregateRootId: randomUUID() },
      });
      const team = await read({ queryType: 'GetFantasyTeam', id: randomUUID() });
      const othersTookMs = performance.now() - othersStarted;

      // Decided and answered over the shared connection while the WAIT still blocks its own.
      expect(refused.status).toBe(400);
      expect(team.status).toBe(404);
      expect(othersTookMs).toBeLessThan(750);
      const first = await waiting;
      expect(first.status).toBe(503);
      expect(first.tookMs).toBeGreaterThan(1_400);
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
  it('With replicated, when the service closes, then a write waiting for a connection is refused at once and none is lent or opened after', async () => {
    const { subject } = await appWith('replicated');
    const confirmation = new ReplicaConfirmation(subject.redis, subject.services.keys, 5_000, 1);
    const first = await confirmation.begin(TEAM, randomUUID());
    const waiting = expect(confirmation.begin(TEAM, randomUUID())).rejects.toThrow(
      'Redis connection is not ready: the service is closing',
    );
    const started = performance.now();

    await confirmation.close();

    await waiting;
    await expect(confirmation.begin(TEAM, randomUUID())).rejects.toThrow('the service is closing');
    expect(performance.now() - started).toBeLessThan(2_000);
    first.release();
  });
});
