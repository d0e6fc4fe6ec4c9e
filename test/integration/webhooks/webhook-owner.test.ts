/**
 * A webhook subscription lives and dies with its owner (issue 29): when the Admin it delivers under
 * is disabled, erased or loses Admin, it is suspended by the service and delivers nothing appended
 * after the change; an Admin who enables it again gets what was missed, in order, and owns it from
 * then on. Through HTTP, with real worker processes (two, racing to suspend) and a real receiver.
 */
import { randomUUID } from 'node:crypto';

import request from 'supertest';

import { freePort } from '../../../scripts/lib/free-port';
import { parseExposition, sampleSum } from '../../helpers/metrics';
import { eventually, killAll, type ServiceProcess } from '../../helpers/processes';
import { passwordGrantToken } from '../../helpers/tokens';
import {
  adminCommander,
  createWebhookHarness,
  inOrderPerAggregate,
  parsedDeliveries,
  startReceiver,
  type WebhookReceiver,
} from '../../helpers/webhooks';

interface ListedSubscription {
  id: string;
  status: string;
  statusReason: string | null;
  createdBy: string;
  ownerUserId: string;
}

type Admin = Awaited<ReturnType<typeof adminCommander>>;

/** How far the ingress's clock is set from the workers' in the skewed take-overs (under JWT_TTL_SECONDS). */
const CLOCK_SKEW_MS = 10 * 60_000;

/** Every timer API jest fakes but Date: the skewed ingress keeps real timers, only its clock moves. */
const EVERYTHING_BUT_DATE: NonNullable<
  Extract<Parameters<typeof jest.useFakeTimers>[0], { doNotFake?: unknown }>['doNotFake']
> = [
  'hrtime',
  'nextTick',
  'performance',
  'queueMicrotask',
  'requestAnimationFrame',
  'cancelAnimationFrame',
  'requestIdleCallback',
  'cancelIdleCallback',
  'setImmediate',
  'clearImmediate',
  'setInterval',
  'clearInterval',
  'setTimeout',
  'clearTimeout',
];

/** Long enough for a worker to have delivered what it was going to (the target is under 1 s). */
const QUIET_MS = 2_000;

/**
 * A new Admin's subscription to every event (its target), and the harness Admin's own (a marker
 * that shows what the workers have delivered); both receivers are stopped with `receivers`.
 */
async function ownedSubscription(
  harness: Awaited<ReturnType<typeof createWebhookHarness>>,
  receivers: WebhookReceiver[],
) {
  const owner = await adminCommander(harness.subject.app, (user) => harness.subject.createUser(user));
  const target = await startReceiver();
  const marker = await startReceiver();
  receivers.push(target, marker);
  const id = randomUUID();
  const created = await owner.send('CreateWebhookSubscription', {
    aggregateRootId: id,
    url: target.url,
    eventTypes: ['*'],
  });
  expect(created.status).toBe(200);
  await harness.subscribe(marker.url);
  return { owner, target, marker, id };
}

const METRICS_TOKEN = 'webhook-owner-metrics-token-0123456789';

