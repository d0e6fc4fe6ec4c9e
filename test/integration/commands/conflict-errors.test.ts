/**
 * The two conflicts of the command path are two errors: the caller's expectedVersion that the
 * aggregate is not at (ExpectedVersionMismatchError) and a stale decision refused by the append's
 * fence (StaleAppendError). A caller that named a version learns the first either way.
 */
import { randomUUID } from 'node:crypto';

import { ExpectedVersionMismatchError, StaleAppendError } from '../../../shared/event-store/errors';
import type { CommandInput } from '../../../shared/event-store/handle-command';
import { createTestApp, type TestApp } from '../../helpers/app-fixture';
import { eventually } from '../../helpers/processes';
import { counterDecider, INCREMENT, type Increment } from '../../helpers/race-counter.decider';

describe('The conflict errors of the command path', () => {
  let subject: TestApp;
  let pauseNextAppend: (() => Promise<void>) | undefined;

  beforeAll(async () => {
    subject = await createTestApp(
      { LOCK_TTL_MS: '200', LOCK_WAIT_MS: '50' },
      {},
      {
        beforeAppend: async () => {
          const pause = pauseNextAppend;
          pauseNextAppend = undefined;
          await pause?.();
        },
      },
    );
  });
  afterAll(async () => {
    await subject.close();
  });

  const increment = (aggregateId: string, expectedVersion = 0): CommandInput<Increment> => ({
    aggregateId,
    command: INCREMENT,
    expectedVersion,
    context: { now: new Date(), actorUserId: 'tester', actorRoles: ['Admin'] },
    metadata: { actorUserId: 'tester', requestId: null, correlationId: 'conflict-errors-test' },
  });
  const handle = (input: CommandInput<Increment>) => subject.services.commands.handle(counterDecider, input);

  it('When the caller expects a version the aggregate is not at, then handle throws ExpectedVersionMismatchError, not StaleAppendError', async () => {
    const id = randomUUID();
    await handle(increment(id));
    const stale = handle(increment(id, 3));
    await expect(stale).rejects.toBeInstanceOf(ExpectedVersionMismatchError);
    await expect(stale).rejects.not.toBeInstanceOf(StaleAppendError);
    await expect(stale).rejects.toMatchObject({ expectedVersion: 3, actualVersion: 1 });
  });

  it.each([
    ['named no version', 'StaleAppendError', 0, StaleAppendError, { expectedVersion: 1, actualVersion: 2 }],
    [
      'expected version 1',
      'ExpectedVersionMismatchError',
      1,
      ExpectedVersionMismatchError,
      { expectedVersion: 1, actualVersion: 2 },
    ],
  ])(
    'When the append’s fence refuses a decision whose lock lapsed and the caller %s, then handle throws %s',
    async (_caller, _name, expectedVersion, errorType, versions) => {
      const id = randomUUID();
      await handle(increment(id));
      let resume!: () => void;
      const paused = new Promise<void>((pausedNow) => {
        pauseNextAppend = () => {
          pausedNow();
          return new Promise<void>((done) => (resume = done));
        };
      });
      const holder = handle(increment(id, expectedVersion)).then(
        () => null,
        (error: unknown) => error,
      );
      await paused;
      // The paused holder's lock lapses; another command moves the counter on to version 2.
      await eventually(
        async () =>
          await handle(increment(id)).then(
            () => true,
            () => false,
          ),
        5_000,
        20,
      );
      resume();
      const error = await holder;
      expect(error).toBeInstanceOf(errorType);
      expect(error).toMatchObject(versions);
      expect(await subject.services.store.streamLength(counterDecider.aggregateType, id)).toBe(2);
    },
  );
});
