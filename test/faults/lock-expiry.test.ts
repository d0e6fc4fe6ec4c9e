/**
 * A lock holder paused past its lock's expiry (by a delay hook): the fence rejects its late append;
 * no event is written twice.
 *
 * test/integration/event-store/event-store.test.ts ("The version fence") proves it on the command handler
 * with a counter aggregate. This test goes through POST /api/command: two ingress apps on one
 * Redis, the first paused between deciding and appending (CommandHandlerHooks.beforeAppend) until
 * its lock has expired and the second has appended.
 */
import { randomUUID } from 'node:crypto';

import request from 'supertest';

import { resolveLogEntries } from '../../shared/event-stream/log-reader';
import { fantasyTeamDecider } from '../../shared/fantasy-team/fantasy-team.decider';
import { partitionOf } from '../../shared/redis/partitions';
import { createTestApp, type TestApp, uniquePrefix } from '../helpers/app-fixture';
import { eventually } from '../helpers/processes';

const PASSWORD = 'lock-expiry-password';
const TEAM = fantasyTeamDecider.aggregateType;
/** Short, so the paused holder outlives its lock within a fraction of a second. */
const LOCK = { LOCK_TTL_MS: '200', LOCK_WAIT_MS: '2000' };

function deferred() {
  let resolve!: () => void;
  const promise = new Promise<void>((done) => (resolve = done));
  return { promise, resolve };
}

describe('A command whose holder is paused past its lock’s expiry', () => {
  const apps: TestApp[] = [];
  afterEach(async () => {
    await Promise.all(apps.splice(0).map((app) => app.close()));
  });

  const busy = 'The team changed while this command was being handled; nothing was written. Retry shortly.';
  it.each([
    [
      'sent no expectedVersion',
      {},
      { status: 503, retryAfter: '1', errorCode: 'AGGREGATE_BUSY', errorMessage: busy },
      // Decided afresh on the team as it is now, which is linked.
      { status: 400, errorCode: 'COMMAND_VALIDATION_ERROR' },
    ],
    [
      'expected version 1',
      { expectedVersion: 1 },
      {
        status: 409,
        retryAfter: undefined,
        errorCode: 'CONCURRENCY_CONFLICT',
        errorMessage: 'Expected version 1, but the team is at version 2',
      },
      { status: 409, errorCode: 'CONCURRENCY_CONFLICT' },
    ],
  ])(
    'When the paused holder (whose caller %s) appends after another command took the lock and appended, then the fence rejects it with a clear answer, never a 500, and no event is written twice, its retry included',
    async (_caller, envelope, expectedAnswer, expectedRetry) => {
      const prefix = uniquePrefix();
      const paused = deferred();
      const resume = deferred();
      let pauseNext = false;
      const stalled = await createTestApp(
        { REDIS_KEY_PREFIX: prefix, ...LOCK },
        {},
        {
          async beforeAppend() {
            if (!pauseNext) return;
            pauseNext = false;
            paused.resolve();
            await resume.promise;
          },
        },
      );
      apps.push(stalled);
      const other = await createTestApp({ REDIS_KEY_PREFIX: prefix, ...LOCK });
      apps.push(other);
      await stalled.createUser({ email: 'owner@example.com', password: PASSWORD });
      const token = (
        await request(other.app)
          .post('/api/auth/token')
          .send({ grant_type: 'password', username: 'owner@example.com', password: PASSWORD })
      ).body as { access_token: string };
      const send = (subject: TestApp, body: object) =>
        request(subject.app)
          .post('/api/command')
          .set('Authorization', `Bearer ${token.access_token}`)
          .send(body);
      const teamId = randomUUID();
      const link = (fantasyTeamExternalId: number, requestId: string) => ({
        commandType: 'LinkFantasyTeam',
        command: { aggregateRootId: teamId, fantasyTeamExternalId, fantasyUserId: 9 },
        requestId,
        ...envelope,
      });
      expect(
        (
          await send(other, {
            commandType: 'CreateFantasyTeam',
            command: { aggregateRootId: teamId, name: 'Fenced' },
          })
        ).status,
      ).toBe(200);

      // The first holder decides to link 111, then stalls until its lock is gone.
      const stalledRequestId = randomUUID();
      pauseNext = true;
      const stalledAnswer = send(stalled, link(111, stalledRequestId)).then((res) => res);
      await paused.promise;
      const lockKey = stalled.services.keys.aggregateLock(TEAM, teamId);
      await eventually(async () => (await stalled.redis.exists(lockKey)) === 0, 5_000, 10);

      // Meanwhile another command takes the lock and links 222.
      const otherRequestId = randomUUID();
      const accepted = await send(other, link(222, otherRequestId));
      expect(accepted.status).toBe(200);

      resume.resolve();
      const late = await stalledAnswer;
      const { status, retryAfter, errorCode, errorMessage } = expectedAnswer;
      expect({ status: late.status, retryAfter: late.headers['retry-after'], body: late.body }).toEqual({
        status,
        retryAfter,
        body: {
          requestId: stalledRequestId,
          success: false,
          eventCount: 0,
          errorMessage,
          errorCode,
          commandType: 'LinkFantasyTeam',
        },
      });

      // Exactly one event per accepted command: the creation and the other holder's link.
      const { store, keys } = stalled.services;
      const stream = await store.readStream(TEAM, teamId);
      expect(stream.map((event) => [event.version, event.eventType, event.metadata.requestId])).toEqual([
        [1, 'FantasyTeamCreatedEvent', null],
        [2, 'FantasyTeamLinkedEvent', otherRequestId],
      ]);
      const log = (
        await resolveLogEntries(
          stalled.redis,
          keys,
          await stalled.redis.xrange(keys.logPartition(partitionOf(teamId)), '-', '+'),
        )
      ).filter((event) => event.aggregateId === teamId);
      expect(log).toEqual(stream);
      expect(await store.loadRecord(TEAM, teamId, fantasyTeamDecider.initialState)).toMatchObject({
        version: 2,
        state: { fantasyTeamExternalId: 222 },
      });

      // Its client retries with the same requestId: nothing more is written.
      const retried = await send(stalled, link(111, stalledRequestId));
      expect({ status: retried.status, errorCode: retried.body.errorCode }).toEqual(expectedRetry);
      expect(await store.readStream(TEAM, teamId)).toEqual(stream);
      expect(stalled.logs.text).not.toContain('unhandled error');
    },
  );
});
