import { randomBytes, randomUUID } from 'node:crypto';

import { createTestApp, type TestApp, testRedisEnv } from '../../helpers/app-fixture';
import { OtlpReceiver, tracingEnv } from '../../helpers/otlp-receiver';
import {
  eventually,
  type IngressProcess,
  killAll,
  postJsonTo,
  type ServiceProcess,
  startIngressProcess,
  startServiceProcess,
} from '../../helpers/processes';
import {
  parsedDeliveries,
  startReceiver,
  verifies,
  WEBHOOK_TEST_ENV,
  type WebhookReceiver,
} from '../../helpers/webhooks';

const PASSWORD = 'webhook-trace-test-password';
const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-01$/;

/**
 * A command's trace reaching the webhook receiver: a real ingress and worker pointed at a test OTLP
 * receiver through the standard variables, and a real HTTP server as the subscription's endpoint.
 */
describe('A webhook delivery in the trace of the command that wrote its event', () => {
  let subject: TestApp;
  let otlp: OtlpReceiver;
  let hook: WebhookReceiver;
  let ingress: IngressProcess | undefined;
  let worker: ServiceProcess | undefined;
  let env: Record<string, string>;
  let token: string;
  let subscriptionId: string;
  let secret: string;

  const post = (path: string, body: object, headers: Record<string, string> = {}) =>
    postJsonTo(ingress!, path, body, { authorization: `Bearer ${token}`, ...headers });
  const command = async (commandType: string, fields: object, traceparent?: string) => {
    const answer = await post(
      '/api/command',
      { commandType, command: fields },
      traceparent ? { traceparent } : {},
    );
    expect(answer).toMatchObject({ status: 200 });
    return answer;
  };
  /** The deliveries of one aggregate's event of one type, in the order they came. */
  const deliveriesOf = (aggregateId: string, type: string) =>
    parsedDeliveries(hook).filter(
      ({ payload }) => payload.data.aggregateId === aggregateId && payload.type === type,
    );
  const deliverySpans = (eventId: string) =>
    otlp.spans.filter((span) => span.name === 'webhook POST' && span.attributes['fts.event.id'] === eventId);
  const startWorker = async (extra: Record<string, string>) => {
    worker = startServiceProcess('workers/main.ts', { ...env, ...extra });
    await worker.waitForOutput('worker ready', 60_000);
  };

  /** The standard variables that turn tracing on, to the test's receiver. */
  let tracing: Record<string, string>;

  beforeAll(async () => {
    otlp = new OtlpReceiver();
    const endpoint = await otlp.start();
    hook = await startReceiver();
    // The test's own app only creates the Admin, under the processes' key prefix.
    subject = await createTestApp(WEBHOOK_TEST_ENV);
    const email = `hook-tracer-${randomUUID().slice(0, 8)}@example.com`;
    await subject.createUser({ email, password: PASSWORD, roles: ['Admin'] });
    env = {
      ...testRedisEnv(),
      ...WEBHOOK_TEST_ENV,
      REDIS_KEY_PREFIX: subject.config.redisKeyPrefix,
      // One retry, far enough for the test to answer it differently.
      WEBHOOK_RETRY_SCHEDULE: '2s',
    };
    tracing = {
      ...tracingEnv(endpoint),
    };
    ingress = await startIngressProcess({ ...env, ...tracing }, 60_000);
    await startWorker(tracing);
    const answer = await post('/api/auth/token', {
      grant_type: 'password',
      username: email,
      password: PASSWORD,
    });
    token = String(answer.body.access_token);
    subscriptionId = randomUUID();
    const created = await command('CreateWebhookSubscription', {
      aggregateRootId: subscriptionId,
      url: hook.url,
      eventTypes: ['FantasyTeamCreatedEvent', 'FantasyTeamLinkedEvent', 'FantasyTeamUnlinkedEvent'],
    });
    secret = String(created.body.signingSecret);
  }, 120_000);

  afterAll(async () => {
    await killAll(ingress?.process, worker);
    await hook?.stop();
    await subject?.close();
    await otlp?.close();
  });

  it("When a LinkFantasyTeam is sent with a traceparent, then the webhook receiver gets a traceparent of that trace, and each attempt is a worker's span in it", async () => {
    const teamId = randomUUID();
    await command('CreateFantasyTeam', { aggregateRootId: teamId, name: 'Hooked XI' });
    await eventually(() => deliveriesOf(teamId, 'FantasyTeamCreatedEvent').length > 0, 20_000);

    // The first attempt fails: the retry is a second span of the same trace.
    hook.status = 503;
    const traceId = randomBytes(16).toString('hex');
    await command(
      'LinkFantasyTeam',
      { aggregateRootId: teamId, fantasyTeamExternalId: 7, fantasyUserId: 11 },
      `00-${traceId}-${randomBytes(8).toString('hex')}-01`,
    );
    await eventually(() => deliveriesOf(teamId, 'FantasyTeamLinkedEvent').length > 0, 20_000);
    hook.status = 200;
    await eventually(() => deliveriesOf(teamId, 'FantasyTeamLinkedEvent').length === 2, 20_000);
    const [failed, delivered] = deliveriesOf(teamId, 'FantasyTeamLinkedEvent');
    const eventId = failed!.id;
    await eventually(() => deliverySpans(eventId).length >= 2, 20_000);

    const commandSpan = otlp.ofTrace(traceId).find((span) => span.name === 'command LinkFantasyTeam');
    expect(commandSpan).toBeDefined();
    const spans = deliverySpans(eventId);
    for (const [i, delivery] of [failed!, delivered!].entries()) {
      // The receiver's traceparent names the trace and, as parent, that attempt's span.
      const [, headerTraceId, headerSpanId] =
        TRACEPARENT.exec(String(delivery.delivery.headers.traceparent)) ?? [];
      expect(headerTraceId).toBe(traceId);
      const span = spans.find((candidate) => candidate.spanId === headerSpanId);
      expect(span).toMatchObject({
        traceId,
        parentSpanId: commandSpan!.spanId,
        resource: { 'service.name': 'fantasy-team-service-worker', 'process.pid': worker!.child.pid },
        attributes: {
          'http.request.method': 'POST',
          'fts.webhook.subscription.id': subscriptionId,
          'fts.event.type': 'FantasyTeamLinkedEvent',
          'fts.webhook.attempt': i + 1,
          'fts.webhook.outcome': i === 0 ? 'retrying' : 'delivered',
          'http.response.status_code': i === 0 ? 503 : 200,
        },
      });
      // The signature is the same as without tracing: traceparent is not signed.
      expect(verifies(delivery.delivery, secret)).toBe(true);
    }
    // No span names the endpoint's URL, which may carry its token.
    expect(JSON.stringify(otlp.spans)).not.toContain(hook.url);
  }, 90_000);

  it("When a command's trace is not sampled, then its webhook request has no traceparent and no delivery span is written", async () => {
    const teamId = randomUUID();
    await command(
      'CreateFantasyTeam',
      { aggregateRootId: teamId, name: 'Unsampled XI' },
      `00-${randomBytes(16).toString('hex')}-${randomBytes(8).toString('hex')}-00`,
    );
    // A sampled event after it in the same stream: delivered, and its span exported, after the first.
    await command('LinkFantasyTeam', {
      aggregateRootId: teamId,
      fantasyTeamExternalId: 8,
      fantasyUserId: 12,
    });
    await eventually(() => deliveriesOf(teamId, 'FantasyTeamLinkedEvent').length > 0, 20_000);
    const marker = deliveriesOf(teamId, 'FantasyTeamLinkedEvent')[0]!;
    await eventually(() => deliverySpans(marker.id).length > 0, 20_000);

    const [unsampled] = deliveriesOf(teamId, 'FantasyTeamCreatedEvent');
    expect(unsampled).toBeDefined();
    expect(unsampled!.delivery.headers.traceparent).toBeUndefined();
    expect(deliverySpans(unsampled!.id)).toEqual([]);
    expect(marker.delivery.headers.traceparent).toMatch(TRACEPARENT);
  }, 60_000);

  it('When the worker runs without tracing, then a traced event is delivered without traceparent', async () => {
    worker!.child.kill('SIGTERM');
    expect(await worker!.exited).toBe(0);
    await startWorker({});
    const teamId = randomUUID();
    const traceId = randomBytes(16).toString('hex');
    await command(
      'CreateFantasyTeam',
      { aggregateRootId: teamId, name: 'Untraced worker XI' },
      `00-${traceId}-${randomBytes(8).toString('hex')}-01`,
    );
    await eventually(() => deliveriesOf(teamId, 'FantasyTeamCreatedEvent').length > 0, 20_000);
    // The ingress traced the command (its event carries the trace); the worker sends none of it on.
    await eventually(
      () => otlp.ofTrace(traceId).some((span) => span.name === 'command CreateFantasyTeam'),
      20_000,
    );
    expect(deliveriesOf(teamId, 'FantasyTeamCreatedEvent')[0]!.delivery.headers.traceparent).toBeUndefined();
  }, 90_000);
});
