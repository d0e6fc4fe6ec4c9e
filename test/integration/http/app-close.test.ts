import { randomUUID } from 'node:crypto';

import { ImportQueue } from '../../../shared/importers/import-queue';
import { createTestApp, onTestCluster, openTestRedis, type TestApp } from '../../helpers/app-fixture';
import { runTeamCommand } from '../../helpers/projector-fixtures';

const OWNER = '11111111-1111-4111-8111-111111111111';
const LANES = 4;
const APPS_PER_LANE = 10;

/**
 * An app's close() must leave no command behind whose failure nobody hears: an unhandled rejection
 * fails the whole suite that happened to be running ("Test suite failed to run"), and in production
 * it is a crash. The import queue's connection of its own (ADR 0022) made one: BullMQ's set-up on
 * it (waiting for ready, then INFO), still running when the queue closed, failed after closing the
 * queue had dropped its listeners ("Connection is closed", "Stream isn't writeable ..."). The second
 * test fails without ImportQueue.close()'s order; the first holds the whole app's close to it.
 */
describe('Closing apps', () => {
  const unhandled: string[] = [];
  const record = (reason: unknown) => {
    unhandled.push(reason instanceof Error ? (reason.stack ?? reason.message) : String(reason));
  };
  beforeAll(() => process.on('unhandledRejection', record));
  afterAll(() => process.off('unhandledRejection', record));

  it('When apps are closed right after they are made, or right after a command, while other apps run commands, then no rejection goes unhandled', async () => {
    const busy = await createTestApp();
    let loading = true;
    // The load: commands on another app for as long as the apps come and go.
    const load = (async () => {
      while (loading) {
        await runTeamCommand(
          busy.services.commands,
          randomUUID(),
          { type: 'CreateFantasyTeam', data: { name: 'Load', season: '2026' } },
          OWNER,
        );
      }
    })();
    try {
      await Promise.all(
        Array.from({ length: LANES }, async (_, lane) => {
          for (let round = 0; round < APPS_PER_LANE; round++) {
            const app: TestApp = await createTestApp();
            // Every other app closes with nothing done; the rest right after one command.
            if ((lane + round) % 2 === 1) {
              await runTeamCommand(
                app.services.commands,
                randomUUID(),
                { type: 'CreateFantasyTeam', data: { name: 'Closing', season: '2026' } },
                OWNER,
              );
            }
            await app.close();
          }
        }),
      );
    } finally {
      loading = false;
      await load;
      await busy.close();
    }
    // A rejection is reported once the microtasks after it ran: let every closed socket's last
    // events and their promise handlers run first.
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(unhandled).toEqual([]);
    // 40 apps made and closed under a load: time is not what it proves, so a busy machine gets room.
  }, 120_000);

  it('When an import queue on a connection of its own is closed while BullMQ still sets it up, then no rejection goes unhandled', async () => {
    const subject = await createTestApp();
    // Closed after 0 to 7 round trips elsewhere (an app's set-up makes a few after its queue):
    // somewhere in the queue connection's handshake, at its 'ready', or with BullMQ's INFO in flight.
    // Not at once on a cluster: a cluster client closed while still connecting stays 'disconnecting'
    // with its timers for good (ioredis), which close() waits out for its bound and jest reports as
    // a leak. The app never does that: its queue connection is ready before the services are.
    const roundTrips = Array.from({ length: 8 }, (_, count) => count).filter(
      (count) => count > 0 || !onTestCluster(),
    );
    try {
      for (let round = 0; round < 5; round++) {
        await Promise.all(
          roundTrips.map(async (count) => {
            const connection = openTestRedis(subject.logger);
            const queue = new ImportQueue(
              connection,
              connection,
              subject.services.keys,
              subject.config,
              subject.logger,
              undefined,
              true,
            );
            for (let trip = 0; trip < count; trip++) await subject.redis.ping();
            await queue.close();
          }),
        );
      }
    } finally {
      await subject.close();
    }
    // ioredis ends a connection closed mid-handshake with a 2 s timer of its own: let it run out,
    // and any rejection after it be reported.
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    expect(unhandled).toEqual([]);
  });
});
