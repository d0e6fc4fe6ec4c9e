/**
 * The request connection does not re-send an unanswered command after a reconnect, so a retried
 * append cannot be reported as "nothing written" when it was written; where the outcome is
 * unknown, the answer says so.
 *
 * The ingress reaches Redis through a proxy that can lose answers. Between deciding and appending
 * (CommandHandlerHooks.beforeAppend) the proxy starts dropping Redis's replies; once the append has
 * run in Redis, it cuts the connection. Re-sent after the reconnect, the append met its own events
 * and would be refused by the version fence: "503 AGGREGATE_BUSY, nothing was written", a lie. So it is
 * the 503 problem saying the command may have taken effect, naming the requestId to retry with,
 * and that retry gets the command's answer without applying it twice.
 */
import { randomUUID } from 'node:crypto';

import request from 'supertest';

import { createLogger } from '../../shared/logger';
import { closeConnections, type RedisClient } from '../../shared/redis/connections';
import { createKeys } from '../../shared/redis/keys';
import { userDecider } from '../../shared/user/user.decider';
import {
  createTestApp,
  onTestCluster,
  openTestRedis,
  type TestApp,
  testRedisEnv,
  uniquePrefix,
} from '../helpers/app-fixture';
import { eventually } from '../helpers/processes';
import { seedUsers } from '../helpers/seed-users';
import { LossyProxy } from '../helpers/tcp-proxy';
import { passwordGrantToken } from '../helpers/tokens';
import { userIdForEmail } from '../helpers/user-ids';

const PASSWORD = 'outcome-unknown-password';
const TEAM = 'fantasy-team';

// A proxy in front of one server: the cluster run has its own options test (test/unit).
const describeOnServer = onTestCluster() ? describe.skip : describe;

describeOnServer('A command whose append ran in Redis but whose answer was lost', () => {
  const prefix = uniquePrefix();
  const keys = createKeys(prefix);
  let proxy: LossyProxy;
  let direct: RedisClient;
  let subject: TestApp;
  let token: string;
  /** The aggregate whose next append loses its answer, and its type. */
  let armedFor: string | undefined;
  let armedType = TEAM;

  beforeAll(async () => {
    proxy = await LossyProxy.start(testRedisEnv().REDIS_URL);
    direct = openTestRedis(createLogger({ level: 'error', processRole: 'test', silent: true }));
    subject = await createTestApp(
      { REDIS_URL: proxy.url, REDIS_KEY_PREFIX: prefix },
      {},
      {
        async beforeAppend(aggregateId) {
          if (aggregateId !== armedFor) return;
          armedFor = undefined;
          // The length before the append, read before it is sent (the handler awaits this hook):
          // read alongside it, the append could land first and the watch below would never end.
          const stream = keys.aggregateStream(armedType, aggregateId);
          const before = await direct.xlen(stream);
          proxy.swallowReplies = true;
          void (async () => {
            // Once the append has run in Redis (seen on a direct connection), the link fails.
            await eventually(async () => (await direct.xlen(stream)) > before, 5_000, 5);
            proxy.cutClients();
          })();
        },
      },
    );
    await subject.createUser({ email: 'unknown-outcome@example.com', password: PASSWORD });
    await subject.createUser({ email: 'importer@example.com', password: PASSWORD, roles: ['UserManager'] });
    token = await passwordGrantToken(subject.app, 'unknown-outcome@example.com', PASSWORD);
  });
  afterAll(async () => {
    await subject.close();
    await closeConnections(direct);
    await proxy.close();
  });

  const send = (body: object) =>
    request(subject.app).post('/api/command').set('Authorization', `Bearer ${token}`).send(body);
  const streamLength = (id: string) => direct.xlen(keys.aggregateStream(TEAM, id));
  /** The outage's 503 problem, to be retried after a second. */
  const expectUnavailable = (res: request.Response) => {
    expect(res.status).toBe(503);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(res.headers['retry-after']).toBe('1');
    expect(res.body).toMatchObject({ status: 503, title: 'Service Unavailable' });
  };
  const expectOutcomeUnknown = (res: request.Response, detail: RegExp) => {
    expectUnavailable(res);
    expect(res.body.detail).toMatch(/the command may have taken effect/);
    expect(res.body.detail).toMatch(detail);
  };

  it('When the answer to an append is lost, then the 503 problem says the command may have taken effect and names its requestId, and the retry with it answers 200 without a second event', async () => {
    const team = randomUUID();
    expect(
      (await send({ commandType: 'CreateFantasyTeam', command: { aggregateRootId: team, name: 'Lossy' } }))
        .status,
    ).toBe(200);
    const requestId = randomUUID();
    const link = {
      commandType: 'LinkFantasyTeam',
      command: { aggregateRootId: team, fantasyTeamExternalId: 11, fantasyUserId: 12 },
      requestId,
    };

    armedFor = team;
    const started = Date.now();
    const lost = await send(link);
    expect(Date.now() - started).toBeLessThan(5_000);
    expectOutcomeUnknown(lost, new RegExp(`same requestId ${requestId}`));
    expect(await streamLength(team)).toBe(2);

    const retry = await send(link);
    expect(retry.status).toBe(200);
    expect(retry.body).toEqual({
      requestId,
      success: true,
      eventCount: 1,
      commandType: 'LinkFantasyTeam',
      version: 2,
    });
    expect(await streamLength(team)).toBe(2);
  });

  it('When the lost append carried no requestId, then the problem says a resend could apply it twice', async () => {
    const team = randomUUID();
    armedFor = team;
    const lost = await send({
      commandType: 'CreateFantasyTeam',
      command: { aggregateRootId: team, name: 'Lossy' },
    });
    expectOutcomeUnknown(lost, /carried no requestId/);
    expect(await streamLength(team)).toBe(1);
  });

  it('When the answer to an append of an inline High import is lost, then the caller gets the 503 problem, not a 500, and the import is left to the workers', async () => {
    const [user] = seedUsers(1);
    if (!user) throw new Error('no seed user');
    armedType = userDecider.aggregateType;
    armedFor = userIdForEmail(user.email);
    try {
      const importer = await passwordGrantToken(subject.app, 'importer@example.com', PASSWORD);
      const lost = await request(subject.app)
        .post('/api/import')
        .set('Authorization', `Bearer ${importer}`)
        .send({
          requestId: randomUUID(),
          importerType: 'UserSeeding',
          priority: 'High',
          importData: { enabled: true, skipIfUsersExist: false, users: [user] },
        });

      expectUnavailable(lost);
      expect(subject.logs.text).not.toContain('unhandled error');
      // Handed over: a job waits for the workers (none run here) to finish it.
      await eventually(
        () => Promise.resolve(subject.logs.text.includes('inline import handed to the workers')),
        5_000,
      );
      expect(await subject.services.importQueue.inlineRunning()).toBe(false);
    } finally {
      armedFor = undefined;
      armedType = TEAM;
    }
  });
});
