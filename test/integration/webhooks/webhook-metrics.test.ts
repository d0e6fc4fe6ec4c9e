/**
 * The webhook metrics of a worker (issue 20): attempts by outcome, attempt latency, and each
 * subscription's oldest undelivered event's age, scraped from a real worker's /metrics.
 */
import { freePort } from '../../../scripts/lib/free-port';
import { parseExposition, type Sample, samplesOf, sampleSum } from '../../helpers/metrics';
import { eventually } from '../../helpers/processes';
import { createWebhookHarness, startReceiver, type WebhookReceiver } from '../../helpers/webhooks';

const METRICS_TOKEN = 'webhook-metrics-token-0123456789';

describe('Webhook metrics on a worker', () => {
  let harness: Awaited<ReturnType<typeof createWebhookHarness>>;
  let metricsUrl: string;
  let target: WebhookReceiver;

  const scrape = async (): Promise<Sample[]> => {
    const res = await fetch(`${metricsUrl}/metrics`, {
      headers: { authorization: `Bearer ${METRICS_TOKEN}` },
    });
    expect(res.status).toBe(200);
    return parseExposition(await res.text());
  };

  beforeAll(async () => {
    // Retries far apart, so a failing event stays undelivered while the test scrapes.
    harness = await createWebhookHarness({ WEBHOOK_RETRY_SCHEDULE: '0,1h' });
    const port = await freePort();
    metricsUrl = `http://127.0.0.1:${port}`;
    await harness.startWorker({ METRICS_PORT: String(port), METRICS_HOST: '127.0.0.1', METRICS_TOKEN });
    target = await startReceiver();
  }, 60_000);
  afterAll(async () => {
    await target.stop();
    await harness.close();
  });

  it('When deliveries succeed and fail, then outcomes, latency and the oldest undelivered age are exposed', async () => {
    const { id } = await harness.subscribe(target.url, ['FantasyTeamCreatedEvent']);
    await harness.teamWithEvents(1);
    await eventually(
      async () => sampleSum(await scrape(), 'fts_webhook_deliveries_total', { outcome: 'delivered' }) >= 1,
      15_000,
    );
    target.status = 500;
    await harness.teamWithEvents(1);
    await eventually(
      async () => sampleSum(await scrape(), 'fts_webhook_deliveries_total', { outcome: 'retrying' }) >= 2,
      15_000,
    );
    const samples = await scrape();
    expect(sampleSum(samples, 'fts_webhook_attempt_duration_seconds_count')).toBeGreaterThanOrEqual(3);
    // The failures are the subscription's (the delivered attempt is not one).
    expect(
      sampleSum(samples, 'fts_webhook_failed_attempts_total', { subscription: id }),
    ).toBeGreaterThanOrEqual(2);
    expect(sampleSum(samples, 'fts_webhook_failed_attempts_total', { subscription: id })).toBe(
      sampleSum(samples, 'fts_webhook_deliveries_total') -
        sampleSum(samples, 'fts_webhook_deliveries_total', { outcome: 'delivered' }),
    );
    await eventually(async () => {
      const age = samplesOf(await scrape(), 'fts_webhook_oldest_undelivered_seconds', {
        subscription: id,
      })[0];
      return (age?.value ?? 0) > 0;
    }, 15_000);
  });

  it('When a subscription is created and then deleted, then its failures series starts at 0 and goes with it', async () => {
    const { id } = await harness.subscribe(target.url, ['FantasyTeamArchivedEvent']);
    await eventually(async () => {
      const series = samplesOf(await scrape(), 'fts_webhook_failed_attempts_total', { subscription: id });
      return series.length === 1 && series[0]?.value === 0;
    }, 15_000);
    expect((await harness.admin.send('DeleteWebhookSubscription', { aggregateRootId: id })).status).toBe(200);
    await eventually(async () => {
      const samples = await scrape();
      return (
        samplesOf(samples, 'fts_webhook_failed_attempts_total', { subscription: id }).length === 0 &&
        samplesOf(samples, 'fts_webhook_oldest_undelivered_seconds', { subscription: id }).length === 0
      );
    }, 15_000);
  });
});
