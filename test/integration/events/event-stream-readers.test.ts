import { randomUUID } from 'node:crypto';

import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import request from 'supertest';

import { listen, type RunningServer } from '../../../shared/http/server';
import { publicEventSchema } from '../../../shared/public-events/event-catalogue';
import { createTestApp, type TestApp } from '../../helpers/app-fixture';
import { SseClient } from '../../helpers/sse-client';
import { passwordGrantToken } from '../../helpers/tokens';

/**
 * Who reads what on GET /api/events (issue 29), over real HTTP on a real Redis: personal fields of
 * user events reach only readers that may read accounts, and the streams' caps are shared out by
 * role class, so the accounts of one class cannot take every stream.
 */

const PASSWORD = 'event-stream-readers-password';
const PERSONAL_FIELDS = ['email', 'userName', 'firstName', 'lastName'];
const basic = (email: string) => `Basic ${Buffer.from(`${email}:${PASSWORD}`).toString('base64')}`;

interface Payload {
  type: string;
  data: Record<string, unknown> & { aggregateId: string };
}

describe('The event stream: personal fields of user events', () => {
  let subject: TestApp;
  let running: RunningServer;
  let base: string;
  const clients: SseClient[] = [];

  beforeAll(async () => {
    subject = await createTestApp();
    running = await listen(subject.app, 0, '127.0.0.1');
    base = `http://127.0.0.1:${running.port}`;
  });
  afterAll(async () => {
    for (const client of clients.splice(0)) client.close();
    await subject?.services.eventStreams.close();
    await running?.close(5_000);
    await subject?.close();
  });

  async function streamOf(
    roles: string[],
    userType: 'Human' | 'ServiceAccount' = 'Human',
    types = 'UserCreatedEvent',
  ) {
    const email = `readers-${randomUUID()}@example.com`;
    await subject.createUser({ email, password: PASSWORD, roles: roles as never, userType });
    const client = await SseClient.connect(`${base}/api/events?from=now&types=${types}`, {
      authorization: basic(email),
    });
    clients.push(client);
    expect(client.status).toBe(200);
    await client.until((c) => c.messages.length > 0, 10_000, 'the opening id');
    return client;
  }
  const eventOf = async (client: SseClient, userId: string, type = 'UserCreatedEvent'): Promise<Payload> => {
    const find = () =>
      client
        .payloads<Payload>()
        .find((payload) => payload.type === type && payload.data.aggregateId === userId);
    await client.until(() => find() !== undefined, 10_000, `the ${type} of ${userId}`);
    return find() as Payload;
  };
  const createdOf = (client: SseClient, userId: string) => eventOf(client, userId);

  it('When an account is created, then a ServiceAccount receives its UserCreatedEvent without email, userName, firstName and lastName, and an Admin receives them', async () => {
    const machine = await streamOf(['ServiceAccount'], 'ServiceAccount');
    const admin = await streamOf(['Admin']);
    const email = `personal-${randomUUID()}@example.com`;
    const userId = await subject.createUser({
      email,
      roles: ['Member'],
      firstName: 'Ada',
      lastName: 'Lovelace',
    });

    const redacted = await createdOf(machine, userId);
    for (const field of PERSONAL_FIELDS) expect(redacted.data).not.toHaveProperty(field);
    expect(redacted.data).toMatchObject({ userId, roles: ['Member'], userType: 'Human' });
    expect(JSON.stringify(redacted)).not.toMatch(/Ada|Lovelace|personal-/);

    const full = await createdOf(admin, userId);
    expect(full.data).toMatchObject({ email, firstName: 'Ada', lastName: 'Lovelace' });
    expect(full.data).toHaveProperty('userName');

    // Both are the documented shape: the personal fields are optional in the catalogue's schema.
    const ajv = new Ajv2020({ strict: false });
    addFormats(ajv);
    const valid = ajv.compile(publicEventSchema('UserCreatedEvent'));
    expect([valid(redacted), valid(full)]).toEqual([true, true]);
  });

  it('When an account is disabled with a reason, then a ServiceAccount receives its UserDisabledEvent without the reason (personal data sealed at rest), and an Admin receives it', async () => {
    const machine = await streamOf(['ServiceAccount'], 'ServiceAccount', 'UserDisabledEvent');
    const admin = await streamOf(['Admin'], 'Human', 'UserDisabledEvent');
    const operator = `operator-${randomUUID()}@example.com`;
    await subject.createUser({ email: operator, password: PASSWORD, roles: ['Admin'] });
    const userId = await subject.createUser({ email: `disabled-${randomUUID()}@example.com` });
    const reason = 'Complaint filed by Ada Lovelace';
    const disabled = await request(subject.app)
      .post('/api/command')
      .set('Authorization', `Bearer ${await passwordGrantToken(subject.app, operator, PASSWORD)}`)
      .send({ commandType: 'DisableUser', command: { aggregateRootId: userId, reason } });
    expect(disabled.status).toBe(200);

    const redacted = await eventOf(machine, userId, 'UserDisabledEvent');
    expect(redacted.data).not.toHaveProperty('reason');
    expect(redacted.data).toHaveProperty('byUserId');
    expect(JSON.stringify(redacted)).not.toMatch(/Ada|Lovelace|Complaint/);

    const full = await eventOf(admin, userId, 'UserDisabledEvent');
    expect(full.data).toMatchObject({ reason });

    const ajv = new Ajv2020({ strict: false });
    addFormats(ajv);
    const valid = ajv.compile(publicEventSchema('UserDisabledEvent'));
    expect([valid(redacted), valid(full)]).toEqual([true, true]);
  });
});

