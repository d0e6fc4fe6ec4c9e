import { randomUUID } from 'node:crypto';

import request from 'supertest';

import { listen, type RunningServer } from '../../shared/http/server';
import { createTestApp, type TestApp } from '../helpers/app-fixture';
import { SseClient } from '../helpers/sse-client';
import { passwordGrantToken } from '../helpers/tokens';

/**
 * An open event stream ends within a second of its account's change (issue 29), pushed by the
 * account-change announcement every ingress's account cache hears, not at the next heartbeat: the
 * heartbeat here is a minute, so only the announcement can end the stream within the margin. Over
 * real HTTP on a real Redis; the margin (3 s for a 1 s promise) holds on a loaded 2-core machine.
 */

const PASSWORD = 'account-change-password';
const NEW_PASSWORD = 'account-change-new-password';
const ADMIN = 'change-admin@example.com';
const END_MARGIN_MS = 3_000;
const basic = (email: string, password = PASSWORD) =>
  `Basic ${Buffer.from(`${email}:${password}`).toString('base64')}`;

interface Payload {
  type: string;
  data: Record<string, unknown> & { aggregateId: string };
}

describe('An open event stream and its account', () => {
  let subject: TestApp;
  let running: RunningServer;
  let base: string;
  let adminBearer: string;
  const clients: SseClient[] = [];

  beforeAll(async () => {
    // A heartbeat far beyond the margin: a stream that ends within it was ended by the announcement.
    subject = await createTestApp({ SSE_HEARTBEAT_MS: '60000' });
    running = await listen(subject.app, 0, '127.0.0.1');
    base = `http://127.0.0.1:${running.port}`;
    await subject.createUser({ email: ADMIN, password: PASSWORD, roles: ['Admin'] });
    adminBearer = `Bearer ${await passwordGrantToken(subject.app, ADMIN, PASSWORD)}`;
  });
  afterEach(() => {
    for (const client of clients.splice(0)) client.close();
  });
  afterAll(async () => {
    await subject?.services.eventStreams.close();
    await running?.close(5_000);
    await subject?.close();
  });

  /** A fresh ServiceAccount with an open stream (from=now), past the opening id. */
  async function openStream(): Promise<{ email: string; userId: string; client: SseClient }> {
    const email = `change-machine-${randomUUID()}@example.com`;
    const userId = await subject.createUser({
      email,
      password: PASSWORD,
      roles: ['ServiceAccount'],
      userType: 'ServiceAccount',
    });
    const client = await SseClient.connect(`${base}/api/events?from=now`, { authorization: basic(email) });
    clients.push(client);
    expect(client.status).toBe(200);
    await client.until((c) => c.messages.length > 0, 10_000, 'the opening id');
    return { email, userId, client };
  }

  const command = (authorization: string, commandType: string, body: object) =>
    request(subject.app)
      .post('/api/command')
      .set('Authorization', authorization)
      .send({ commandType, command: body });

  /**
   * The stream ends within END_MARGIN_MS of the change's answer, and carries nothing appended after
   * that answer (an account created then, which the stream would otherwise send).
   */
  async function expectEndedWithNothingAfter(client: SseClient, answeredAt: number): Promise<void> {
    const later = await subject.createUser({ email: `change-later-${randomUUID()}@example.com` });
    await client.until((c) => c.ended, END_MARGIN_MS, 'the end of the stream');
    expect(Date.now() - answeredAt).toBeLessThan(END_MARGIN_MS);
    expect(client.payloads<Payload>().filter((payload) => payload.data.aggregateId === later)).toEqual([]);
    expect(subject.logs.text).toContain('event stream ended: its account may no longer read it');
  }

  it('When an Admin disables the account of an open stream, then the stream ends within a second (not at the heartbeat) and sends nothing appended after the disable', async () => {
    const { userId, client } = await openStream();

    const disabled = await command(adminBearer, 'DisableUser', { aggregateRootId: userId });
    const answeredAt = Date.now();
    expect(disabled.status).toBe(200);

    await expectEndedWithNothingAfter(client, answeredAt);
  });

  it('When the account of an open stream changes its password, then the stream ends within a second and sends nothing appended after the change', async () => {
    const { email, client } = await openStream();

    const bearer = `Bearer ${await passwordGrantToken(subject.app, email, PASSWORD)}`;
    const changed = await command(bearer, 'ChangePassword', {
      currentPassword: PASSWORD,
      newPassword: NEW_PASSWORD,
    });
    const answeredAt = Date.now();
    expect(changed.status).toBe(200);

    await expectEndedWithNothingAfter(client, answeredAt);
  });

  it('When an Admin takes the ServiceAccount role away, then the stream ends within a second', async () => {
    const { userId, client } = await openStream();

    const res = await command(adminBearer, 'SetUserRoles', { aggregateRootId: userId, roles: ['Member'] });
    const answeredAt = Date.now();
    expect(res.status).toBe(200);

    await expectEndedWithNothingAfter(client, answeredAt);
  });

  it('When another account changes, then an open stream goes on and loses nothing (it is held while its own account is re-read only)', async () => {
    const { client } = await openStream();
    const other = await subject.createUser({ email: `change-other-${randomUUID()}@example.com` });
    const disabled = await command(adminBearer, 'DisableUser', { aggregateRootId: other });
    expect(disabled.status).toBe(200);
    const after = await subject.createUser({ email: `change-after-${randomUUID()}@example.com` });

    await client.until(
      (c) => c.payloads<Payload>().some((payload) => payload.data.aggregateId === after),
      10_000,
      'the account created after the other change',
    );
    expect(client.ended).toBe(false);
    expect(
      client
        .payloads<Payload>()
        .filter((payload) => [other, after].includes(payload.data.aggregateId))
        .map((payload) => payload.type),
    ).toEqual(['UserCreatedEvent', 'UserDisabledEvent', 'UserCreatedEvent']);
  });
});