describe('A webhook subscription and its owner', () => {
  let harness: Awaited<ReturnType<typeof createWebhookHarness>>;
  const receivers: WebhookReceiver[] = [];
  const receiver = async () => {
    const started = await startReceiver();
    receivers.push(started);
    return started;
  };
  const newAdmin = () => adminCommander(harness.subject.app, (user) => harness.subject.createUser(user));

  const listed = async (id: string): Promise<ListedSubscription | undefined> => {
    const res = await harness.admin.query({ queryType: 'ListWebhookSubscriptions' }, { take: 1000 });
    expect(res.status).toBe(200);
    return (res.body as { results: ListedSubscription[] }).results.find((item) => item.id === id);
  };
  const subscribeAs = async (admin: Admin, url: string) => {
    const id = randomUUID();
    const res = await admin.send('CreateWebhookSubscription', {
      aggregateRootId: id,
      url,
      eventTypes: ['*'],
    });
    expect(res.status).toBe(200);
    return id;
  };
  const ofAggregate = (target: WebhookReceiver, aggregateId: string) =>
    parsedDeliveries(target).filter((delivery) => delivery.payload.data.aggregateId === aggregateId);

  /**
   * A subscription of a second Admin that delivers (a team event arrived), and a marker subscription
   * of the first Admin's, which shows when the workers have passed the events that follow.
   */
  const ownedBySecondAdmin = async () => {
    const owner = await newAdmin();
    const target = await receiver();
    const id = await subscribeAs(owner, target.url);
    const marker = await receiver();
    await subscribeAs(harness.admin, marker.url);
    const before = await harness.teamWithEvents(1);
    await eventually(() => ofAggregate(target, before).length === 1, 15_000);
    return { owner, target, id, marker };
  };

  /** Appends a team (2 events) and an account: what happens after the owner's change. */
  const appendAfterChange = async () => {
    const team = await harness.teamWithEvents(2);
    const email = `later-${randomUUID().slice(0, 8)}@example.com`;
    const userId = await harness.subject.createUser({
      email,
      password: 'later-password-1',
      firstName: 'Later',
    });
    return { team, userId, email };
  };

  /** The metrics endpoints of the two workers. */
  const metricsUrls: string[] = [];
  /** Subscriptions suspended, summed over both workers: the one whose command was accepted counts. */
  const suspendedCount = async () => {
    let total = 0;
    for (const url of metricsUrls) {
      const res = await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
      total += sampleSum(parseExposition(await res.text()), 'fts_webhook_subscriptions_stopped_total', {
        reason: 'suspended',
      });
    }
    return total;
  };

  beforeAll(async () => {
    harness = await createWebhookHarness();
    const ports = [await freePort(), await freePort()];
    metricsUrls.push(...ports.map((port) => `http://127.0.0.1:${port}`));
    await Promise.all(
      ports.map((port) =>
        harness.startWorker({ METRICS_PORT: String(port), METRICS_HOST: '127.0.0.1', METRICS_TOKEN }),
      ),
    );
  }, 90_000);
  afterAll(async () => {
    await Promise.all(receivers.map((r) => r.stop()));
    await harness.close();
  });

  it('When an Admin creates a subscription, then ListWebhookSubscriptions and GetWebhookDeliveries name it as creator and owner', async () => {
    const owner = await newAdmin();
    const target = await receiver();
    const id = await subscribeAs(owner, target.url);
    expect(await listed(id)).toMatchObject({
      status: 'enabled',
      statusReason: null,
      createdBy: owner.userId,
      ownerUserId: owner.userId,
    });
    const res = await harness.admin.query({ queryType: 'GetWebhookDeliveries', subscriptionId: id });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      subscription: {
        status: 'enabled',
        statusReason: null,
        createdBy: owner.userId,
        ownerUserId: owner.userId,
      },
    });
  });

  it.each([
    ['disabled', 'DisableUser', {}, 'was disabled'],
    ['deleted', 'DeleteUser', {}, 'was deleted'],
    ['stripped of Admin', 'SetUserRoles', { roles: ['Member'] }, 'no longer holds Admin'],
  ])(
    'When the owner is %s, then the subscription is suspended naming the change, nothing appended after is delivered, and an Admin who enables it gets what was missed, in order, as its owner',
    async (_what, commandType, fields, change) => {
      const { owner, target, id, marker } = await ownedBySecondAdmin();
      const changed = await harness.admin.send(commandType, { aggregateRootId: owner.userId, ...fields });
      expect(changed.status).toBe(200);
      const changedAt = Date.now();
      const after = await appendAfterChange();

      // Suspended by the service (within 1 s in code; polled with a margin for a loaded machine).
      const reason = `Owner ${owner.userId} ${change}`;
      await eventually(async () => (await listed(id))?.status === 'suspended', 5_000);
      expect(await listed(id)).toMatchObject({
        status: 'suspended',
        statusReason: reason,
        createdBy: owner.userId,
        ownerUserId: owner.userId,
      });
      const log = await harness.admin.query({ queryType: 'GetWebhookDeliveries', subscriptionId: id });
      expect(log.body).toMatchObject({
        subscription: { status: 'suspended', statusReason: reason, ownerUserId: owner.userId },
      });
      // The two workers raced to suspend it: one event.
      const events = await harness.subject.services.store.readStream('webhook-subscription', id);
      expect(events.filter((e) => e.eventType === 'WebhookSubscriptionSuspendedEvent')).toHaveLength(1);

      // The workers passed the later events (the marker got them), and sent none of them to the target.
      await eventually(() => inOrderPerAggregate(marker, new Map([[after.team, 2]])).ok, 15_000);
      await eventually(() => ofAggregate(marker, after.userId).length === 1, 15_000);
      await new Promise((resolve) => setTimeout(resolve, QUIET_MS));
      expect(ofAggregate(target, after.team)).toHaveLength(0);
      expect(ofAggregate(target, after.userId)).toHaveLength(0);
      expect(target.received.map((d) => d.body).join('\n')).not.toContain(after.email);
      // Nor the owner's own change: nothing at all since the change.
      expect(ofAggregate(target, owner.userId)).toHaveLength(0);
      expect(target.received.filter((d) => d.receivedAt >= changedAt)).toHaveLength(0);
      const suspendedEvent = events.find((e) => e.eventType === 'WebhookSubscriptionSuspendedEvent');
      const ownerEvents = await harness.subject.services.store.readStream('user', owner.userId);
      const changeAt = Date.parse((ownerEvents.at(-1)?.data as { at: string }).at);
      const suspendedAt = Date.parse((suspendedEvent?.data as { at: string }).at);
      // Within 1 s in code; checked with a margin for a loaded machine.
      expect(suspendedAt - changeAt).toBeLessThan(3_000);

      // An Admin takes it over: what was appended meanwhile arrives, in order.
      expect((await harness.admin.send('EnableWebhookSubscription', { aggregateRootId: id })).status).toBe(
        200,
      );
      await eventually(() => inOrderPerAggregate(target, new Map([[after.team, 2]])).ok, 15_000);
      await eventually(() => ofAggregate(target, after.userId).length === 1, 15_000);
      expect(ofAggregate(target, after.userId)[0]?.payload.type).toBe('UserCreatedEvent');
      await eventually(() => ofAggregate(target, owner.userId).length >= 1, 15_000);
      expect(await listed(id)).toMatchObject({
        status: 'enabled',
        statusReason: null,
        createdBy: owner.userId,
        ownerUserId: harness.admin.userId,
      });
    },
  );

  it('When another Admin points a subscription at their own receiver and is then disabled, then nothing reaches that receiver after the disable and the subscription is suspended naming that Admin, counted once across the workers', async () => {
    const { owner, id, marker } = await ownedBySecondAdmin();
    const suspendedBefore = await suspendedCount();
    const redirector = await newAdmin();
    const theirs = await receiver();
    const updated = await redirector.send('UpdateWebhookSubscription', {
      aggregateRootId: id,
      url: theirs.url,
      eventTypes: ['*'],
    });
    expect(updated.status).toBe(200);
    expect(await listed(id)).toMatchObject({ createdBy: owner.userId, ownerUserId: redirector.userId });
    // The redirect took effect: it delivers to the new receiver.
    const redirected = await harness.teamWithEvents(1);
    await eventually(() => ofAggregate(theirs, redirected).length === 1, 15_000);

    const disabled = await harness.admin.send('DisableUser', { aggregateRootId: redirector.userId });
    expect(disabled.status).toBe(200);
    const changedAt = Date.now();
    const after = await appendAfterChange();

    await eventually(async () => (await listed(id))?.status === 'suspended', 5_000);
    expect(await listed(id)).toMatchObject({
      status: 'suspended',
      statusReason: `Owner ${redirector.userId} was disabled`,
      createdBy: owner.userId,
      ownerUserId: redirector.userId,
    });
    // Counted by the worker whose suspension was accepted (a moment after its append); not by the
    // refused twin.
    await eventually(async () => (await suspendedCount()) > suspendedBefore, 5_000);
    expect((await suspendedCount()) - suspendedBefore).toBe(1);
    await eventually(() => inOrderPerAggregate(marker, new Map([[after.team, 2]])).ok, 15_000);
    await eventually(() => ofAggregate(marker, after.userId).length === 1, 15_000);
    await new Promise((resolve) => setTimeout(resolve, QUIET_MS));
    expect(theirs.received.filter((d) => d.receivedAt >= changedAt)).toHaveLength(0);
    expect(theirs.received.map((d) => d.body).join('\n')).not.toContain(after.email);
  });

  it('When the owner is disabled and at once enabled again, then the subscription still ends suspended naming the disable, and what was appended meanwhile waits for an Admin to enable it', async () => {
    const { owner, target, id, marker } = await ownedBySecondAdmin();
    expect((await harness.admin.send('DisableUser', { aggregateRootId: owner.userId })).status).toBe(200);
    const changedAt = Date.now();
    const meanwhile = await harness.teamWithEvents(1);
    expect((await harness.admin.send('EnableUser', { aggregateRootId: owner.userId })).status).toBe(200);

    await eventually(async () => (await listed(id))?.status === 'suspended', 5_000);
    expect(await listed(id)).toMatchObject({
      status: 'suspended',
      statusReason: `Owner ${owner.userId} was disabled`,
      ownerUserId: owner.userId,
    });
    await eventually(() => ofAggregate(marker, meanwhile).length === 1, 15_000);
    await new Promise((resolve) => setTimeout(resolve, QUIET_MS));
    expect(target.received.filter((d) => d.receivedAt >= changedAt)).toHaveLength(0);

    expect((await harness.admin.send('EnableWebhookSubscription', { aggregateRootId: id })).status).toBe(200);
    await eventually(() => ofAggregate(target, meanwhile).length === 1, 15_000);
  });

  it("When the suspension cannot be appended yet (the subscription is locked), then the workers deliver nothing appended after the owner's change all the same, and suspend it once they can", async () => {
    const { owner, target, id, marker } = await ownedBySecondAdmin();
    // Held as a stuck command would hold it: the suspension (the step after the account's change)
    // waits, so only the workers' own gate stands between the later events and the target.
    const { redis } = harness.subject;
    const lockKey = harness.subject.services.keys.aggregateLock('webhook-subscription', id);
    expect(await redis.set(lockKey, 'held-by-test', 'PX', 30_000)).toBe('OK');
    expect((await harness.admin.send('DisableUser', { aggregateRootId: owner.userId })).status).toBe(200);
    const changedAt = Date.now();
    const after = await appendAfterChange();
    await eventually(() => inOrderPerAggregate(marker, new Map([[after.team, 2]])).ok, 15_000);
    await eventually(() => ofAggregate(marker, after.userId).length === 1, 15_000);
    await new Promise((resolve) => setTimeout(resolve, QUIET_MS));
    expect((await listed(id))?.status).toBe('enabled');
    expect(target.received.filter((d) => d.receivedAt >= changedAt)).toHaveLength(0);
    // The lock goes: a worker suspends it.
    await redis.del(lockKey);
    await eventually(async () => (await listed(id))?.status === 'suspended', 15_000);
    expect(target.received.filter((d) => d.receivedAt >= changedAt)).toHaveLength(0);
  });

  /**
   * A take-over by a fresh Admin on an ingress whose clock disagrees with the one that writes the
   * account's changes by `skewMs` (this process's Date only: the workers run on the real clock).
   */
  const takenOverUnderSkewedClock = async (
    skewMs: number,
    beforeTakeOver?: (taker: Admin) => Promise<void>,
  ) => {
    const { id, target, marker } = await ownedBySecondAdmin();
    expect((await harness.admin.send('DisableWebhookSubscription', { aggregateRootId: id })).status).toBe(
      200,
    );
    const taker = await newAdmin();
    await beforeTakeOver?.(taker);
    jest.useFakeTimers({ now: Date.now() + skewMs, advanceTimers: true, doNotFake: EVERYTHING_BUT_DATE });
    try {
      // A token of the skewed clock's own (and of the account's stamp now: a disable moves it).
      const token = await passwordGrantToken(harness.subject.app, taker.email, 'webhooks-admin-password');
      const enabled = await request(harness.subject.app)
        .post('/api/command')
        .set('Authorization', `Bearer ${token}`)
        .send({ commandType: 'EnableWebhookSubscription', command: { aggregateRootId: id } });
      expect(enabled.status).toBe(200);
    } finally {
      jest.useRealTimers();
    }
    expect(await listed(id)).toMatchObject({ status: 'enabled', ownerUserId: taker.userId });
    return { id, target, marker, taker };
  };

  it('When the ingress that recorded the take-over runs 10 minutes behind, then a disable of the new owner undone before it took over does not suspend the subscription, which keeps delivering', async () => {
    const { id, target } = await takenOverUnderSkewedClock(-CLOCK_SKEW_MS, async (taker) => {
      expect((await harness.admin.send('DisableUser', { aggregateRootId: taker.userId })).status).toBe(200);
      expect((await harness.admin.send('EnableUser', { aggregateRootId: taker.userId })).status).toBe(200);
    });
    const team = await harness.teamWithEvents(1);
    await eventually(() => ofAggregate(target, team).length === 1, 15_000);
    expect((await listed(id))?.status).toBe('enabled');
  });

  it("When the owner changes its password, then its subscription keeps delivering: ownership is the account's authority, not a session", async () => {
    const { owner, target, id } = await ownedBySecondAdmin();
    const changed = await owner.send('ChangePassword', {
      currentPassword: 'webhooks-admin-password',
      newPassword: 'a-new-webhooks-password-2',
    });
    expect(changed.status).toBe(200);
    const team = await harness.teamWithEvents(1);
    await eventually(() => ofAggregate(target, team).length === 1, 15_000);
    expect(await listed(id)).toMatchObject({ status: 'enabled', ownerUserId: owner.userId });
  });

  it("When an erased owner's e-mail is registered again as an Admin, then its old subscription stays suspended and delivers nothing until an Admin enables it", async () => {
    const { owner, target, id, marker } = await ownedBySecondAdmin();
    expect((await harness.admin.send('DeleteUser', { aggregateRootId: owner.userId })).status).toBe(200);
    await eventually(async () => (await listed(id))?.status === 'suspended', 5_000);
    // The same e-mail gives the same user id: a new account, which takes over nothing.
    const again = await harness.subject.createUser({
      email: owner.email,
      password: 'webhooks-admin-password',
      roles: ['Admin'],
    });
    expect(again).toBe(owner.userId);
    const team = await harness.teamWithEvents(1);
    await eventually(() => ofAggregate(marker, team).length === 1, 15_000);
    await new Promise((resolve) => setTimeout(resolve, QUIET_MS));
    expect(ofAggregate(target, team)).toHaveLength(0);
    expect(await listed(id)).toMatchObject({ status: 'suspended', ownerUserId: owner.userId });
  });

  it('When an Admin sends SuspendWebhookSubscription to POST /api/command, then it is an unknown command and the subscription keeps delivering', async () => {
    const target = await receiver();
    const id = await subscribeAs(harness.admin, target.url);
    const res = await harness.admin.send('SuspendWebhookSubscription', {
      aggregateRootId: id,
      ownerUserId: harness.admin.userId,
      reason: 'an Admin may not',
    });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ errorCode: 'UNKNOWN_COMMAND_TYPE' });
    expect(await listed(id)).toMatchObject({ status: 'enabled' });
  });
});

