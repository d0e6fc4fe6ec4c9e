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

const JWT_SECRET = 'a-tracing-test-secret-of-at-least-32-characters';
const PASSWORD = 'tracing-test-password';

describe('A command traced through the standard OpenTelemetry variables', () => {
  let subject: TestApp;
  let receiver: OtlpReceiver;
  let ingress: IngressProcess | undefined;
  let worker: ServiceProcess | undefined;
  let token: string;

  const post = (path: string, body: object, headers: Record<string, string> = {}) =>
    postJsonTo(ingress!, path, body, headers);

  beforeAll(async () => {
    receiver = new OtlpReceiver();
    const endpoint = await receiver.start();
    // The test's own app only creates the account, under the process's key prefix.
    subject = await createTestApp({ JWT_SECRET });
    const email = `tracer-${randomUUID().slice(0, 8)}@example.com`;
    await subject.createUser({ email, password: PASSWORD, roles: ['Member'] });
    const env = {
      ...testRedisEnv(),
      REDIS_KEY_PREFIX: subject.config.redisKeyPrefix,
      JWT_SECRET,
      ...tracingEnv(endpoint),
      OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment.name=tracing-test',
    };
    worker = startServiceProcess('workers/main.ts', env);
    ingress = await startIngressProcess(env, 60_000);
    await worker.waitForOutput('worker ready', 60_000);
    const answer = await post('/api/auth/token', {
      grant_type: 'password',
      username: email,
      password: PASSWORD,
    });
    token = String(answer.body.access_token);
  }, 90_000);

  afterAll(async () => {
    await killAll(ingress?.process, worker);
    await subject?.close();
    await receiver?.close();
  });

  it("When a LinkFantasyTeam comes with a traceparent, then the ingress's spans of it continue that trace, its log lines name it, its events carry it to the projector's spans, and probes are not traced", async () => {
    const teamId = randomUUID();
    const created = await post(
      '/api/command',
      { commandType: 'CreateFantasyTeam', command: { aggregateRootId: teamId, name: 'Traced XI' } },
      { authorization: `Bearer ${token}` },
    );
    expect(created.status).toBe(200);

    // A probe, traced by its caller: sent before the command, its spans would leave no later than the command's.
    const probeTraceId = randomBytes(16).toString('hex');
    const probe = await fetch(`${ingress!.baseUrl}/readyz`, {
      headers: { traceparent: `00-${probeTraceId}-${randomBytes(8).toString('hex')}-01` },
    });
    expect(probe.status).toBe(200);

    const traceId = randomBytes(16).toString('hex');
    const callerSpanId = randomBytes(8).toString('hex');
    const linked = await post(
      '/api/command',
      {
        commandType: 'LinkFantasyTeam',
        command: { aggregateRootId: teamId, fantasyTeamExternalId: 7, fantasyUserId: 11 },
        expectedVersion: 1,
      },
      { authorization: `Bearer ${token}`, traceparent: `00-${traceId}-${callerSpanId}-01` },
    );
    expect(linked.status).toBe(200);

    const ofTrace = () => receiver.spans.filter((span) => span.traceId === traceId);
    const named = (name: string) => ofTrace().find((span) => span.name === name);
    const ingressSpans = () =>
      ofTrace().filter((span) => span.resource['service.name'] === 'fantasy-team-service-ingress');
    const projected = () => ofTrace().filter((span) => span.name.startsWith('project '));
    await eventually(
      () =>
        named('EVALSHA appendEvents') !== undefined &&
        named('POST /api/command') !== undefined &&
        projected().length > 0,
      15_000,
    );

    for (const span of ingressSpans()) {
      expect(span.resource).toMatchObject({
        'service.name': 'fantasy-team-service-ingress',
        'deployment.environment.name': 'tracing-test',
        'process.pid': ingress!.process.child.pid,
      });
      expect(span.resource['service.instance.id']).toEqual(expect.any(String));
    }
    // The HTTP server span is the caller's span's child.
    const server = ofTrace().find((span) => span.parentSpanId === callerSpanId);
    expect(server).toMatchObject({
      name: 'POST /api/command',
      attributes: { 'http.request.method': 'POST', 'http.route': '/api/command' },
    });

    const command = named('command LinkFantasyTeam');
    expect(command?.attributes).toEqual(
      expect.objectContaining({
        'fts.command.type': 'LinkFantasyTeam',
        'fts.aggregate.type': 'fantasy-team',
        'fts.aggregate.id': teamId,
        'fts.version.expected': 1,
        'fts.version.new': 2,
        'fts.command.outcome': 'accepted',
      }),
    );
    // One span per script, both the command's children.
    for (const script of ['lockAndLoad', 'appendEvents']) {
      const spans = ofTrace().filter((span) => span.name === `EVALSHA ${script}`);
      expect(spans).toHaveLength(1);
      expect(spans[0]).toMatchObject({
        parentSpanId: command?.spanId,
        attributes: { 'db.system.name': 'redis', 'db.stored_procedure.name': script },
      });
    }
    // The worker applied the event in the command's trace: a child of the command's span.
    for (const span of projected()) {
      expect(span).toMatchObject({
        parentSpanId: command?.spanId,
        resource: { 'service.name': 'fantasy-team-service-worker', 'process.pid': worker!.child.pid },
        attributes: {
          'fts.event.type': 'FantasyTeamLinkedEvent',
          'fts.aggregate.id': teamId,
          'fts.event.version': 2,
        },
      });
      expect(span.attributes['fts.projection.lag_ms']).toEqual(expect.any(Number));
    }
    expect(receiver.contentTypes).toContain('application/json');
    expect(receiver.spans.filter((span) => span.traceId === probeTraceId)).toEqual([]);

    // The request's access line carries the trace and a span of it.
    const lines = ingress!.process
      .stdout()
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    const spanIds = ofTrace().map((span) => span.spanId);
    const access = lines.find((line) => line.message === 'request finished' && line.trace_id === traceId);
    expect(access).toMatchObject({ path: '/api/command', status: 200 });
    expect(spanIds).toContain(access?.span_id);
  }, 60_000);
});

