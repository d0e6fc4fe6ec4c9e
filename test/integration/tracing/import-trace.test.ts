import { randomBytes, randomUUID } from 'node:crypto';

import { Queue } from 'bullmq';

import { IMPORT_QUEUE_NAME } from '../../../shared/importers/import-queue';
import { closeConnections } from '../../../shared/redis/connections';
import { createTestApp, openTestRedis, type TestApp, testRedisEnv } from '../../helpers/app-fixture';
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
import { seedUsers } from '../../helpers/seed-users';

const JWT_SECRET = 'an-import-tracing-test-secret-of-at-least-32-characters';
const PASSWORD = 'import-tracing-password';
const INGRESS = 'fantasy-team-service-ingress';
const WORKER = 'fantasy-team-service-worker';

/** The span ids from `span` up through its parents within `spans`, ending where a parent is not among them. */
function ancestry(span: ReceivedSpan, spans: readonly ReceivedSpan[]): string[] {
  const byId = new Map(spans.map((each) => [each.spanId, each]));
  const chain: string[] = [];
  for (let parentId = span.parentSpanId; parentId; parentId = byId.get(parentId)?.parentSpanId) {
    chain.push(parentId);
    if (!byId.has(parentId) || chain.length > 50) break;
  }
  return chain;
}

const serviceOf = (span: ReceivedSpan) => span.resource['service.name'];

