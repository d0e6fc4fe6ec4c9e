/**
 * Webhook subscriptions over their life (issue 20): secret rotation, replay, disable, enable,
 * delete, the delivery log and the subscription list, giving up and automatic disabling; with a
 * real worker process and real receivers on loopback.
 */
import { randomUUID } from 'node:crypto';

import { freePort } from '../../../scripts/lib/free-port';
import { parseExposition, sampleSum } from '../../helpers/metrics';
import { eventually } from '../../helpers/processes';
import {
  createWebhookHarness,
  inOrderPerAggregate,
  parsedDeliveries,
  startReceiver,
  verifies,
  type WebhookReceiver,
} from '../../helpers/webhooks';

interface Attempt {
  eventId: string;
  eventType: string;
  attempt: number;
  status: string;
  httpStatus: number | null;
  error: string | null;
}

describe('Webhook subscriptions over their life', () => {
  let harness: Awaited<ReturnType<typeof createWebhookHarness>>;
  const receivers: WebhookReceiver[] = [];
  const receiver = async () => {
    const started = await startReceiver();
    receivers.push(started);
    return started;
  };
  const deliveries = async (subscriptionId: string, extra: object = {}) => {
    const res = await harness.admin.query({ queryType: 'GetWebhookDeliveries', subscriptionId, ...extra });
    expect(res.status).toBe(200);
    return res.body as { results: Attempt[]; totalCount: number };
  };

  beforeAll(async () => {
    harness = await createWebhookHarness();
    await harness.startWorker();
  }, 60_000);
  afterAll(async () => {
    await Promise.all(receivers.map((r) => r.stop()));
    await harness.close();
  });

  it('When the secret is rotated, then deliveries carry two v1 signatures and both secrets verify them', async () => {
    const target = await receiver();
    const { id, secret: oldSecret } = await harness.subscribe(target.url);
    const rotated = await harness.admin.send('RotateWebhookSecret', { aggregateRootId: id });
    const newSecret = (rotated.body as { signingSecret: string }).signingSecret;
    const team = await harness.teamWithEvents(2);
    await eventually(() => inOrderPerAggregate(target, new Map([[team, 2]])).ok, 15_000);
    for (const { delivery } of parsedDeliveries(target)) {
      expect(String(delivery.headers['webhook-signature']).split(' ')).toHaveLength(2);
      expect(verifies(delivery, oldSecret)).toBe(true);
      expect(verifies(delivery, newSecret)).toBe(true);
    }
  });

  it('When events are replayed from a time, then they arrive again with their original webhook-ids', async () => {
    const target = await receiver();
    const { id } = await harness.subscribe(target.url);
    const from = new Date(Date.now() - 1).toISOString();
    const team = await harness.teamWithEvents(3);
    await eventually(() => inOrderPerAggregate(target, new Map([[team, 3]])).ok, 15_000);
    const firstIds = parsedDeliveries(target)
      .filter((d) => d.payload.data.aggregateId === team)
      .map((d) => d.id);
    expect((await harness.admin.send('ReplayWebhookEvents', { aggregateRootId: id, from })).status).toBe(200);
    await eventually(
      () => parsedDeliveries(target).filter((d) => d.payload.data.aggregateId === team).length >= 6,
      15_000,
    );
    const all = parsedDeliveries(target).filter((d) => d.payload.data.aggregateId === team);
    expect(all.slice(3).map((d) => d.id)).toEqual(firstIds);
    expect(all.slice(3).map((d) => d.payload.data.version)).toEqual([1, 2, 3]);
  });

  it('When a subscription is disabled, then nothing is sent until it is enabled, and then what was missed arrives', async () => {
    const target = await receiver();
    const { id } = await harness.subscribe(target.url);
    expect((await harness.admin.send('DisableWebhookSubscription', { aggregateRootId: id })).status).toBe(
      200,
    );
    // The worker reads subscriptions again at once on their change; a marker subscription shows
    // events flow meanwhile.
    const marker = await receiver();
    await harness.subscribe(marker.url);
    const team = await harness.teamWithEvents(2);
    await eventually(() => inOrderPerAggregate(marker, new Map([[team, 2]])).ok, 15_000);
    expect(parsedDeliveries(target).filter((d) => d.payload.data.aggregateId === team)).toHaveLength(0);
    expect((await harness.admin.send('EnableWebhookSubscription', { aggregateRootId: id })).status).toBe(200);
    await eventually(() => inOrderPerAggregate(target, new Map([[team, 2]])).ok, 15_000);
  });

  it('When a subscription is deleted, then nothing more is sent to it and it leaves the list', async () => {
    const target = await receiver();
    const { id } = await harness.subscribe(target.url);
    expect((await harness.admin.send('DeleteWebhookSubscription', { aggregateRootId: id })).status).toBe(200);
    const marker = await receiver();
    await harness.subscribe(marker.url);
    const team = await harness.teamWithEvents(2);
    await eventually(() => inOrderPerAggregate(marker, new Map([[team, 2]])).ok, 15_000);
    expect(parsedDeliveries(target).filter((d) => d.payload.data.aggregateId === team)).toHaveLength(0);
    const list = await harness.admin.query({ queryType: 'ListWebhookSubscriptions' }, { take: 1000 });
    const ids = (list.body as { results: { id: string }[] }).results.map((item) => item.id);
    expect(ids).not.toContain(id);
  });

  it('When subscriptions are listed, then each shows its settings and never a secret', async () => {
    const target = await receiver();
    const { id, secret } = await harness.subscribe(target.url, ['FantasyTeamCreatedEvent']);
    const res = await harness.admin.query({ queryType: 'ListWebhookSubscriptions' }, { take: 1000 });
    expect(res.status).toBe(200);
    expect(res.text).not.toContain(secret.slice(6));
    expect(res.text).not.toMatch(/whsec_|webhookSecrets/);
    const item = (res.body as { results: { id: string }[] }).results.find((entry) => entry.id === id);
    expect(item).toEqual({
      id,
      url: target.url,
      eventTypes: ['FantasyTeamCreatedEvent'],
      description: null,
      status: 'enabled',
      statusReason: null,
      createdBy: harness.admin.userId,
      ownerUserId: harness.admin.userId,
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
      previousSecretUntil: null,
    });
  });

  it('When attempts fail and then succeed, then the delivery log lists each with its status, newest first, filterable', async () => {
    const target = await receiver();
    target.status = 500;
    const { id } = await harness.subscribe(target.url, ['FantasyTeamCreatedEvent']);
    await harness.teamWithEvents(1);
    await eventually(() => target.received.length >= 2, 15_000);
    target.status = 204;
    await eventually(async () => (await deliveries(id, { status: 'delivered' })).totalCount === 1, 15_000);
    const log = await deliveries(id);
    expect(log.results[0]).toMatchObject({
      status: 'delivered',
      httpStatus: 204,
      eventType: 'FantasyTeamCreatedEvent',
    });
    const retrying = await deliveries(id, { status: 'retrying' });
    expect(retrying.totalCount).toBeGreaterThanOrEqual(2);
    expect(retrying.results.every((a) => a.httpStatus === 500)).toBe(true);
    expect(log.results.map((a) => a.attempt)).toEqual(
      [...log.results.map((a) => a.attempt)].sort((a, b) => b - a),
    );
    const page = await harness.admin.query(
      { queryType: 'GetWebhookDeliveries', subscriptionId: id },
      { skip: 1, take: 1 },
    );
    expect((page.body as { results: Attempt[] }).results).toEqual([log.results[1]]);
  });

  it('When every attempt fails, then the event is given up after the schedule and the next one is delivered', async () => {
    const target = await receiver();
    target.status = 500;
    const { id } = await harness.subscribe(target.url, ['FantasyTeamCreatedEvent']);
    const first = await harness.teamWithEvents(1);
    // WEBHOOK_RETRY_SCHEDULE=0,50ms,100ms: 4 attempts, then failed.
    await eventually(async () => (await deliveries(id, { status: 'failed' })).totalCount === 1, 15_000);
    const log = await deliveries(id);
    expect(log.results.map((a) => a.attempt)).toEqual([4, 3, 2, 1]);
    target.status = 200;
    const second = await harness.teamWithEvents(1);
    await eventually(
      () => parsedDeliveries(target).some((d) => d.payload.data.aggregateId === second),
      15_000,
    );
    expect(parsedDeliveries(target).filter((d) => d.payload.data.aggregateId === first)).toHaveLength(4);
  });

  it('When an account is erased, then a replay of its creation sends its personal fields as null, and no event ever carries a stamp', async () => {
    const target = await receiver();
    const { id } = await harness.subscribe(target.url, ['UserCreatedEvent', 'UserDeletedEvent']);
    const from = new Date(Date.now() - 1).toISOString();
    const email = `erased-${randomUUID().slice(0, 8)}@example.com`;
    const userId = await harness.subject.createUser({
      email,
      password: 'erased-password-1',
      roles: ['Member'],
      firstName: 'Given',
      lastName: 'Family',
    });
    const ofUser = () => parsedDeliveries(target).filter((d) => d.payload.data.aggregateId === userId);
    await eventually(() => ofUser().length === 1, 15_000);
    expect(ofUser()[0]?.payload.data).toMatchObject({ email, firstName: 'Given', userId });
    expect((await harness.admin.send('DeleteUser', { aggregateRootId: userId })).status).toBe(200);
    await eventually(() => ofUser().length === 2, 15_000);
    expect((await harness.admin.send('ReplayWebhookEvents', { aggregateRootId: id, from })).status).toBe(200);
    await eventually(() => ofUser().length === 4, 15_000);
    const replayed = ofUser()[2]?.payload;
    expect(replayed?.type).toBe('UserCreatedEvent');
    expect(replayed?.data).toMatchObject({ email: null, userName: null, firstName: null, lastName: null });
    const afterErasure = ofUser()
      .slice(1)
      .map((d) => d.delivery.body)
      .join('\n');
    expect(afterErasure).not.toContain(email);
    expect(afterErasure).not.toContain('Given');
    const all = target.received.map((d) => d.body).join('\n');
    expect(all).not.toMatch(/securityStamp|personalData|sealed/i);
  });

  it('When a Member asks for deliveries or subscriptions, then it is forbidden', async () => {
    const email = `member-${randomUUID().slice(0, 8)}@example.com`;
    await harness.subject.createUser({ email, password: 'member-password-1', roles: ['Member'] });
    const basic = `Basic ${Buffer.from(`${email}:member-password-1`).toString('base64')}`;
    const { default: request } = await import('supertest');
    for (const query of [
      { queryType: 'ListWebhookSubscriptions' },
      { queryType: 'GetWebhookDeliveries', subscriptionId: randomUUID() },
    ]) {
      const res = await request(harness.subject.app)
        .post('/api/readmodel')
        .set('Authorization', basic)
        .send({ query });
      expect(res.status).toBe(403);
    }
  });
});

