import { randomBytes, randomUUID } from 'node:crypto';

import { USER_AGENT_MAX_LENGTH } from '../../../ingress/http/server-span';
import { createTestApp, type TestApp, testRedisEnv } from '../../helpers/app-fixture';
import { storedImportJob } from '../../helpers/import-workers';
import { OtlpReceiver, type ReceivedSpan, tracingEnv } from '../../helpers/otlp-receiver';
import {
  eventually,
  type IngressProcess,
  killAll,
  postJsonTo,
  type ServiceProcess,
  startIngressProcess,
  startServiceProcess,
} from '../../helpers/processes';
import { redisContents } from '../../helpers/redis-state';
import { seedUsers } from '../../helpers/seed-users';

const JWT_SECRET = 'an-untrusted-trace-input-test-secret-of-32-characters';
const PASSWORD = 'untrusted-trace-input-password';

/** A fresh trace id and a caller's sampled `traceparent` in it, so a test finds its request's spans. */
function callerTrace(): { traceId: string; traceparent: string } {
  const traceId = randomBytes(16).toString('hex');
  return { traceId, traceparent: `00-${traceId}-${randomBytes(8).toString('hex')}-01` };
}

/** Every attribute value of every span, as text. */
const attributeTexts = (spans: readonly ReceivedSpan[]) =>
  spans.flatMap((span) => Object.values(span.attributes).map((value) => JSON.stringify(value)));