describe("An import's trace, from its request to its commands", () => {
  let subject: TestApp;
  let receiver: OtlpReceiver;
  let ingress: IngressProcess | undefined;
  let worker: ServiceProcess | undefined;
  let authorization: string;

  const post = (path: string, body: object, headers: Record<string, string> = {}) =>
    postJsonTo(ingress!, path, body, { authorization, ...headers });

  /** Sends a UserSeeding import of three new Members inside the caller's span `callerSpanId` of `traceId`. */
  const submitSeeding = (priority: 'Normal' | 'High', traceId: string, callerSpanId: string) =>
    post(
      '/api/import',
      {
        requestId: randomUUID(),
        importerType: 'UserSeeding',
        priority,
        importData: { enabled: true, skipIfUsersExist: false, users: seedUsers(3, { label: 'traced' }) },
      },
      { traceparent: `00-${traceId}-${callerSpanId}-01` },
    );

  beforeAll(async () => {
    receiver = new OtlpReceiver();
    const endpoint = await receiver.start();
    // The test's own app only creates the account, under the processes' key prefix.
    subject = await createTestApp({ JWT_SECRET });
    const email = `import-tracer-${randomUUID().slice(0, 8)}@example.com`;
    await subject.createUser({ email, password: PASSWORD, roles: ['UserManager'] });
    authorization = `Basic ${Buffer.from(`${email}:${PASSWORD}`).toString('base64')}`;
    const env = {
      ...testRedisEnv(),
      REDIS_KEY_PREFIX: subject.config.redisKeyPrefix,
      JWT_SECRET,
      ...tracingEnv(endpoint),
      // The stalled-job check every second: BullMQ's upkeep runs often while the tests watch it.
      IMPORT_JOB_LOCK_MS: '2000',
    };
    // Both compile at once: on a loaded machine that takes well over a minute.
    worker = startServiceProcess('workers/main.ts', env);
    ingress = await startIngressProcess(env, 120_000);
    await worker.waitForOutput('worker ready', 120_000);
  }, 240_000);

  afterAll(async () => {
    await killAll(ingress?.process, worker);
    await subject?.close();
    await receiver?.close();
  });

  it("When a Normal import comes with a traceparent, then the ingress's request span, the worker's run of its job and each of its commands in the worker are spans of that trace under the caller's span, and the idle worker's upkeep is traced nowhere", async () => {
    const traceId = randomBytes(16).toString('hex');
    const callerSpanId = randomBytes(8).toString('hex');
    const submitted = await submitSeeding('Normal', traceId, callerSpanId);
    expect(submitted.status).toBe(200);
    expect(submitted.body).toMatchObject({ status: 'Pending', processedSynchronously: false });

    const spans = () => receiver.ofTrace(traceId);
    const commandsIn = (service: string) =>
      spans().filter((span) => span.name === 'command CreateUser' && serviceOf(span) === service);
    const run = () => spans().find((span) => span.name === 'process imports');
    await eventually(() => commandsIn(WORKER).length === 3 && run() !== undefined, 30_000);

    const server = spans().find((span) => span.parentSpanId === callerSpanId);
    expect(server).toMatchObject({ name: 'POST /api/import', resource: { 'service.name': INGRESS } });
    // The job was added in the request, and run by the worker continuing that.
    const added = spans().find((span) => span.name === 'add imports.UserSeeding');
    expect(added?.resource['service.name']).toBe(INGRESS);
    expect(ancestry(added!, spans())).toContain(server?.spanId);
    expect(run()).toMatchObject({
      parentSpanId: added?.spanId,
      resource: { 'service.name': WORKER, 'process.pid': worker!.child.pid },
      attributes: expect.objectContaining({ 'bullmq.job.id': submitted.body.importJobId }),
    });
    expect(commandsIn(INGRESS)).toEqual([]);
    for (const command of commandsIn(WORKER)) {
      const chain = ancestry(command, spans());
      expect(chain).toEqual(expect.arrayContaining([run()?.spanId, added?.spanId, server?.spanId]));
      expect(chain.at(-1)).toBe(callerSpanId);
      expect(command.attributes).toMatchObject({ 'fts.command.outcome': 'accepted' });
    }

    // Idle since, the worker checks for stalled jobs every second and polls the queue: none of that
    // is traced (BullMQ would make it one trace that never ends). Every trace the worker sent spans
    // of was started by a request to the ingress (its projector's spans join their commands' traces).
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    const requestTraces = new Set(
      receiver.spans.filter((span) => serviceOf(span) === INGRESS).map((span) => span.traceId),
    );
    const upkeep = receiver.spans.filter(
      (span) => serviceOf(span) === WORKER && !requestTraces.has(span.traceId),
    );
    expect(upkeep.map((span) => span.name)).toEqual([]);
  }, 60_000);

  it("When a High import comes with a traceparent while the queue is idle, then it runs in the ingress and its commands are spans of that trace under the request's span", async () => {
    // Idle, as the inline run needs it: read on a queue connection of the test's own, which waits
    // for a loaded Redis (the app's fails fast).
    const connection = openTestRedis(subject.logger, 'queue');
    const queue = new Queue(IMPORT_QUEUE_NAME, {
      connection,
      prefix: subject.services.keys.importQueuePrefix(),
    });
    try {
      await eventually(async () => {
        const counts = await queue.getJobCounts('active', 'waiting', 'prioritized', 'delayed');
        return Object.values(counts).every((count) => count === 0);
      }, 30_000);
    } finally {
      await queue.close();
      await closeConnections(connection);
    }
    const traceId = randomBytes(16).toString('hex');
    const callerSpanId = randomBytes(8).toString('hex');
    const submitted = await submitSeeding('High', traceId, callerSpanId);
    expect(submitted.status).toBe(200);
    expect(submitted.body).toMatchObject({ status: 'Completed', processedSynchronously: true });

    const spans = () => receiver.ofTrace(traceId);
    const commands = () => spans().filter((span) => span.name === 'command CreateUser');
    await eventually(() => commands().length === 3, 15_000);

    const server = spans().find((span) => span.parentSpanId === callerSpanId);
    expect(server).toMatchObject({ name: 'POST /api/import', resource: { 'service.name': INGRESS } });
    // The worker only projects the commands' events, in this same trace (ADR 0031).
    const inWorker = spans().filter((span) => serviceOf(span) === WORKER);
    expect(inWorker.filter((span) => !span.name.startsWith('project '))).toEqual([]);
    for (const command of commands()) {
      expect(serviceOf(command)).toBe(INGRESS);
      const chain = ancestry(command, spans());
      expect(chain).toContain(server?.spanId);
      expect(chain.at(-1)).toBe(callerSpanId);
    }
  }, 60_000);
});
