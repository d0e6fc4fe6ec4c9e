/**
 * The sampling decision as an operator sets it for production (issue 41: `parentbased_traceidratio`
 * at 1%), on a real ingress process exporting to an OTLP receiver: a caller's sampled trace is
 * continued and exported; an unsampled caller's is continued (its trace id goes on, into a queued
 * import's job) and nothing of it is exported; with no caller context, about 1% of new traces are
 * kept; and a server span carries the attributes of the HTTP semantic conventions. These hold whatever
 * writes the server span.
 */
import { randomBytes, randomUUID } from 'node:crypto';

import { createTestApp, type TestApp, testRedisEnv } from '../../helpers/app-fixture';
import { bearerToken } from '../../helpers/http-client';
import { storedImportJob } from '../../helpers/import-workers';
import { OtlpReceiver, type ReceivedSpan, tracingEnv } from '../../helpers/otlp-receiver';
import {
  eventually,
  type IngressProcess,
  killAll,
  postJsonTo,
  startIngressProcess,
} from '../../helpers/processes';
import { seedUsers } from '../../helpers/seed-users';

const JWT_SECRET = 'a-sampling-decision-test-secret-of-32-characters';
const PASSWORD = 'sampling-decision-password';
/** Requests without a caller context: at 1%, 20 kept on average; outside 5-45 about once in 50,000 runs. */
const ROOT_REQUESTS = 2_000;
const LANES = 20;

/** A caller's `traceparent` in a fresh trace, sampled or not. */
function callerTrace(sampled: boolean): { traceId: string; spanId: string; traceparent: string } {
  const traceId = randomBytes(16).toString('hex');
  const spanId = randomBytes(8).toString('hex');
  return { traceId, spanId, traceparent: `00-${traceId}-${spanId}-${sampled ? '01' : '00'}` };
}