describe('A webhook subscription whose owner changed while no worker ran', () => {
  let harness: Awaited<ReturnType<typeof createWebhookHarness>>;
  let worker: ServiceProcess | undefined;
  const receivers: WebhookReceiver[] = [];

  beforeAll(async () => {
    harness = await createWebhookHarness();
  }, 60_000);
  afterAll(async () => {
    await Promise.all(receivers.map((r) => r.stop()));
    await killAll(worker);
    await harness.close();
  });

  it('When the owner is disabled while no worker runs and its subscription was never suspended, then a worker that starts delivers nothing and suspends it, and an Admin who enables it gets everything in order', async () => {
    const { owner, target, marker, id } = await ownedSubscription(harness, receivers);
    const before = await harness.teamWithEvents(1);
    // The account's change lands, and the step after it (the suspension) does not: no worker runs.
    expect((await harness.admin.send('DisableUser', { aggregateRootId: owner.userId })).status).toBe(200);
    const after = await harness.teamWithEvents(2);
    worker = await harness.startWorker();
    await eventually(() => inOrderPerAggregate(marker, new Map([[after, 2]])).ok, 15_000);
    await eventually(async () => {
      const res = await harness.admin.query({ queryType: 'ListWebhookSubscriptions' }, { take: 1000 });
      const item = (res.body as { results: ListedSubscription[] }).results.find((entry) => entry.id === id);
      return item?.status === 'suspended';
    }, 5_000);
    await new Promise((resolve) => setTimeout(resolve, QUIET_MS));
    // Nothing is sent after the owner's change: not even what was appended before it and not sent yet.
    expect(target.received).toHaveLength(0);
    expect((await harness.admin.send('EnableWebhookSubscription', { aggregateRootId: id })).status).toBe(200);
    await eventually(
      () =>
        inOrderPerAggregate(
          target,
          new Map([
            [before, 1],
            [after, 2],
          ]),
        ).ok,
      15_000,
    );
  });
});

