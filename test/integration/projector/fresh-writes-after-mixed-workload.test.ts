import { randomUUID } from 'node:crypto';

import request from 'supertest';

import { positionOf } from '../../../shared/event-stream/log-retention';
import { fantasyTeamDecider } from '../../../shared/fantasy-team/fantasy-team.decider';
import { partitionOf } from '../../../shared/redis/partitions';
import { DeliveryLog } from '../../../shared/webhook-subscription/delivery-log';
import { ALL_PROJECTIONS } from '../../../workers/projector/all-projections';
import { changeAccount } from '../../helpers/account-changes';
import { eventually, type ServiceProcess } from '../../helpers/processes';
import { removeKeys } from '../../helpers/redis-state';
import { seedUsers } from '../../helpers/seed-users';
import { createWebhookHarness, startReceiver, type WebhookReceiver } from '../../helpers/webhooks';

/**
 * Issues 39 (part 2) and 43: after a long mixed workload a fresh team's LinkFantasyTeam answered
 * version N and GetFantasyTeam with minVersion N answered PROJECTION_BEHIND after 2 s. A shortened
 * workload of the same kinds (an import, accounts changed every way, erasures passing teams to
 * their tombstones, webhook deliveries) runs through HTTP against a real worker process; then each
 * fresh write is timed until a minVersion read sees it, and until every projection's checkpoint of
 * its partition has passed its log entry (a projection that skips the event included).
 */

/** Far above the lag held below: the read answers when the projection has it, so its time is the lag. */
const READ_WAIT_MS = 10_000;
const FRESH_WRITES = 20;
const IMPORTED_BEFORE = 2_000;
const IMPORTED_WHILE_MEASURED = 3_000;
/** Three imports of 8,000 (an import holds at most 10,000 rows): 1,500 account entries a partition. */
const BACKLOG_IMPORTS = [8_000, 8_000, 8_000];
/** Issue 43's bound for a settled service on a busy machine (measured here: 5-15 ms). */
const HELD_P99_MS = 500;
/** Attempts in the delivery log an Admin pages through while fresh writes are timed. */
const LONG_DELIVERY_LOG = 100_000;
const SEEDED_AT_ONCE = 500;
const WEEK_MS = 7 * 24 * 3_600_000;
/*
 * While an import runs, how long a fresh write waits is a figure (printed, for bench/RESULTS.md),
 * not an assertion: it follows the machine's load (2.3 s and 3.0 s with two suites on 2 cores, 0.4
 * s and 1.2 s alone; 0.9 s and 2.6 s before ADR 0041). That scenario holds that every read answers
 * (within READ_WAIT_MS); ADR 0041's fix itself is held exactly by projection-batch-read.test.ts.
 */

function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? NaN;
}

function figures(samples: readonly number[]) {
  const sorted = [...samples].sort((a, b) => a - b);
  return { p50: percentile(sorted, 50), p99: percentile(sorted, 99), max: sorted.at(-1) ?? NaN };
}

/** True when stream entry id `a` is at or after `b`. */
function atOrAfter(a: string | null, b: string): boolean {
  if (a === null) return false;
  const x = positionOf(a);
  const y = positionOf(b);
  return x.ms > y.ms || (x.ms === y.ms && x.seq >= y.seq);
}

type Harness = Awaited<ReturnType<typeof createWebhookHarness>>;