describe('The sampling decision at 1% (parentbased_traceidratio)', () => {
  let subject: TestApp;
  let receiver: OtlpReceiver;
  let ingress: IngressProcess | undefined;
  let authorization: string;

  const serverSpans = (traceId: string): ReceivedSpan[] =>
    receiver.ofTrace(traceId).filter((span) => span.attributes['http.request.method'] !== undefined);
  /** A CurrentUser read with `headers`; its status. */
  const currentUser = async (headers: Record<string, string> = {}) => {
    const response = await fetch(`${ingress!.baseUrl}/api/readmodel`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization, ...headers },
      body: JSON.stringify({ query: { queryType: 'CurrentUser' } }),
    });
    await response.arrayBuffer();
    return response.status;
  };
  /**
   * Sends a sampled request and waits for its server span: the exporter sends spans in the order
   * they ended, so every span of a request answered before it has arrived by then.
   */
  const exportedSoFar = async () => {
    const barrier = callerTrace(true);
    expect(await currentUser({ traceparent: barrier.traceparent })).toBe(200);
    await eventually(() => serverSpans(barrier.traceId).length === 1, 30_000);
  };

  beforeAll(async () => {
    receiver = new OtlpReceiver();
    const endpoint = await receiver.start();
    subject = await createTestApp({ JWT_SECRET });
    const email = `sampling-${randomUUID().slice(0, 8)}@example.com`;
    await subject.createUser({ email, password: PASSWORD, roles: ['UserManager'] });
    ingress = await startIngressProcess(
      {
        ...testRedisEnv(),
        REDIS_KEY_PREFIX: subject.config.redisKeyPrefix,
        JWT_SECRET,
        RATE_LIMIT_PER_ACCOUNT: '100000',
        ...tracingEnv(endpoint),
        OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
        OTEL_TRACES_SAMPLER_ARG: '0.01',
      },
      120_000,
    );
    authorization = await bearerToken(ingress.baseUrl, email, PASSWORD);
  }, 180_000);

  afterAll(async () => {
    await killAll(ingress?.process);
    await subject?.close();
    await receiver?.close();
  });

  it("When a caller's trace is sampled, then the request's server span is exported in it, a child of the caller's span", async () => {
    const caller = callerTrace(true);
    expect(await currentUser({ traceparent: caller.traceparent })).toBe(200);
    await eventually(() => serverSpans(caller.traceId).length === 1, 30_000);
    expect(serverSpans(caller.traceId)[0]).toMatchObject({ parentSpanId: caller.spanId });
  });

  it.each([
    ['answered 200', 'Bearer', 200],
    ['refused 401', 'Bearer not-a-token', 401],
  ])(
    'When a sampled request is %s, then its server span carries the attributes of the HTTP semantic conventions, as the maintained instrumentation wrote them',
    async (_, scheme, status) => {
      const caller = callerTrace(true);
      const answered = await currentUser({
        traceparent: caller.traceparent,
        'user-agent': 'attributes-test/1.0',
        ...(status === 200 ? {} : { authorization: scheme }),
      });
      expect(answered).toBe(status);
      await eventually(() => serverSpans(caller.traceId).length === 1, 30_000);
      const [span] = serverSpans(caller.traceId) as [
        ReceivedSpan & { kind?: number; status?: { code?: number } },
      ];
      expect(span.name).toBe('POST /api/readmodel');
      expect(span.kind).toBe(2); // SERVER
      // A 4xx is the caller's error, not the server's: the span's status stays unset.
      expect(span.status?.code ?? 0).toBe(0);
      expect(span.attributes).toEqual({
        'http.request.method': 'POST',
        'http.route': '/api/readmodel',
        'http.response.status_code': status,
        'url.scheme': 'http',
        'url.path': '/api/readmodel',
        'server.address': '127.0.0.1',
        'server.port': Number(new URL(ingress!.baseUrl).port),
        'client.address': '127.0.0.1',
        'network.peer.address': '127.0.0.1',
        'network.peer.port': expect.any(Number),
        'network.protocol.version': '1.1',
        'user_agent.original': 'attributes-test/1.0',
      });
    },
  );

  it("When a caller's trace is not sampled, then its trace id goes on into the queued import's job, unsampled, and nothing of the trace is exported", async () => {
    const caller = callerTrace(false);
    const submitted = await postJsonTo(
      ingress!,
      '/api/import',
      {
        requestId: randomUUID(),
        importerType: 'UserSeeding',
        priority: 'Normal',
        importData: { users: seedUsers(1, { label: 'unsampled' }) },
      },
      { authorization, traceparent: caller.traceparent },
    );
    expect(submitted.status).toBe(200);
    const importJobId = String(submitted.body.importJobId);

    // No worker runs here: the job waits in Redis as the ingress stored it.
    const { traceCarrier: carried } = await storedImportJob(subject, importJobId);
    expect(carried.traceparent).toMatch(new RegExp(`^00-${caller.traceId}-[0-9a-f]{16}-00$`));
    await exportedSoFar();
    expect(receiver.ofTrace(caller.traceId)).toEqual([]);
  });

  it(`When ${ROOT_REQUESTS} requests come without a caller context, then about 1% of their traces are kept (5 to 45)`, async () => {
    const userAgent = `sampling-decision-${randomUUID()}`;
    let sent = 0;
    await Promise.all(
      Array.from({ length: LANES }, async () => {
        while (sent < ROOT_REQUESTS) {
          sent += 1;
          expect(await currentUser({ 'user-agent': userAgent })).toBe(200);
        }
      }),
    );
    await exportedSoFar();
    const kept = receiver.spans.filter(
      (span) =>
        span.attributes['user_agent.original'] === userAgent && span.attributes['http.request.method'],
    );
    // Each kept one is a trace of its own, a root.
    expect(new Set(kept.map((span) => span.traceId)).size).toBe(kept.length);
    expect(kept.every((span) => span.parentSpanId === undefined || span.parentSpanId === '')).toBe(true);
    expect(kept.length).toBeGreaterThanOrEqual(5);
    expect(kept.length).toBeLessThanOrEqual(45);
  }, 120_000);
});
