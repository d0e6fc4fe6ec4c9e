import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

import { parse } from 'yaml';

import { freePort } from '../../../scripts/lib/free-port';
import { keyHoldingNodes } from '../../../shared/redis/connections';
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
const ALERT_RULES = path.join(PROJECT_ROOT, 'deploy/prometheus/alerts.yml');
const AUTOSCALER = path.join(PROJECT_ROOT, 'deploy/kubernetes/keda-worker-scaler.yaml');
const METRICS_TOKEN = 'dashboard-metrics-token-0123456789';
const ADMIN = { email: 'dashboard-admin@example.com', password: 'dashboard-admin-password' };
const MEMBER = { email: 'dashboard-member@example.com', password: 'dashboard-member-password' };

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
 * Every alert rule's query as Prometheus should answer it on a healthy service: its threshold (the last
 * comparison) taken off, and `absent(x)` read as `x`, so that the series it watches must be there. The
 * rules are written in that shape (`<query> > <number>`, `<query> == 0`, `absent(<query>)`): a rule in
 * another shape fails here and must be handled.
 */
function alertQueries(): { alert: string; expr: string }[] {
  const { groups } = parse(readFileSync(ALERT_RULES, 'utf8')) as {
    groups: { rules: { alert: string; expr: string }[] }[];
  };
  return groups.flatMap(({ rules }) =>
    rules.map(({ alert, expr }) => {
      const text = expr.trim();
      const absent = /^absent\((.*)\)$/s.exec(text);
      if (absent) return { alert, expr: absent[1] ?? '' };
      const threshold = /^(.*\S)\s*(?:>|==)\s*[\d.]+$/s.exec(text);
      if (!threshold) throw new Error(`${alert}: not in a shape this test reads: ${text}`);
      return { alert, expr: threshold[1] ?? '' };
    }),
  );
}

/**
 * The queries of the example worker autoscaler (KEDA's Prometheus scaler), each trigger holding the
 * fields that scaler requires (serverAddress, query, threshold).
 */