describe('Fresh writes after a long mixed workload', () => {
  let harness: Harness;
  let receiver: WebhookReceiver;
  let worker: ServiceProcess;

  beforeAll(async () => {
    harness = await createWebhookHarness({ READ_WAIT_MS: String(READ_WAIT_MS) });
    receiver = await startReceiver();
    worker = await harness.startWorker();
  }, 60_000);
  afterAll(async () => {
    // About 30,000 accounts and their events: later tests' snapshots would walk them all.
    if (harness) await removeKeys(harness.subject.redis, harness.subject.config.redisKeyPrefix);
    await harness.close();
    await receiver.stop();
  });

  async function ok(response: Promise<{ status: number; text: string; body: unknown }>) {
    const res = await response;
    if (res.status !== 200) throw new Error(`answered ${res.status}: ${res.text}`);
    return res.body as { version: number; importJobId?: string; status?: string };
  }

  /** Submits a UserSeeding import of `count` new Members (no passwords: no argon2); returns its job id. */
  async function submitImport(count: number): Promise<string> {
    const res = await request(harness.subject.app)
      .post('/api/import')
      .set('Authorization', `Bearer ${harness.admin.token}`)
      .send({
        requestId: randomUUID(),
        importerType: 'UserSeeding',
        priority: 'Normal',
        importData: { enabled: true, skipIfUsersExist: false, users: seedUsers(count, { label: 'lag' }) },
      });
    if (res.status !== 200) throw new Error(`import not queued: ${res.status} ${res.text}`);
    return (res.body as { importJobId: string }).importJobId;
  }

  async function waitForImport(importJobId: string): Promise<void> {
    await eventually(
      async () => {
        const res = await harness.admin.query({ queryType: 'GetImportJobResult', importJobId });
        const status = (res.body as { results?: { status: string }[] }).results?.[0]?.status;
        return status === 'Completed' || status === 'Failed';
      },
      240_000,
      250,
    );
  }

  /** An import, accounts changed every way and erased, teams, webhook deliveries. */
  async function mixedWorkload(): Promise<void> {
    const { subject, admin } = harness;
    await harness.subscribe(receiver.url, ['*']);
    await waitForImport(await submitImport(IMPORTED_BEFORE));

    const accounts = await Promise.all(
      Array.from({ length: 16 }, (_, i) =>
        subject.createUser({
          email: `mixed-${i}-${randomUUID().slice(0, 6)}@example.com`,
          password: 'mixed-workload-pw',
        }),
      ),
    );
    // Two at a time: argon2 hashes are bounded (more are answered 503, too many sign-ins).
    const changeEveryWay = async (userId: string, i: number) => {
      await ok(admin.send('SetUserRoles', { aggregateRootId: userId, roles: ['Member', 'UserManager'] }));
      await ok(
        admin.send('SetUserPassword', { aggregateRootId: userId, newPassword: `mixed-new-password-${i}` }),
      );
      await changeAccount(
        subject.services,
        userId,
        { type: 'ChangePassword' },
        { newPassword: 'changed-pw-12345' },
      );
      await ok(admin.send('DisableUser', { aggregateRootId: userId }));
      await ok(admin.send('EnableUser', { aggregateRootId: userId }));
      // Teams of their own, passed to the tombstone when half of them are erased.
      if (i % 2 === 0) {
        for (let t = 0; t < 2; t++) {
          await subject.services.commands.handle(fantasyTeamDecider, {
            aggregateId: randomUUID(),
            command: { type: 'CreateFantasyTeam', data: { name: `owned ${t}`, season: '2026' } },
            context: { now: new Date(), actorUserId: userId, actorRoles: ['Member'] },
            metadata: { actorUserId: userId, requestId: null, correlationId: null },
          });
        }
        await ok(admin.send('DeleteUser', { aggregateRootId: userId }));
      }
    };
    for (let i = 0; i < accounts.length; i += 2) {
      await Promise.all(accounts.slice(i, i + 2).map((userId, j) => changeEveryWay(userId, i + j)));
    }
    for (let t = 0; t < 10; t++) await harness.teamWithEvents(4);
  }

  /**
   * Times FRESH_WRITES fresh team links: until the minVersion read answers, and until each
   * projection's checkpoint of the team's partition has passed the link's log entry.
   */
  async function measureFreshWrites(label: string) {
    const { subject, admin } = harness;
    const { keys } = subject.services;
    const redis = subject.redis;
    const readLag: number[] = [];
    const checkpointLag = new Map<string, number[]>(ALL_PROJECTIONS.map((p) => [p.name, []]));
    for (let round = 0; round < FRESH_WRITES; round++) {
      const teamId = randomUUID();
      await ok(admin.send('CreateFantasyTeam', { aggregateRootId: teamId, name: `fresh ${round}` }));
      const linked = await ok(
        admin.send('LinkFantasyTeam', {
          aggregateRootId: teamId,
          fantasyTeamExternalId: 5000 + round,
          fantasyUserId: 6000 + round,
        }),
      );
      const answeredAt = performance.now();
      const partition = partitionOf(teamId);
      const [[entryId] = []] = await redis.xrevrange(keys.logPartition(partition), '+', '-', 'COUNT', 1);
      const read = await admin.query({ queryType: 'GetFantasyTeam', id: teamId, minVersion: linked.version });
      readLag.push(performance.now() - answeredAt);
      expect(read.status).toBe(200);

      // Every projection's checkpoint of the partition, polled until it has passed the entry.
      const pending = new Set(ALL_PROJECTIONS);
      const deadline = Date.now() + 10_000;
      while (pending.size > 0 && Date.now() < deadline) {
        for (const projection of [...pending]) {
          const checkpoint = await redis.get(projection.checkpointKey(keys, partition));
          if (entryId && atOrAfter(checkpoint, entryId)) {
            checkpointLag.get(projection.name)?.push(performance.now() - answeredAt);
            pending.delete(projection);
          }
        }
        await new Promise((resolve) => setTimeout(resolve, 2));
      }
    }
    const report = {
      getFantasyTeamMinVersion: figures(readLag),
      ...Object.fromEntries(
        [...checkpointLag].map(([name, samples]) => [`checkpoint ${name}`, figures(samples)]),
      ),
    };
    process.stdout.write(`fresh-write lag (ms), ${label}: ${JSON.stringify(report)}\n`);
    process.stdout.write(`fresh-write lag (ms), ${label}, each: ${readLag.map(Math.round).join(', ')}\n`);
    process.stdout.write(worker.stdout().split('\n').slice(-40).join('\n') + '\n');
    return report;
  }

  it('When an import runs after the mixed workload, then every fresh write is readable with its minVersion', async () => {
    await mixedWorkload();
    const importJobId = await submitImport(IMPORTED_WHILE_MEASURED);
    const report = await measureFreshWrites('busy (an import running)');
    await waitForImport(importJobId);
    expect(worker.child.exitCode).toBeNull();
    expect(report.getFantasyTeamMinVersion.max).toBeLessThan(READ_WAIT_MS);
  }, 300_000);

  it('When the workload has settled, then a fresh write is readable with its minVersion, p99 under 500 ms', async () => {
    const report = await measureFreshWrites('quiet');
    expect(worker.child.exitCode).toBeNull();
    expect(report.getFantasyTeamMinVersion.p99).toBeLessThan(HELD_P99_MS);
  }, 300_000);

  it('When an Admin pages through a long webhook delivery log, then a fresh write is readable with its minVersion, p99 under 500 ms', async () => {
    // A few days of deliveries to one subscription (issue 43's soak wrote 65,000 attempts in four
    // minutes). A read of the whole log held Redis and the ingress's event loop for as long as it
    // took to send and parse, and every read waiting for a version waited behind it.
    const { id: subscriptionId } = await harness.subscribe(receiver.url, ['FantasyTeamArchivedEvent']);
    const log = new DeliveryLog(harness.subject.redis, harness.subject.services.keys, WEEK_MS);
    // 500 records at a time: 5,000 MULTIs at once outran the request connection's command timeout
    // on a busy cluster.
    for (let written = 0; written < LONG_DELIVERY_LOG; written += SEEDED_AT_ONCE) {
      await Promise.all(
        Array.from({ length: SEEDED_AT_ONCE }, (_, n) =>
          log.record(subscriptionId, {
            eventId: randomUUID(),
            eventType: 'FantasyTeamArchivedEvent',
            attempt: 1 + ((written + n) % 2),
            at: new Date().toISOString(),
            status: (written + n) % 2 ? 'delivered' : 'retrying',
            httpStatus: (written + n) % 2 ? 200 : 500,
            error: null,
            durationMs: 12,
          }),
        ),
      );
    }
    let paging = true;
    let pages = 0;
    const pager = (async () => {
      const statuses = [undefined, 'delivered', 'retrying'] as const;
      while (paging) {
        const status = statuses[pages % statuses.length];
        const res = await harness.admin.query({
          queryType: 'GetWebhookDeliveries',
          subscriptionId,
          ...(status ? { status } : {}),
        });
        expect(res.status).toBe(200);
        pages += 1;
      }
    })();
    try {
      const report = await measureFreshWrites('an Admin paging a long delivery log');
      expect(pages).toBeGreaterThan(0);
      expect(report.getFantasyTeamMinVersion.p99).toBeLessThan(HELD_P99_MS);
    } finally {
      paging = false;
      await pager;
    }
  }, 300_000);

  it('When a worker starts over imports it has not projected, with webhook delivery beside it, then a fresh write is readable with its minVersion, p99 under 500 ms', async () => {
    // The projector away while an import lands (a deploy, a crash): the users projection then has
    // 1,500 entries a partition to catch up when it comes back, and the dispatcher as many to
    // deliver to the `*` subscription, in the same process. Fresh writes are timed from the
    // worker's "ready" on: its start (leases, first passes) is part of what a caller waits for.
    // Before ADR 0050 the first waited 0.8-1.2 s (2.2 s in this file's run): one by one, the
    // leases took 128 round trips on a busy event loop, then a pass carried all 64 pairs, the
    // users projection's 16 heavy batches included, and the team change waited for it to end.
    worker.child.kill('SIGTERM');
    await worker.exited;
    const importer = await harness.startWorker({ WORKER_CONSUMERS: 'imports' });
    for (const count of BACKLOG_IMPORTS) await waitForImport(await submitImport(count));
    importer.child.kill('SIGTERM');
    await importer.exited;
    worker = await harness.startWorker({ WORKER_CONSUMERS: 'projections,webhooks' });
    const report = await measureFreshWrites('catching up imports');
    expect(worker.child.exitCode).toBeNull();
    expect(report.getFantasyTeamMinVersion.p99).toBeLessThan(HELD_P99_MS);
  }, 300_000);
});