describe('Spans sent as OTLP/HTTP protobuf', () => {
  let subject: TestApp;
  let receiver: OtlpReceiver;

  beforeAll(async () => {
    receiver = new OtlpReceiver();
    subject = await createTestApp({ JWT_SECRET });
  });
  afterAll(async () => {
    await subject?.close();
    await receiver?.close();
  });

  it('When the ingress and the worker stop on SIGTERM, then the spans still buffered are sent before they exit', async () => {
    const env = {
      ...testRedisEnv(),
      REDIS_KEY_PREFIX: subject.config.redisKeyPrefix,
      JWT_SECRET,
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${await receiver.start()}/v1/traces`,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf',
      // Nothing leaves on the schedule within the test: only the shutdown's flush sends.
      OTEL_BSP_SCHEDULE_DELAY: '600000',
    };
    const worker = startServiceProcess('workers/main.ts', env);
    let ingress: IngressProcess | undefined;
    try {
      ingress = await startIngressProcess(env, 60_000);
      await worker.waitForOutput('worker ready', 60_000);
      const traceId = randomBytes(16).toString('hex');
      const answer = await fetch(`${ingress.baseUrl}/api/command`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', traceparent: `00-${traceId}-${'1'.repeat(16)}-01` },
        body: '{}',
      });
      expect(answer.status).toBe(401);
      expect(receiver.protobufBodies).toEqual([]);

      ingress.process.child.kill('SIGTERM');
      worker.child.kill('SIGTERM');
      expect(await ingress.process.exited).toBe(0);
      expect(await worker.exited).toBe(0);
      const sent = Buffer.concat(receiver.protobufBodies);
      expect(sent.includes(Buffer.from(traceId, 'hex'))).toBe(true);
      expect(sent.includes(Buffer.from('fantasy-team-service-ingress'))).toBe(true);
    } finally {
      await killAll(ingress?.process, worker);
    }
  }, 120_000);
});