function autoscalerQueries(): { trigger: string; expr: string }[] {
  const { spec } = parse(readFileSync(AUTOSCALER, 'utf8')) as {
    spec: { triggers: { type: string; metadata: Record<string, string> }[] };
  };
  return spec.triggers.map(({ type, metadata }, index) => {
    const missing = ['serverAddress', 'query', 'threshold'].filter((field) => !metadata[field]);
    if (type !== 'prometheus' || missing.length > 0) {
      throw new Error(`trigger ${index + 1} of ${AUTOSCALER}: type ${type}, missing ${missing.join(', ')}`);
    }
    return { trigger: `autoscaler trigger ${index + 1}`, expr: metadata.query ?? '' };
  });
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

    // A 5xx for the error ratio: a read waiting for a version no command wrote (PROJECTION_BEHIND).
    expect(
      await post('/api/readmodel', { query: { queryType: 'GetFantasyTeam', id: teamId, minVersion: 1_000 } }),
    ).toBe(503);
    // A Failed import for the failure alert: a Member may not create users, so it fails at its first row.
    await inspector.createUser({ ...MEMBER, roles: ['Member'] });
    const memberToken = await fetch(`${ingress.baseUrl}/api/auth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ grant_type: 'password', username: MEMBER.email, password: MEMBER.password }),
    });
    const { access_token: memberBearer } = (await memberToken.json()) as { access_token: string };
    const refusedImport = await fetch(`${ingress.baseUrl}/api/import`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${memberBearer}` },
      body: JSON.stringify({
        requestId: randomUUID(),
        importerType: 'UserSeeding',
        importData: { users: seedUsers(1, { label: 'dashboard-refused' }) },
      }),
    });
    expect(refusedImport.status).toBe(200);

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

  it('When a real Prometheus scrapes the ingress and the worker, then every rule evaluates and every dashboard, alert and autoscaler query returns data', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'fts-prometheus-'));
    const port = await freePort();
    const job = (name: string, url: string) => ({
      job_name: name,
      authorization: { credentials: METRICS_TOKEN },
      static_configs: [{ targets: [new URL(url).host] }],
    });
    // JSON is YAML: the shipped rules as they are, and the two processes as deploy/prometheus names them.
    writeFileSync(
      path.join(dir, 'prometheus.yml'),
      JSON.stringify({
        global: { scrape_interval: '1s', evaluation_interval: '1s' },
        rule_files: [ALERT_RULES],
        scrape_configs: [job('fts-ingress', ingress.baseUrl), job('fts-worker', workerMetricsUrl)],
      }),
    );
    // The memory alert leaves servers without a limit out; the suite's Redis has none. A limit far
    // above what the suite uses, for this test only, makes its query answer.
    const nodes = keyHoldingNodes(inspector.redis);
    const limits = await Promise.all(
      nodes.map(async (node) => ((await node.config('GET', 'maxmemory')) as string[])[1]),
    );
    const unlimited = nodes.filter((_, i) => limits[i] === '0');
    await Promise.all(unlimited.map((node) => node.config('SET', 'maxmemory', '8gb')));
    const prometheus = spawn(
      'prometheus',
      [
        `--config.file=${path.join(dir, 'prometheus.yml')}`,
        `--storage.tsdb.path=${path.join(dir, 'data')}`,
        `--web.listen-address=127.0.0.1:${port}`,
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    let log = '';
    prometheus.stderr.on('data', (chunk: Buffer) => (log = `${log}${chunk.toString()}`.slice(-4_000)));
    const started = new Promise<void>((resolve, reject) => {
      prometheus.once('spawn', () => resolve());
      prometheus.once('error', (error) =>
        reject(
          new Error(
            `prometheus did not start (apt-get install prometheus; .ci/run installs it): ${error.message}`,
          ),
        ),
      );
    });
    const api = async <T>(route: string): Promise<T> => {
      const res = await fetch(`http://127.0.0.1:${port}/api/v1/${route}`);
      return ((await res.json()) as { data: T }).data;
    };
    const answers = async (expr: string) =>
      (await api<{ result: unknown[] }>(`query?query=${encodeURIComponent(expr)}`)).result.length > 0;
    const queries = [
      ...dashboardQueries().map(({ panel, expr }) => ({
        what: `dashboard "${panel}"`,
        expr: expr.replaceAll('$__rate_interval', '1m'),
      })),
      ...alertQueries().map(({ alert, expr }) => ({ what: `alert ${alert}`, expr })),
      ...autoscalerQueries().map(({ trigger, expr }) => ({ what: trigger, expr })),
    ];
    try {
      await started;
      // Until both targets are scraped often enough for a rate, and every rule has been evaluated.
      let silent: string[] = queries.map(({ what }) => what);
      let rules: { name: string; health: string; lastError?: string }[] = [];
      const deadline = Date.now() + 90_000;
      while (Date.now() < deadline) {
        try {
          rules = (await api<{ groups: { rules: typeof rules }[] }>('rules')).groups.flatMap(
            (group) => group.rules,
          );
          const results = await Promise.all(queries.map(({ expr }) => answers(expr)));
          silent = queries.filter((_, i) => !results[i]).map(({ what, expr }) => `${what}: ${expr}`);
          if (silent.length === 0 && rules.length > 0 && rules.every(({ health }) => health === 'ok')) break;
        } catch {
          // Not listening yet.
        }
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
      expect(silent).toEqual([]);
      expect(rules.map(({ name }) => name).sort()).toEqual(
        alertQueries()
          .map(({ alert }) => alert)
          .sort(),
      );
      expect(rules.filter(({ health }) => health !== 'ok')).toEqual([]);
    } catch (error) {
      throw new Error(`${(error as Error).message}\nprometheus's log:\n${log}`);
    } finally {
      prometheus.kill('SIGTERM');
      if (prometheus.exitCode === null && prometheus.signalCode === null) await once(prometheus, 'exit');
      await Promise.all(unlimited.map((node) => node.config('SET', 'maxmemory', '0')));
      rmSync(dir, { recursive: true, force: true });
    }
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
