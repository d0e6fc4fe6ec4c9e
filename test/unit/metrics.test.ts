import { Metrics } from '../../shared/metrics/metrics';
import { parseExposition, samplesOf, sampleSum } from '../helpers/metrics';

const scrape = async (metrics: Metrics) => parseExposition((await metrics.exposition()).text);

describe('Metrics', () => {
  it('When a scrape-time source fails (Redis away), then its gauge has no samples and the scrape still answers', async () => {
    const metrics = new Metrics();
    let redisUp = true;
    metrics.collectProjectorLag(() =>
      redisUp
        ? Promise.resolve([{ projection: 'fantasy-team', partition: 3, entriesBehind: 7 }])
        : Promise.reject(new Error('Connection is closed.')),
    );
    expect(sampleSum(await scrape(metrics), 'fts_projector_lag_events', { partition: '3' })).toBe(7);

    redisUp = false;
    expect(samplesOf(await scrape(metrics), 'fts_projector_lag_events')).toEqual([]);

    redisUp = true;
    expect(sampleSum(await scrape(metrics), 'fts_projector_lag_events', { partition: '3' })).toBe(7);
  });

  it('When the projector reports a pass, then fts_projector_pass_duration_seconds counts it in its bucket', async () => {
    const metrics = new Metrics();
    metrics.recordProjectorPass(0.7);
    const samples = await scrape(metrics);
    expect(sampleSum(samples, 'fts_projector_pass_duration_seconds_count')).toBe(1);
    expect(sampleSum(samples, 'fts_projector_pass_duration_seconds_bucket', { le: '0.5' })).toBe(0);
    expect(sampleSum(samples, 'fts_projector_pass_duration_seconds_bucket', { le: '1' })).toBe(1);
  });

  it('When reads wait for a version, then fts_read_wait_seconds counts each by projection and outcome, in its bucket', async () => {
    const metrics = new Metrics();
    metrics.recordReadWait('fantasy-team', 'seen', 0.02);
    metrics.recordReadWait('fantasy-team', 'behind', 2.01);
    metrics.recordReadWait('users', 'refused', 0.001);
    const samples = await scrape(metrics);
    const seen = { projection: 'fantasy-team', outcome: 'seen' };
    expect(sampleSum(samples, 'fts_read_wait_seconds_bucket', { ...seen, le: '0.025' })).toBe(1);
    expect(sampleSum(samples, 'fts_read_wait_seconds_bucket', { ...seen, le: '0.01' })).toBe(0);
    const behind = { projection: 'fantasy-team', outcome: 'behind' };
    expect(sampleSum(samples, 'fts_read_wait_seconds_bucket', { ...behind, le: '2' })).toBe(0);
    expect(sampleSum(samples, 'fts_read_wait_seconds_count', behind)).toBe(1);
    expect(
      sampleSum(samples, 'fts_read_wait_seconds_count', { projection: 'users', outcome: 'refused' }),
    ).toBe(1);
  });

  it('When a connection is not ready, then redis_connection_up reads 0 for it, 1 for a ready one', async () => {
    const metrics = new Metrics();
    metrics.watchConnection('request', { status: 'ready' });
    metrics.watchConnection('queue', { status: 'reconnecting' });
    const samples = await scrape(metrics);
    expect(sampleSum(samples, 'fts_redis_connection_up', { connection: 'request' })).toBe(1);
    expect(samplesOf(samples, 'fts_redis_connection_up', { connection: 'queue' })).toEqual([
      { name: 'fts_redis_connection_up', labels: { connection: 'queue' }, value: 0 },
    ]);
  });

  it('When an import finishes, then rows per second use a millisecond floor, and an import without rows adds no rate', async () => {
    const metrics = new Metrics();
    metrics.recordImport('queued', {
      importerType: 'UserSeeding',
      status: 'Completed',
      rows: 5,
      durationSeconds: 0,
    });
    metrics.recordImport('queued', { importerType: null, status: 'Failed', rows: 0, durationSeconds: 0.2 });
    const samples = await scrape(metrics);
    expect(sampleSum(samples, 'fts_import_rows_per_second_sum', { importer_type: 'UserSeeding' })).toBe(5000);
    expect(samplesOf(samples, 'fts_import_rows_per_second_count', { importer_type: 'unknown' })).toEqual([]);
    expect(
      sampleSum(samples, 'fts_import_duration_seconds_count', { importer_type: 'unknown', status: 'Failed' }),
    ).toBe(1);
  });

  it('When two registries exist in one process, then each counts only its own', async () => {
    const first = new Metrics();
    const second = new Metrics();
    first.recordCommandAnswer('CreateFantasyTeam', undefined);
    second.recordCommandAnswer(null, 'UNKNOWN_COMMAND_TYPE');
    expect(samplesOf(await scrape(first), 'fts_commands_total')).toEqual([
      {
        name: 'fts_commands_total',
        labels: { command_type: 'CreateFantasyTeam', outcome: 'success' },
        value: 1,
      },
    ]);
    expect(samplesOf(await scrape(second), 'fts_commands_total')).toEqual([
      {
        name: 'fts_commands_total',
        labels: { command_type: 'unknown', outcome: 'UNKNOWN_COMMAND_TYPE' },
        value: 1,
      },
    ]);
  });
});