describe('The event stream: caps per role class', () => {
  it('When the ServiceAccounts hold their role class share of streams, then another ServiceAccount gets the 503, and an Admin still gets a stream', async () => {
    const subject = await createTestApp({
      SSE_MAX_CONNECTIONS: '10',
      SSE_MAX_CONNECTIONS_PER_ROLE_CLASS: '2',
      SSE_MAX_CONNECTIONS_PER_ACCOUNT: '5',
    });
    const running = await listen(subject.app, 0, '127.0.0.1');
    const url = `http://127.0.0.1:${running.port}/api/events`;
    const account = async (roles: string[], userType: 'Human' | 'ServiceAccount' = 'Human') => {
      const email = `class-${randomUUID()}@example.com`;
      await subject.createUser({ email, password: PASSWORD, roles: roles as never, userType });
      return email;
    };
    const machines = [
      await account(['ServiceAccount'], 'ServiceAccount'),
      await account(['ServiceAccount'], 'ServiceAccount'),
      await account(['ServiceAccount'], 'ServiceAccount'),
    ];
    const admin = await account(['Admin']);
    const open: SseClient[] = [];
    try {
      for (const machine of machines.slice(0, 2)) {
        open.push(await SseClient.connect(url, { authorization: basic(machine) }));
      }
      expect(open.map((client) => client.status)).toEqual([200, 200]);

      const refused = await request(subject.app)
        .get('/api/events')
        .set('Authorization', basic(machines[2] as string));
      expect([refused.status, refused.headers['retry-after']]).toEqual([503, '5']);
      expect((refused.body as { detail: string }).detail).toBe(
        'The accounts of role class ServiceAccount have as many event streams open on this instance as SSE_MAX_CONNECTIONS_PER_ROLE_CLASS allows; retry later.',
      );

      open.push(await SseClient.connect(url, { authorization: basic(admin) }));
      expect(open[2]?.status).toBe(200);
      expect(subject.services.eventStreams.open).toBe(3);
    } finally {
      for (const client of open) client.close();
      await subject.services.eventStreams.close();
      await running.close(5_000);
      await subject.close();
    }
  });
});