describe('A webhook subscription whose owner was disabled and enabled again while no worker ran', () => {
  let harness: Awaited<ReturnType<typeof createWebhookHarness>>;
  let worker: ServiceProcess | undefined;
  const receivers: WebhookReceiver[] = [];

  beforeAll(async () => {
    harness = await createWebhookHarness();
  }, 60_000);
  afterAll(async () => {
    await Promise.all(receivers.map((r) => r.stop()));
    await killAll(worker);
    await harness.close();
  });

  it('When the owner is disabled and enabled again before any worker reads the account, then a worker that starts suspends the subscription naming the disable and delivers nothing appended meanwhile until an Admin enables it', async () => {
    const { owner, target, marker, id } = await ownedSubscription(harness, receivers);
    // The lapse is seen by no read: the account qualifies again before a worker runs.
    expect((await harness.admin.send('DisableUser', { aggregateRootId: owner.userId })).status).toBe(200);
    const meanwhile = await harness.teamWithEvents(2);
    expect((await harness.admin.send('EnableUser', { aggregateRootId: owner.userId })).status).toBe(200);
    worker = await harness.startWorker();

    await eventually(() => inOrderPerAggregate(marker, new Map([[meanwhile, 2]])).ok, 15_000);
    const listedNow = async () => {
      const res = await harness.admin.query({ queryType: 'ListWebhookSubscriptions' }, { take: 1000 });
      return (res.body as { results: ListedSubscription[] }).results.find((entry) => entry.id === id);
    };
    await eventually(async () => (await listedNow())?.status === 'suspended', 5_000);
    expect(await listedNow()).toMatchObject({
      status: 'suspended',
      statusReason: `Owner ${owner.userId} was disabled`,
      ownerUserId: owner.userId,
    });
    await new Promise((resolve) => setTimeout(resolve, QUIET_MS));
    expect(target.received.filter((d) => d.body.includes(meanwhile))).toHaveLength(0);

    expect((await harness.admin.send('EnableWebhookSubscription', { aggregateRootId: id })).status).toBe(200);
    await eventually(() => inOrderPerAggregate(target, new Map([[meanwhile, 2]])).ok, 15_000);
  });
});

