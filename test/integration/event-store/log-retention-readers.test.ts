/**
 * Readers of a trimmed log (LOG_RETENTION): the event stream's `from=beginning` starts at the
 * oldest entry kept, and a webhook replay from before the trimmed entries is refused with a clear
 * 400, never answered 200 with a silent gap.
 */
import { randomUUID } from 'node:crypto';

import { trimLog } from '../../../shared/event-stream/log-retention';
import { listen, type RunningServer } from '../../../shared/http/server';
import { WEBHOOK_MESSAGES } from '../../../shared/webhook-subscription/webhook-subscription.messages';
import { createTestApp, type TestApp } from '../../helpers/app-fixture';
import { SseClient } from '../../helpers/sse-client';
import { adminCommander } from '../../helpers/webhooks';

const PASSWORD = 'log-retention-readers-password';
const basic = (email: string) => `Basic ${Buffer.from(`${email}:${PASSWORD}`).toString('base64')}`;

describe('Readers of a trimmed log', () => {
  let subject: TestApp;
  let running: RunningServer;
  let admin: Awaited<ReturnType<typeof adminCommander>>;
  const adminEmail = `retention-admin-${randomUUID()}@example.com`;

  /** Accounts appended now, then the whole log trimmed (no consumer given: all have passed it). */
  async function appendThenTrimAll(): Promise<void> {
    for (let i = 0; i < 4; i++) {
      await subject.createUser({ email: `old-${randomUUID()}@example.com`, roles: ['Member'] });
    }
    const trims = await trimLog(subject.redis, subject.services.keys, [], 0, Date.now() + 1_000);
    expect(trims.reduce((sum, trim) => sum + trim.removed, 0)).toBeGreaterThan(0);
  }

  beforeAll(async () => {
    subject = await createTestApp({
      SSE_HEARTBEAT_MS: '100',
      JWT_SECRET: 'log-retention-readers-jwt-secret-32ch',
    });
    running = await listen(subject.app, 0, '127.0.0.1');
    await subject.createUser({ email: adminEmail, password: PASSWORD, roles: ['Admin'] });
    admin = await adminCommander(subject.app, (user) => subject.createUser(user));
  });
  afterAll(async () => {
    await subject?.services.eventStreams.close();
    await running?.close(5_000);
    await subject?.close();
  });

  it('When the log was trimmed, then from=beginning streams the events kept and stays open', async () => {
    await appendThenTrimAll();
    const kept = await subject.createUser({ email: `kept-${randomUUID()}@example.com`, roles: ['Member'] });
    const client = await SseClient.connect(`http://127.0.0.1:${running.port}/api/events?from=beginning`, {
      authorization: basic(adminEmail),
    });
    try {
      expect(client.status).toBe(200);
      await client.until(
        (c) =>
          c.ended || c.payloads<{ data: { aggregateId: string } }>().some((p) => p.data.aggregateId === kept),
        10_000,
        'the kept event or the end of the stream',
      );
      expect(client.ended).toBe(false);
    } finally {
      client.close();
    }
  });

  it('When events after `from` were trimmed, then ReplayWebhookEvents is refused with a 400 and changes nothing; from after them is accepted', async () => {
    const id = randomUUID();
    const before = new Date(Date.now() - 60_000).toISOString();
    const created = await admin.send('CreateWebhookSubscription', {
      aggregateRootId: id,
      url: 'https://hooks.example.com/fantasy',
      eventTypes: ['*'],
    });
    expect(created.status).toBe(200);
    await appendThenTrimAll();

    const refused = await admin.send('ReplayWebhookEvents', { aggregateRootId: id, from: before });
    expect(refused.status).toBe(400);
    expect(JSON.stringify(refused.body)).toContain(WEBHOOK_MESSAGES.replayFromTrimmed);
    await new Promise((resolve) => setTimeout(resolve, 5));
    const accepted = await admin.send('ReplayWebhookEvents', {
      aggregateRootId: id,
      from: new Date().toISOString(),
    });
    expect(accepted.status).toBe(200);
    expect(accepted.body).toMatchObject({ success: true, version: 2 });
  });
});
