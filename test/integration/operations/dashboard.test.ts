import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';

import { freePort } from '../../../scripts/lib/redis-server';
import { createTestApp, type TestApp, testRedisEnv, uniquePrefix } from '../../helpers/app-fixture';
import { parseExposition, type Sample, samplesOf } from '../../helpers/metrics';
import {
  eventually,
  type IngressProcess,
  killAll,
  PROJECT_ROOT,
  type ServiceProcess,
  startIngressProcess,
  startServiceProcess,
} from '../../helpers/processes';
import { type ExportedSeries, exportedSeries, unexportedUses } from '../../helpers/promql';
import { seedUsers } from '../../helpers/seed-users';
import { startReceiver, WEBHOOK_TEST_ENV, type WebhookReceiver } from '../../helpers/webhooks';

const DASHBOARD = path.join(PROJECT_ROOT, 'deploy/grafana/dashboards/fantasy-team-service.json');
const METRICS_TOKEN = 'dashboard-metrics-token-0123456789';
const ADMIN = { email: 'dashboard-admin@example.com', password: 'dashboard-admin-password' };

interface Panel {
  readonly title?: string;
  readonly targets?: readonly { readonly expr?: string }[];
  readonly panels?: readonly Panel[];
}

/** Every query of the dashboard, with the title of its panel (rows' nested panels included). */
function dashboardQueries(): { panel: string; expr: string }[] {
  const { panels } = JSON.parse(readFileSync(DASHBOARD, 'utf8')) as { panels: Panel[] };
  const queries: { panel: string; expr: string }[] = [];
  const visit = (panel: Panel) => {
    for (const target of panel.targets ?? []) {
      queries.push({ panel: panel.title ?? '', expr: target.expr ?? '' });
    }
    for (const inner of panel.panels ?? []) visit(inner);
  };
  for (const panel of panels) visit(panel);
  return queries;
}

/**
 * The dashboard (deploy/grafana/) against what the service really exports: a real ingress and a
 * real worker process get a little of every kind of traffic the dashboard shows (a sign-in, a
 * query, commands, a queued import, a webhook delivery, an event stream), then both are scraped.
 */
describe('The Grafana dashboard', () => {
  let inspector: TestApp;
  let ingress: IngressProcess;
  let worker: ServiceProcess;
  let receiver: WebhookReceiver;
  let workerMetricsUrl: string;
  let exported: ExportedSeries;

  const scrape = async (url: string): Promise<string> => {
    const res = await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
    expect(res.status).toBe(200);
    return res.text();
  };
  const scrapeBoth = () => Promise.all([scrape(ingress.baseUrl), scrape(workerMetricsUrl)]);
  const samplesOfBoth = (texts: readonly string[]): Sample[] => texts.flatMap(parseExposition);

  beforeAll(async () => {
    const env = {
      ...testRedisEnv(),
      ...WEBHOOK_TEST_ENV,
      REDIS_KEY_PREFIX: uniquePrefix(),
      METRICS_TOKEN,
    };
    inspector = await createTestApp(env);
    await inspector.createUser({ ...ADMIN, roles: ['Admin'] });
    receiver = await startReceiver();
    ingress = await startIngressProcess(env);
    const metricsPort = await freePort();
    workerMetricsUrl = `http://127.0.0.1:${metricsPort}`;
    worker = startServiceProcess('workers/main.ts', {
      ...env,
      METRICS_PORT: String(metricsPort),
      METRICS_HOST: '127.0.0.1',
    });
    await worker.waitForOutput('worker ready', 30_000);

    const tokenAnswer = await fetch(`${ingress.baseUrl}/api/auth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ grant_type: 'password', username: ADMIN.email, password: ADMIN.password }),
    });
    expect(tokenAnswer.status).toBe(200);
    const { access_token: token } = (await tokenAnswer.json()) as { access_token: string };
    const post = async (route: string, body: object) =>
      (
        await fetch(`${ingress.baseUrl}${route}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
          body: JSON.stringify(body),
        })
      ).status;

    const subscriptionId = randomUUID();
    expect(
      await post('/api/command', {
        commandType: 'CreateWebhookSubscription',
        command: { aggregateRootId: subscriptionId, url: receiver.url, eventTypes: ['*'] },
      }),
    ).toBe(200);
    const teamId = randomUUID();
    const createTeam = {
      commandType: 'CreateFantasyTeam',
      command: { aggregateRootId: teamId, name: 'Panel XI' },
    };
    expect(await post('/api/command', createTeam)).toBe(200);
    expect(await post('/api/command', { ...createTeam, command: { ...createTeam.command, name: '' } })).toBe(
      400,
    );
    expect(await post('/api/readmodel', { query: { queryType: 'CurrentUser' } })).toBe(200);
    expect(
      await post('/api/import', {
        requestId: randomUUID(),
        importerType: 'UserSeeding',
        priority: 'Normal',
        importData: { enabled: true, skipIfUsersExist: false, users: seedUsers(1, { label: 'dashboard' }) },
      }),
    ).toBe(200);

    // An event stream that its client leaves: counted open, then closed (reason client).
    const leaving = new AbortController();
    const stream = await fetch(`${ingress.baseUrl}/api/events`, {
      headers: { authorization: `Bearer ${token}` },
      signal: leaving.signal,
    });
    expect(stream.status).toBe(200);
    leaving.abort();

    await eventually(async () => {
      const samples = samplesOfBoth(await scrapeBoth());
      return (
        receiver.received.length > 0 &&
        samplesOf(samples, 'fts_webhook_deliveries_total').length > 0 &&
        samplesOf(samples, 'fts_webhook_oldest_undelivered_seconds', { subscription: subscriptionId })
          .length > 0 &&
        samplesOf(samples, 'fts_webhook_failed_attempts_total', { subscription: subscriptionId }).length >
          0 &&
        samplesOf(samples, 'fts_import_duration_seconds_count').length > 0 &&
        samplesOf(samples, 'fts_event_streams_closed_total').length > 0
      );
    }, 30_000);

    const texts = await scrapeBoth();
    exported = exportedSeries(texts, samplesOfBoth(texts));
  }, 120_000);

  afterAll(async () => {
    await killAll(ingress?.process, worker);
    await receiver?.stop();
    await inspector?.close();
  });

  it("When the dashboard's queries are read, then every metric and label they use is exported by a running process", () => {
    const queries = dashboardQueries();
    expect(queries.length).toBeGreaterThanOrEqual(25);
    const problems = queries.flatMap(({ panel, expr }) =>
      unexportedUses(expr, exported).map((problem) => `${panel}: ${problem}`),
    );
    expect(problems).toEqual([]);
  });

  it('When a query names a series or a label no process exports, then the check names each', () => {
    expect(unexportedUses('sum(rate(fts_http_requests_total[5m]))', exported)).toEqual([
      'fts_http_requests_total is not exported',
    ]);
    expect(
      unexportedUses('sum by (route) (rate(fts_commands_total{command="CreateFantasyTeam"}[5m]))', exported),
    ).toEqual(['fts_commands_total has no label command', 'fts_commands_total has no label route']);
    expect(
      unexportedUses(
        'histogram_quantile(0.99, sum by (le, instance) (rate(fts_http_request_duration_seconds_bucket{route="/api/command"}[$__rate_interval])))',
        exported,
      ),
    ).toEqual([]);
  });
});
