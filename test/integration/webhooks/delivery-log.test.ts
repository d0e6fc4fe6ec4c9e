/**
 * The delivery log GetWebhookDeliveries pages (ADR 0049): a page costs what it returns and steps
 * over, read from the stream of the status asked for, and answers what a filter of the whole log
 * answered. Real Redis; fast-check's failure names the seed (PROPERTY_SEED replays it).
 */
import { randomUUID } from 'node:crypto';

import fc from 'fast-check';

import {
  DELIVERY_STATUSES,
  type DeliveryAttempt,
  DeliveryLog,
  type DeliveryStatus,
} from '../../../shared/webhook-subscription/delivery-log';
import { type Core, coreFixture } from '../../helpers/core-fixture';
import { eventually } from '../../helpers/processes';

const { buildCore } = coreFixture();
const WEEK_MS = 7 * 24 * 3_600_000;

function attempt(n: number, status: DeliveryStatus): DeliveryAttempt {
  return {
    eventId: `event-${n}`,
    eventType: 'FantasyTeamLinked',
    attempt: 1,
    at: new Date().toISOString(),
    status,
    httpStatus: status === 'delivered' ? 200 : 500,
    error: null,
    durationMs: 1,
  };
}

/** What a read answers, from the attempts as they were recorded (oldest first). */
function expected(recorded: readonly DeliveryAttempt[], skip: number, take: number, status?: DeliveryStatus) {
  const matching = [...recorded].reverse().filter((a) => status === undefined || a.status === status);
  return { totalCount: matching.length, items: matching.slice(skip, skip + take) };
}

describe('The webhook delivery log', () => {
  let core: Core;

  beforeAll(async () => {
    core = await buildCore();
  });

  it('When attempts of every status are recorded, then any page of any status is what a filter of the whole log answers, newest first', async () => {
    const log = new DeliveryLog(core.redis, core.keys, WEEK_MS);
    await fc.assert(
      fc.asyncProperty(
        // Past 1,000 entries a page takes more than one read of the stream.
        fc.array(fc.constantFrom(...DELIVERY_STATUSES), { maxLength: 2_500, size: 'max' }),
        fc.nat({ max: 2_600 }),
        fc.integer({ min: 1, max: 1_000 }),
        fc.option(fc.constantFrom(...DELIVERY_STATUSES), { nil: undefined }),
        async (statuses, skip, take, status) => {
          const subscriptionId = randomUUID();
          const recorded = statuses.map((s, n) => attempt(n, s));
          // Sent in order on one connection: recorded in that order.
          await Promise.all(recorded.map((a) => log.record(subscriptionId, a)));
          expect(await log.read(subscriptionId, skip, take, status)).toEqual(
            expected(recorded, skip, take, status),
          );
        },
      ),
      { numRuns: 15 },
    );
  }, 120_000);

  it('When a log was kept before the status streams existed, then a status read still answers its attempts, old and new', async () => {
    const log = new DeliveryLog(core.redis, core.keys, WEEK_MS);
    const subscriptionId = randomUUID();
    // As the delivery log wrote before ADR 0049: the log alone.
    const before = [attempt(0, 'retrying'), attempt(1, 'delivered'), attempt(2, 'failed')];
    for (const a of before) {
      await core.redis.xadd(core.keys.webhookDeliveries(subscriptionId), '*', 'attempt', JSON.stringify(a));
    }
    const after = [attempt(3, 'retrying'), attempt(4, 'delivered')];
    for (const a of after) await log.record(subscriptionId, a);

    const recorded = [...before, ...after];
    for (const status of [undefined, ...DELIVERY_STATUSES]) {
      expect(await log.read(subscriptionId, 0, 10, status)).toEqual(expected(recorded, 0, 10, status));
    }
  });

  it("When two replicas write a subscription's first attempts at once, the later marked first, then a status read still pages its stream, not the whole log", async () => {
    const subscriptionId = randomUUID();
    const replicaA = new DeliveryLog(core.redis, core.keys, WEEK_MS);
    const replicaB = new DeliveryLog(core.redis, core.keys, WEEK_MS);
    type Zadd = (...args: unknown[]) => Promise<unknown>;
    const realZadd = (core.redis.zadd as unknown as Zadd).bind(core.redis);
    let releaseA = (): void => undefined;
    const heldA = new Promise<void>((resolve) => (releaseA = resolve));
    const zadd = jest.spyOn(core.redis, 'zadd') as unknown as jest.SpyInstance<Promise<unknown>, unknown[]>;
    zadd.mockImplementationOnce(async (...args: unknown[]) => {
      await heldA;
      return realZadd(...args);
    });
    const xrevrange = jest.spyOn(core.redis, 'xrevrange');
    try {
      // A's entry is written first, but its mark waits until B's later entry has marked.
      const retrying = attempt(0, 'retrying');
      const first = replicaA.record(subscriptionId, retrying);
      await eventually(() => zadd.mock.calls.length === 1, 5_000, 5);
      await replicaB.record(subscriptionId, attempt(1, 'delivered'));
      releaseA();
      await first;

      xrevrange.mockClear();
      expect(await replicaB.read(subscriptionId, 0, 10, 'retrying')).toEqual({
        totalCount: 1,
        items: [retrying],
      });
      // Paged (COUNT), never the whole log.
      for (const call of xrevrange.mock.calls) expect(call).toContain('COUNT');
    } finally {
      zadd.mockRestore();
      xrevrange.mockRestore();
    }
  });

  it('When attempts are older than the retention, then no read counts or answers them', async () => {
    const subscriptionId = randomUUID();
    const writer = new DeliveryLog(core.redis, core.keys, WEEK_MS);
    for (let n = 0; n < 5; n++) await writer.record(subscriptionId, attempt(n, 'delivered'));
    await new Promise((resolve) => setTimeout(resolve, 20));
    const reader = new DeliveryLog(core.redis, core.keys, 10);
    for (const status of [undefined, 'delivered' as const]) {
      expect(await reader.read(subscriptionId, 0, 10, status)).toEqual({ totalCount: 0, items: [] });
    }
  });
});
