import { randomUUID } from 'node:crypto';

import request from 'supertest';

import { freePort } from '../../../scripts/lib/free-port';
import { LOG_PARTITIONS, partitionOf } from '../../../shared/redis/partitions';
import { ALL_PROJECTIONS } from '../../../workers/projector/all-projections';
import { createImportWorkersHarness, type ImportWorkersHarness } from '../../helpers/import-workers';
import { parseExposition, type Sample, samplesOf, sampleSum } from '../../helpers/metrics';
import { eventually } from '../../helpers/processes';
import { seedUsersWithPasswords } from '../../helpers/seed-users';

const METRICS_TOKEN = 'worker-metrics-token-0123456789';
const PASSWORD = 'worker-metrics-password';

/**
 * A real worker process (workers/main.ts) with its metrics listener, fed by an in-process ingress
 * sharing its key prefix. The fantasy-team projection's lease of one partition is held by the test
 * from the start, as a stuck replica would hold it, so that partition's lag is observable.
 */
describe('GET /metrics on a worker', () => {
  let harness: ImportWorkersHarness;
  let metricsUrl: string;
  const teamId = randomUUID();
  const heldPartition = partitionOf(teamId);
  let heldLease: string;

  const get = (path: string, authorization?: string) =>
    fetch(`${metricsUrl}${path}`, authorization ? { headers: { authorization } } : {});
  const scrape = async (): Promise<Sample[]> => {
    const res = await get('/metrics', `Bearer ${METRICS_TOKEN}`);
    expect(res.status).toBe(200);
    return parseExposition(await res.text());
  };
  const lagOf = (samples: readonly Sample[], projection: string, partition: number) =>
    samplesOf(samples, 'fts_projector_lag_events', { projection, partition: String(partition) })[0]?.value;

  beforeAll(async () => {
    harness = await createImportWorkersHarness();
    heldLease = harness.subject.services.keys.projectionLease('fantasy-team', heldPartition);
    await harness.subject.redis.set(heldLease, 'held-by-the-test', 'PX', 60_000);
    const port = await freePort();
    metricsUrl = `http://127.0.0.1:${port}`;
    await harness.startWorker({
      METRICS_PORT: String(port),
      METRICS_HOST: '127.0.0.1',
      METRICS_TOKEN,
    });
  }, 60_000);
  afterAll(() => harness.close());

  it('When scraped without the token, then 401 problem; with it, 200; any other path is a 404 problem', async () => {
    const refused = await get('/metrics');
    expect(refused.status).toBe(401);
    expect(refused.headers.get('www-authenticate')).toBe('Bearer realm="metrics"');
    expect(await refused.json()).toMatchObject({ title: 'Unauthorized', status: 401 });
    expect((await get('/metrics', 'Bearer not-the-metrics-token')).status).toBe(401);

    const samples = await scrape();
    for (const connection of ['request', 'queue', 'projector', 'projector-subscriber']) {
      expect(sampleSum(samples, 'fts_redis_connection_up', { connection })).toBe(1);
    }
    expect(samplesOf(samples, 'fts_process_resident_memory_bytes')).toHaveLength(1);

    const elsewhere = await get('/api/readmodel', `Bearer ${METRICS_TOKEN}`);
    expect(elsewhere.status).toBe(404);
    expect(await elsewhere.json()).toMatchObject({ title: 'Not Found', status: 404 });
  });

  it('When a partition is not projected, then its lag is the events behind the head of the log, and 0 once projected', async () => {
    const { subject } = harness;
    await subject.createUser({ email: 'member@example.com', password: PASSWORD });
    const token = await request(subject.app)
      .post('/api/auth/token')
      .send({ grant_type: 'password', username: 'member@example.com', password: PASSWORD });
    const created = await request(subject.app)
      .post('/api/command')
      .set('Authorization', `Bearer ${token.body.access_token as string}`)
      .send({ commandType: 'CreateFantasyTeam', command: { aggregateRootId: teamId, name: 'Lagging FC' } });
    expect(created.status).toBe(200);
    const head = await subject.redis.xlen(subject.services.keys.logPartition(heldPartition));
    expect(head).toBeGreaterThanOrEqual(1);

    // The other projections hold their leases of the partition and catch up; the held one cannot.
    await eventually(async () => {
      const samples = await scrape();
      return (
        lagOf(samples, 'fantasy-team', heldPartition) === head &&
        lagOf(samples, 'players', heldPartition) === 0 &&
        lagOf(samples, 'seasons', heldPartition) === 0
      );
    }, 15_000);

    await subject.redis.del(heldLease);
    await eventually(async () => {
      const lag = samplesOf(await scrape(), 'fts_projector_lag_events');
      return (
        lag.length === ALL_PROJECTIONS.length * LOG_PARTITIONS && lag.every((sample) => sample.value === 0)
      );
    }, 15_000);
  });

  it('When a queued import finishes, then its duration, rows, events and the queue depth show on the worker', async () => {
    const before = await scrape();
    const importJobId = await harness.submitSeeding(seedUsersWithPasswords(2));
    const job = await harness.waitUntilFinished(importJobId, 20_000);
    expect(job.status).toBe('Completed');

    const after = await scrape();
    const moved = (name: string, labels: Record<string, string>) =>
      sampleSum(after, name, labels) - sampleSum(before, name, labels);
    const labels = { importer_type: 'UserSeeding', status: 'Completed', mode: 'queued' };
    expect(moved('fts_import_duration_seconds_count', labels)).toBe(1);
    expect(moved('fts_import_duration_seconds_sum', labels)).toBeGreaterThan(0);
    expect(moved('fts_import_rows_total', labels)).toBe(2);
    expect(moved('fts_import_rows_per_second_count', { importer_type: 'UserSeeding', mode: 'queued' })).toBe(
      1,
    );
    expect(
      moved('fts_events_appended_total', { aggregate_type: 'user', event_type: 'UserCreatedEvent' }),
    ).toBe(2);
    expect(moved('fts_lock_wait_seconds_count', { aggregate_type: 'user', outcome: 'acquired' })).toBe(2);
    expect(sampleSum(after, 'fts_import_queue_jobs', { state: 'completed' })).toBe(1);
    expect(sampleSum(after, 'fts_import_queue_jobs', { state: 'prioritized' })).toBe(0);
    expect(sampleSum(after, 'fts_import_queue_jobs', { state: 'active' })).toBe(0);
  });
});