const STOPPED_METRICS_TOKEN = 'webhook-stopped-metrics-token-0123456789';

describe('An endpoint that keeps failing', () => {
  let harness: Awaited<ReturnType<typeof createWebhookHarness>>;
  let target: WebhookReceiver;
  let metricsUrl: string;
  /** fts_webhook_subscriptions_stopped_total{reason="disabled"} on the worker's /metrics. */
  const disabledCount = async () => {
    const res = await fetch(`${metricsUrl}/metrics`, {
      headers: { authorization: `Bearer ${STOPPED_METRICS_TOKEN}` },
    });
    return sampleSum(parseExposition(await res.text()), 'fts_webhook_subscriptions_stopped_total', {
      reason: 'disabled',
    });
  };

  beforeAll(async () => {
    harness = await createWebhookHarness({
      WEBHOOK_RETRY_SCHEDULE: '0,400ms,400ms,400ms,400ms',
      WEBHOOK_DISABLE_AFTER_MS: '1000',
    });
    metricsUrl = `http://127.0.0.1:${await freePort()}`;
    await harness.startWorker({
      METRICS_PORT: new URL(metricsUrl).port,
      METRICS_HOST: '127.0.0.1',
      METRICS_TOKEN: STOPPED_METRICS_TOKEN,
    });
    target = await startReceiver();
  }, 60_000);
  afterAll(async () => {
    await target.stop();
    await harness.close();
  });

  it('When every delivery has failed for WEBHOOK_DISABLE_AFTER_MS, then the subscription is disabled by an event that says so, and counted', async () => {
    // From 0, so that the first one shows as an increase (the alert FtsWebhookSubscriptionStopped).
    expect(await disabledCount()).toBe(0);
    target.status = 500;
    const { id } = await harness.subscribe(target.url);
    await harness.teamWithEvents(1);
    await eventually(async () => {
      const res = await harness.admin.query({ queryType: 'ListWebhookSubscriptions' }, { take: 1000 });
      const item = (res.body as { results: { id: string; status: string }[] }).results.find(
        (s) => s.id === id,
      );
      return item?.status === 'disabled';
    }, 15_000);
    const events = await harness.subject.services.store.readStream('webhook-subscription', id);
    expect(events.at(-1)).toMatchObject({
      eventType: 'WebhookSubscriptionDisabledEvent',
      data: { automatic: true },
    });
    expect(await disabledCount()).toBe(1);
  });
});
