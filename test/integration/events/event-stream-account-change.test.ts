import { randomUUID } from 'node:crypto';

import express from 'express';
import request from 'supertest';

import { principalOf } from '../../../ingress/auth/principal';
import { parseEventStreamRequest } from '../../../ingress/events/event-stream-request';
import {
  EventStreams,
  HELD_CHECK_RETRY_DELAYS_MS,
  type StreamReader,
} from '../../../ingress/events/event-streams';
import type { Account } from '../../../shared/accounts/account';
import { AppError } from '../../../shared/errors';
import { listen, type RunningServer } from '../../../shared/http/server';
import { duplicateConnection } from '../../../shared/redis/connections';
import { createTestApp, type TestApp } from '../../helpers/app-fixture';
import { SseClient } from '../../helpers/sse-client';
import { passwordGrantToken } from '../../helpers/tokens';

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
  /**
   * How many changes of each account this ingress has heard (told after the event streams are):
   * every append to an account's stream announces it once, its creation included.
   */
  const heard = new Map<string, number>();

  beforeAll(async () => {
    // A heartbeat far beyond the margin: a stream that ends within it was ended by the announcement.
    subject = await createTestApp({ SSE_HEARTBEAT_MS: '60000' });
    running = await listen(subject.app, 0, '127.0.0.1');
    base = `http://127.0.0.1:${running.port}`;
    await subject.createUser({ email: ADMIN, password: PASSWORD, roles: ['Admin'] });
    adminBearer = `Bearer ${await passwordGrantToken(subject.app, ADMIN, PASSWORD)}`;
    subject.services.accountCache.onChange((userId) => {
      if (userId !== undefined) heard.set(userId.toLowerCase(), (heard.get(userId.toLowerCase()) ?? 0) + 1);
    });
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
   * this ingress heard the change (an account created then, which the stream would otherwise send).
   * What is appended between the change and its announcement reaching the ingress (milliseconds,
   * on a cluster through the cluster bus) may still go out: the promise is the end, not a fence.
   */
  async function expectEndedWithNothingAfter(
    client: SseClient,
    answeredAt: number,
    userId: string,
  ): Promise<void> {
    // Heard the change itself, not only the account's creation: one announcement per event of
    // its stream. (Waiting for any announcement of the account passed at once, on the creation's,
    // and on a cluster the change's own comes through the cluster bus after the command's answer.)
    const announced = (await subject.services.store.readStream('user', userId)).length;
    const deadline = Date.now() + END_MARGIN_MS;
    while ((heard.get(userId.toLowerCase()) ?? 0) < announced && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    const later = await subject.createUser({ email: `change-later-${randomUUID()}@example.com` });
    await client.until((c) => c.ended, END_MARGIN_MS, 'the end of the stream');
    expect(Date.now() - answeredAt).toBeLessThan(END_MARGIN_MS);
    expect(client.payloads<Payload>().filter((payload) => payload.data.aggregateId === later)).toEqual([]);
    expect(subject.logs.text).toContain('event stream ended: its account may no longer read it');
  }

  it('When an Admin disables the account of an open stream, then the stream ends within a second (not at the heartbeat) and sends nothing appended once the ingress heard of the disable', async () => {
    const { userId, client } = await openStream();

    const disabled = await command(adminBearer, 'DisableUser', { aggregateRootId: userId });
    const answeredAt = Date.now();
    expect(disabled.status).toBe(200);

    await expectEndedWithNothingAfter(client, answeredAt, userId);
  });

  it('When the account of an open stream changes its password, then the stream ends within a second and sends nothing appended once the ingress heard of the change', async () => {
    const { email, userId, client } = await openStream();

    const bearer = `Bearer ${await passwordGrantToken(subject.app, email, PASSWORD)}`;
    const changed = await command(bearer, 'ChangePassword', {
      currentPassword: PASSWORD,
      newPassword: NEW_PASSWORD,
    });
    const answeredAt = Date.now();
    expect(changed.status).toBe(200);

    await expectEndedWithNothingAfter(client, answeredAt, userId);
  });

  it('When an Admin takes the ServiceAccount role away, then the stream ends within a second', async () => {
    const { userId, client } = await openStream();

    const res = await command(adminBearer, 'SetUserRoles', { aggregateRootId: userId, roles: ['Member'] });
    const answeredAt = Date.now();
    expect(res.status).toBe(200);

    await expectEndedWithNothingAfter(client, answeredAt, userId);
  });

  it('When another account changes, then an open stream goes on and loses nothing (it is held while its own account is re-read only)', async () => {
    const { client } = await openStream();
    const other = await subject.createUser({ email: `change-other-${randomUUID()}@example.com` });
    const disabled = await command(adminBearer, 'DisableUser', { aggregateRootId: other });
    expect(disabled.status).toBe(200);
    const after = await subject.createUser({ email: `change-after-${randomUUID()}@example.com` });

    // Order holds per aggregate only (two accounts may sit in two log partitions): wait for all three.
    const typesOf = (aggregateId: string) =>
      client
        .payloads<Payload>()
        .filter((payload) => payload.data.aggregateId === aggregateId)
        .map((payload) => payload.type);
    await client.until(
      () => typesOf(other).length >= 2 && typesOf(after).length >= 1,
      10_000,
      'the creation and disable of the other account, and the account created after',
    );
    expect(client.ended).toBe(false);
    expect({ other: typesOf(other), after: typesOf(after) }).toEqual({
      other: ['UserCreatedEvent', 'UserDisabledEvent'],
      after: ['UserCreatedEvent'],
    });
  });
});

/**
 * An account source whose reads the test answers one by one (each with the real account, or with
 * one read before a change), and whose change announcements the test makes: the order of two
 * checks, or the re-subscription's "anything may have changed", without racing the real cache.
 */
class AnsweredAccounts {
  answering = false;
  readonly pending: {
    readonly userId: string;
    answer(account: Account | null): void;
    fail(error: Error): void;
  }[] = [];
  private listener: ((userId: string | undefined) => void) | undefined;

  constructor(private readonly cache: TestApp['services']['accountCache']) {}

  findById(userId: string): Promise<Account | null> {
    if (!this.answering) return this.cache.findById(userId);
    return new Promise((answer, fail) => this.pending.push({ userId, answer, fail }));
  }

  onChange(listener: (userId: string | undefined) => void): () => void {
    this.listener = listener;
    return () => {
      this.listener = undefined;
    };
  }

  /** What the account cache tells after a change (undefined: its subscription came back). */
  announce(userId: string | undefined): void {
    this.listener?.(userId);
  }
}

/** Polls `condition` every 20 ms, failing past `timeoutMs`. */
function eventually(condition: () => boolean, timeoutMs: number, what: string): Promise<void> {
  return eventuallyAsync(() => Promise.resolve(condition()), timeoutMs, what);
}

/** Polls an asynchronous `condition` every 20 ms, failing past `timeoutMs`. */
async function eventuallyAsync(
  condition: () => Promise<boolean>,
  timeoutMs: number,
  what: string,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/**
 * How long a released stream is given to send what it should not have (a catch-up of a few events
 * from the local Redis): generous on a loaded machine. Only a stream sending too much is caught by
 * it; the streams that behave pass whatever it is.
 */
const SEND_WINDOW_MS = 2_000;

describe("An open event stream and its account's checks, answered one by one", () => {
  let subject: TestApp;
  let running: RunningServer;
  let accounts: AnsweredAccounts;
  let streams: EventStreams;
  let base: string;
  let adminBearer: string;
  /** The reader each stream of the test app below is opened for (its authenticated principal). */
  const readers = new Map<string, StreamReader>();
  const clients: SseClient[] = [];

  beforeAll(async () => {
    subject = await createTestApp({ SSE_HEARTBEAT_MS: '60000' });
    accounts = new AnsweredAccounts(subject.services.accountCache);
    streams = new EventStreams({
      redis: subject.redis,
      accounts,
      keys: subject.services.keys,
      open: (envelopes) => subject.services.store.opened(envelopes),
      newSubscriber: () => duplicateConnection(subject.redis, subject.logger, 'test-event-stream-changes'),
      logger: subject.logger,
      settings: subject.config.events,
    });
    // The route's own steps after authentication, for a reader the test names: the principal a
    // request was authenticated as, whatever changed since.
    const app = express();
    app.get('/events/:reader', (req, res) => {
      const reader = readers.get(req.params.reader);
      if (!reader) throw new Error('unknown reader');
      streams.serve(res, parseEventStreamRequest(req), reader).catch((error: unknown) => {
        res.status(error instanceof AppError ? error.status : 500).end();
      });
    });
    running = await listen(app, 0, '127.0.0.1');
    base = `http://127.0.0.1:${running.port}`;
    const admin = `answered-admin-${randomUUID()}@example.com`;
    await subject.createUser({ email: admin, password: PASSWORD, roles: ['Admin'] });
    adminBearer = `Bearer ${await passwordGrantToken(subject.app, admin, PASSWORD)}`;
  });
  afterEach(() => {
    accounts.answering = false;
    for (const read of accounts.pending.splice(0)) read.answer(null);
    for (const client of clients.splice(0)) client.close();
  });
  afterAll(async () => {
    await streams?.close();
    await running?.close(5_000);
    await subject?.close();
  });

  const command = (commandType: string, body: object) =>
    request(subject.app)
      .post('/api/command')
      .set('Authorization', adminBearer)
      .send({ commandType, command: body });

  /** The principal an account is authenticated as now. */
  async function principalNow(userId: string): Promise<StreamReader> {
    const account = await subject.services.accountCache.findById(userId);
    if (!account) throw new Error(`no account ${userId}`);
    return principalOf(account, 'Basic');
  }

  async function connect(reader: StreamReader): Promise<SseClient> {
    const name = randomUUID();
    readers.set(name, reader);
    const client = await SseClient.connect(`${base}/events/${name}?from=now`);
    clients.push(client);
    return client;
  }

  /** A fresh ServiceAccount with an open stream (from=now), past the opening id and its first check. */
  async function openStream(): Promise<{ userId: string; client: SseClient }> {
    const userId = await subject.createUser({
      email: `answered-machine-${randomUUID()}@example.com`,
      roles: ['ServiceAccount'],
      userType: 'ServiceAccount',
    });
    const client = await connect(await principalNow(userId));
    expect(client.status).toBe(200);
    // The opening id is written after the check that follows the start began (unanswered reads).
    await client.until((c) => c.messages.length > 0, 10_000, 'the opening id');
    return { userId, client };
  }

  const carries = (client: SseClient, userId: string) =>
    client.payloads<Payload>().some((payload) => payload.data.aggregateId === userId);

  it('When two changes of its account are announced in quick succession and the first check reads the account from before the second (a disable), then the stream stays held until the second check, ends, and sends nothing appended after the disable', async () => {
    const { userId, client } = await openStream();
    const before = await subject.services.accountCache.findById(userId);
    accounts.answering = true;

    accounts.announce(userId); // e.g. a change that leaves the stamp, whose check reads `before`
    const disabled = await command('DisableUser', { aggregateRootId: userId });
    expect(disabled.status).toBe(200);
    accounts.announce(userId); // the disable's own announcement
    await eventually(() => accounts.pending.length === 2, 10_000, 'both checks');
    const later = await subject.createUser({ email: `answered-later-${randomUUID()}@example.com` });

    // The first check answers with the read made before the disable: "still allowed".
    accounts.pending[0]?.answer(before);
    await client.until((c) => carries(c, later) || c.ended, SEND_WINDOW_MS).catch(() => undefined);
    expect(carries(client, later)).toBe(false);

    // The second check reads the account after the disable: the stream ends.
    accounts.pending[1]?.answer(await subject.services.accountCache.findById(userId));
    await client.until((c) => c.ended, 10_000, 'the end of the stream');
    expect(carries(client, later)).toBe(false);
    expect(client.payloads<Payload>().filter((payload) => payload.data.aggregateId === userId)).toEqual([]);
  });

  /** Fails every read of the account as it comes, until the stream ends or `deadlineMs` passes. */
  async function failReadsUntilEnded(client: SseClient, deadlineMs: number): Promise<number> {
    let failed = 0;
    const deadline = Date.now() + deadlineMs;
    while (!client.ended && Date.now() < deadline) {
      for (const read of accounts.pending.splice(0)) {
        read.fail(new Error('Connection is closed.'));
        failed += 1;
      }
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    return failed;
  }

  it('When the read that decides a held stream fails, then the stream stays held (sends nothing appended meanwhile), and ends once the bounded retries fail too', async () => {
    const { userId, client } = await openStream();
    accounts.answering = true;

    accounts.announce(userId);
    await eventually(() => accounts.pending.length === 1, 10_000, 'the check');
    const later = await subject.createUser({ email: `answered-unread-${randomUUID()}@example.com` });
    const failed = await failReadsUntilEnded(client, 15_000);

    expect(client.ended).toBe(true);
    expect(failed).toBe(HELD_CHECK_RETRY_DELAYS_MS.length + 1);
    expect(carries(client, later)).toBe(false);
    expect(subject.logs.text).toContain(
      'event stream ended: its account could not be read again after a change',
    );
  });

  it('When the read that decides a held stream fails once and the retry reads the account unchanged, then the stream goes on from its position and loses nothing', async () => {
    const { userId, client } = await openStream();
    accounts.answering = true;

    accounts.announce(userId);
    await eventually(() => accounts.pending.length === 1, 10_000, 'the check');
    const later = await subject.createUser({ email: `answered-retried-${randomUUID()}@example.com` });
    accounts.pending.splice(0)[0]?.fail(new Error('Connection is closed.'));
    await client.until((c) => carries(c, later) || c.ended, SEND_WINDOW_MS).catch(() => undefined);
    expect(carries(client, later)).toBe(false);

    await eventually(() => accounts.pending.length === 1, 10_000, 'the retry');
    accounts.pending.splice(0)[0]?.answer(await subject.services.accountCache.findById(userId));
    await client.until((c) => carries(c, later), 10_000, 'the account created while held');
    expect(client.ended).toBe(false);
  });

  it('When announcements may have been lost (the subscription came back), then every stream is held until its account is read again, and sends nothing appended after a change found then', async () => {
    const { userId, client } = await openStream();
    accounts.answering = true;

    accounts.announce(undefined);
    await eventually(() => accounts.pending.length === 1, 10_000, 'the check');
    const disabled = await command('DisableUser', { aggregateRootId: userId });
    expect(disabled.status).toBe(200);
    const later = await subject.createUser({ email: `answered-lost-${randomUUID()}@example.com` });

    await client.until((c) => carries(c, later) || c.ended, SEND_WINDOW_MS).catch(() => undefined);
    expect(carries(client, later)).toBe(false);

    accounts.pending[0]?.answer(await subject.services.accountCache.findById(userId));
    await client.until((c) => c.ended, 10_000, 'the end of the stream');
    expect(carries(client, later)).toBe(false);
  });

  it('When announcements may have been lost and the account is unchanged, then the held stream goes on from its position and loses nothing', async () => {
    const { userId, client } = await openStream();
    accounts.answering = true;

    accounts.announce(undefined);
    await eventually(() => accounts.pending.length === 1, 10_000, 'the check');
    const later = await subject.createUser({ email: `answered-kept-${randomUUID()}@example.com` });

    accounts.pending[0]?.answer(await subject.services.accountCache.findById(userId));
    await client.until((c) => carries(c, later), 10_000, 'the account created while held');
    expect(client.ended).toBe(false);
  });

  it("When the reader's roles change after it was authenticated and before its stream opens (Admin to ServiceAccount), then the stream is refused, not opened with the Admin's personal data", async () => {
    const email = `answered-demoted-${randomUUID()}@example.com`;
    const userId = await subject.createUser({ email, roles: ['Admin'] });
    const authenticated = await principalNow(userId);
    const demoted = await command('SetUserRoles', { aggregateRootId: userId, roles: ['ServiceAccount'] });
    expect(demoted.status).toBe(200);
    // The ingress has heard of the change (its cache dropped the account) before the stream opens:
    // opened before that, the stream ends on the announcement instead (the tests above).
    await eventuallyAsync(
      async () =>
        (await subject.services.accountCache.findById(userId))?.roles.includes('ServiceAccount') ?? false,
      10_000,
      'the ingress to hear of the change',
    );

    const client = await connect(authenticated);
    expect(client.status).toBe(403);
    await eventually(() => streams.open === 0, 10_000, 'no stream open');
  });
});