describe("A webhook subscription taken over on an ingress whose clock runs ahead of the one that wrote its owner's lapse", () => {
  let harness: Awaited<ReturnType<typeof createWebhookHarness>>;
  let worker: ServiceProcess | undefined;
  const receivers: WebhookReceiver[] = [];

  beforeAll(async () => {
    harness = await createWebhookHarness();
  }, 60_000);
  afterAll(async () => {
    await Promise.all(receivers.map((r) => r.stop()));
    await killAll(worker);
    await harness.close();
  });

  it('When the owner is disabled and enabled again after a take-over recorded 10 minutes ahead, before any worker reads the account, then a worker that starts suspends the subscription naming the disable: lapses are placed by account versions, not clocks', async () => {
    const owner = await adminCommander(harness.subject.app, (user) => harness.subject.createUser(user));
    const target = await startReceiver();
    receivers.push(target);
    const id = randomUUID();
    jest.useFakeTimers({
      now: Date.now() + CLOCK_SKEW_MS,
      advanceTimers: true,
      doNotFake: EVERYTHING_BUT_DATE,
    });
    try {
      const token = await passwordGrantToken(harness.subject.app, owner.email, 'webhooks-admin-password');
      const created = await request(harness.subject.app)
        .post('/api/command')
        .set('Authorization', `Bearer ${token}`)
        .send({
          commandType: 'CreateWebhookSubscription',
          command: { aggregateRootId: id, url: target.url, eventTypes: ['*'] },
        });
      expect(created.status).toBe(200);
    } finally {
      jest.useRealTimers();
    }
    // On the real clock, 10 minutes "before" the take-over by its record's time, after it in fact.
    expect((await harness.admin.send('DisableUser', { aggregateRootId: owner.userId })).status).toBe(200);
    expect((await harness.admin.send('EnableUser', { aggregateRootId: owner.userId })).status).toBe(200);
    worker = await harness.startWorker();

    const listedNow = async () => {
      const res = await harness.admin.query({ queryType: 'ListWebhookSubscriptions' }, { take: 1000 });
      return (res.body as { results: ListedSubscription[] }).results.find((entry) => entry.id === id);
    };
    await eventually(async () => (await listedNow())?.status === 'suspended', 15_000);
    expect(await listedNow()).toMatchObject({
      status: 'suspended',
      statusReason: `Owner ${owner.userId} was disabled`,
      ownerUserId: owner.userId,
    });
  });
});