describe('What a caller writes reaches a trace only bounded, and a job or an event only as a traceparent', () => {
  let subject: TestApp;
  let receiver: OtlpReceiver;
  let ingress: IngressProcess | undefined;
  let behindProxy: IngressProcess | undefined;
  let worker: ServiceProcess | undefined;
  let authorization: string;
  let env: Record<string, string>;

  /** The server span of the request that came with `traceId`, once exported. */
  async function serverSpanOf(traceId: string): Promise<ReceivedSpan> {
    const server = () => receiver.ofTrace(traceId).find((span) => span.attributes['http.request.method']);
    await eventually(() => server() !== undefined, 15_000);
    return server()!;
  }

  beforeAll(async () => {
    receiver = new OtlpReceiver();
    const endpoint = await receiver.start();
    subject = await createTestApp({ JWT_SECRET });
    const email = `untrusted-tracer-${randomUUID().slice(0, 8)}@example.com`;
    await subject.createUser({ email, password: PASSWORD, roles: ['UserManager'] });
    authorization = `Basic ${Buffer.from(`${email}:${PASSWORD}`).toString('base64')}`;
    env = {
      ...testRedisEnv(),
      REDIS_KEY_PREFIX: subject.config.redisKeyPrefix,
      JWT_SECRET,
      ...tracingEnv(endpoint),
    };
    // Both compile at once: on a loaded machine that takes well over a minute.
    [ingress, behindProxy] = await Promise.all([
      startIngressProcess({ ...env, TRUST_PROXY: 'false' }, 120_000),
      startIngressProcess({ ...env, TRUST_PROXY: 'loopback' }, 120_000),
    ]);
  }, 240_000);

  afterAll(async () => {
    await killAll(ingress?.process, behindProxy?.process, worker);
    await subject?.close();
    await receiver?.close();
  });

  it('When an anonymous caller sends a token in the query string, then no span exports the query string, the token or its name', async () => {
    const secret = `secret${randomBytes(12).toString('hex')}`;
    const { traceId, traceparent } = callerTrace();
    const response = await fetch(`${ingress!.baseUrl}/api/events?access_token=${secret}&x=1`, {
      headers: { traceparent },
    });
    await response.body?.cancel();

    const server = await serverSpanOf(traceId);
    expect(server.attributes['url.path']).toBe('/api/events');
    for (const name of ['url.query', 'url.full', 'http.target', 'http.url']) {
      expect(server.attributes).not.toHaveProperty([name]);
    }
    // Every attribute of every span sent so far, this request's and all others'.
    const texts = [...attributeTexts(receiver.spans), ...receiver.spans.map((span) => span.name)];
    expect(
      texts.filter((text) => text.includes(secret) || text.includes('access_token') || text.includes('x=1')),
    ).toEqual([]);
  }, 30_000);

  it("When a caller writes Forwarded and X-Forwarded-For to an ingress that trusts no proxy, then the span's client.address is the socket's peer", async () => {
    const { traceId, traceparent } = callerTrace();
    const response = await fetch(`${ingress!.baseUrl}/api/events`, {
      headers: { traceparent, 'x-forwarded-for': '6.6.6.6', forwarded: 'for=6.6.6.6' },
    });
    await response.body?.cancel();

    const server = await serverSpanOf(traceId);
    expect(server.attributes['client.address']).toBe('127.0.0.1');
    expect(server.attributes['network.peer.address']).toBe('127.0.0.1');
  }, 30_000);

  it('When an ingress trusts the loopback proxy (TRUST_PROXY=loopback), then client.address follows X-Forwarded-For from it, as req.ip does, and never Forwarded, which Express does not read', async () => {
    const viaProxy = callerTrace();
    const forwardedFor = await fetch(`${behindProxy!.baseUrl}/api/events`, {
      headers: { traceparent: viaProxy.traceparent, 'x-forwarded-for': '6.6.6.6' },
    });
    await forwardedFor.body?.cancel();
    const onlyForwarded = callerTrace();
    const forwarded = await fetch(`${behindProxy!.baseUrl}/api/events`, {
      headers: { traceparent: onlyForwarded.traceparent, forwarded: 'for=7.7.7.7' },
    });
    await forwarded.body?.cancel();

    expect((await serverSpanOf(viaProxy.traceId)).attributes['client.address']).toBe('6.6.6.6');
    expect((await serverSpanOf(onlyForwarded.traceId)).attributes['client.address']).toBe('127.0.0.1');
  }, 30_000);

  it('When a caller sends a 10 KB user agent, then the span exports its first USER_AGENT_MAX_LENGTH characters', async () => {
    const userAgent = `agent/${randomBytes(5_120).toString('hex')}`.slice(0, 10_240);
    const { traceId, traceparent } = callerTrace();
    const response = await fetch(`${ingress!.baseUrl}/api/events`, {
      headers: { traceparent, 'user-agent': userAgent },
    });
    await response.body?.cancel();

    const server = await serverSpanOf(traceId);
    const exported = String(server.attributes['user_agent.original']);
    expect(exported.length).toBe(USER_AGENT_MAX_LENGTH);
    expect(exported === userAgent.slice(0, USER_AGENT_MAX_LENGTH)).toBe(true);
    expect(USER_AGENT_MAX_LENGTH).toBeLessThan(1_024);
  }, 30_000);

  it("When a queued import comes with a caller's 6 KB of baggage and of tracestate, then its job stores only a traceparent, and neither reaches Redis once the worker has run it and its events are stored", async () => {
    const marker = `leak${randomBytes(6).toString('hex')}`;
    // 3 baggage members of 2 KB (the W3C limit is 8 KB in all), 30 tracestate members of 200 characters.
    const baggage = [0, 1, 2].map((i) => `k${i}=${marker}${'b'.repeat(2_000 - marker.length)}`).join(',');
    const tracestate = Array.from(
      { length: 30 },
      (_, i) => `v${i}=${marker}${'t'.repeat(200 - marker.length)}`,
    ).join(',');
    expect(baggage.length + tracestate.length).toBeGreaterThan(12_000);
    const { traceId, traceparent } = callerTrace();

    const submitted = await postJsonTo(
      ingress!,
      '/api/import',
      {
        requestId: randomUUID(),
        importerType: 'UserSeeding',
        priority: 'Normal',
        importData: { enabled: true, skipIfUsersExist: false, users: seedUsers(2, { label: 'baggage' }) },
      },
      { authorization, traceparent, baggage, tracestate },
    );
    expect(submitted.status).toBe(200);
    expect(submitted.body).toMatchObject({ status: 'Pending', processedSynchronously: false });

    // No worker yet: the job waits in Redis as the ingress stored it.
    const { fields: job, traceCarrier: carried } = await storedImportJob(
      subject,
      String(submitted.body.importJobId),
    );
    expect(job.opts).toBeDefined();
    expect(Object.keys(carried)).toEqual(['traceparent']);
    expect(carried.traceparent).toMatch(new RegExp(`^00-${traceId}-[0-9a-f]{16}-01$`));
    expect(Object.values(job).filter((value) => value.includes(marker))).toEqual([]);

    worker = startServiceProcess('workers/main.ts', env);
    await worker.waitForOutput('worker ready', 120_000);
    const commands = () => receiver.ofTrace(traceId).filter((span) => span.name === 'command CreateUser');
    await eventually(() => commands().length === 2, 60_000);

    // The users' events carry their commands' traceparent, in this trace; nothing stored holds the marker.
    const contents = await redisContents(subject.redis, subject.config.redisKeyPrefix);
    const holdingTrace = Object.keys(contents).filter((key) => contents[key]!.includes(`00-${traceId}-`));
    expect(holdingTrace.length).toBeGreaterThan(0);
    expect(Object.keys(contents).filter((key) => contents[key]!.includes(marker))).toEqual([]);
    // Exported, the baggage is nowhere, and the tracestate the spans keep is the SDK's bound of it.
    const exported = receiver.ofTrace(traceId) as (ReceivedSpan & { readonly traceState?: string })[];
    expect(exported.filter((span) => JSON.stringify(span).includes('b'.repeat(100)))).toEqual([]);
    expect(exported.filter((span) => (span.traceState ?? '').length > 512)).toEqual([]);
  }, 240_000);
});
