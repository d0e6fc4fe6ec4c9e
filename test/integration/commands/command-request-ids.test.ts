/**
 * Commands: a request id belongs to its caller, and X-Request-Id is a trace id.
 *
 * Two accounts send the same requestId. The second one's request is its own: it never gets the
 * first caller's remembered answer (nor its error text), is never answered with the first caller's
 * events as a "replay" of them, and cannot make the id a duplicate for its owner. The event's
 * correlation id is the service's own; the client's X-Request-Id is kept as `traceId` only.
 */
import { randomUUID } from 'node:crypto';

import request from 'supertest';

import { scanKeys } from '../../../shared/redis/connections';
import { createTestApp, type TestApp } from '../../helpers/app-fixture';
import { passwordGrantToken } from '../../helpers/tokens';

const PASSWORD = 'request-id-owner-password';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

describe('POST /api/command: a requestId belongs to its caller', () => {
  let subject: TestApp;
  let ownerToken: string;
  let strangerToken: string;

  const tokenFor = (email: string) => passwordGrantToken(subject.app, email, PASSWORD);

  beforeAll(async () => {
    subject = await createTestApp();
    await subject.createUser({ email: 'rid-owner@example.com', password: PASSWORD });
    await subject.createUser({ email: 'rid-stranger@example.com', password: PASSWORD });
    ownerToken = await tokenFor('rid-owner@example.com');
    strangerToken = await tokenFor('rid-stranger@example.com');
  });
  afterAll(() => subject.close());

  const send = (token: string, body: object, traceId?: string) => {
    const req = request(subject.app).post('/api/command').set('Authorization', `Bearer ${token}`);
    if (traceId) req.set('X-Request-Id', traceId);
    return req.send(body);
  };
  const create = (token: string, aggregateRootId: string, requestId: string | null = null) =>
    send(token, {
      commandType: 'CreateFantasyTeam',
      command: { aggregateRootId, name: 'Request Id Rovers' },
      requestId,
    });
  const link = (token: string, aggregateRootId: string, requestId: string) =>
    send(token, {
      commandType: 'LinkFantasyTeam',
      command: { aggregateRootId, fantasyTeamExternalId: 42, fantasyUserId: 43 },
      requestId,
    });
  const streamOf = (id: string) => subject.services.store.readStream('fantasy-team', id);
  const forbidden = (requestId: string, commandType: string) => ({
    requestId,
    success: false,
    eventCount: 0,
    errorMessage: 'Cannot link non-existent team',
    errorCode: 'COMMAND_VALIDATION_ERROR',
    commandType,
  });

  it("When a stranger resends the owner's requestId with the owner's command, then it gets its own refusal (that of a missing team), never the owner's stored answer or its error text", async () => {
    const team = randomUUID();
    expect((await create(ownerToken, team)).status).toBe(200);
    const accepted = randomUUID();
    expect((await link(ownerToken, team, accepted)).body).toMatchObject({ success: true, eventCount: 1 });
    const refused = randomUUID();
    const again = await link(ownerToken, team, refused);
    expect(again.body.errorMessage).toMatch(/already linked/);

    const replayOfSuccess = await link(strangerToken, team, accepted);
    expect(replayOfSuccess.status).toBe(400);
    expect(replayOfSuccess.body).toEqual(forbidden(accepted, 'LinkFantasyTeam'));
    const replayOfRefusal = await link(strangerToken, team, refused);
    expect(replayOfRefusal.status).toBe(400);
    expect(replayOfRefusal.body).toEqual(forbidden(refused, 'LinkFantasyTeam'));
    expect(await streamOf(team)).toHaveLength(2);
  });

  it("When a stranger uses a requestId first, then the owner's own commands with it run normally: no DUPLICATE_REQUEST_ID, no stranger's answer", async () => {
    const team = randomUUID();
    expect((await create(ownerToken, team)).status).toBe(200);

    // The same command on the same team: the stranger's refusal must not be replayed to the owner.
    const sameCommand = randomUUID();
    expect((await link(strangerToken, team, sameCommand)).status).toBe(400);
    const owners = await link(ownerToken, team, sameCommand);
    expect(owners.status).toBe(200);
    expect(owners.body).toEqual({
      requestId: sameCommand,
      success: true,
      eventCount: 1,
      commandType: 'LinkFantasyTeam',
      version: 2,
    });

    // Another command: the stranger's use must not make the id a duplicate for the owner.
    const otherCommand = randomUUID();
    expect((await create(strangerToken, randomUUID(), otherCommand)).status).toBe(200);
    const ownTeam = randomUUID();
    const created = await create(ownerToken, ownTeam, otherCommand);
    expect(created.status).toBe(200);
    expect(created.body).toMatchObject({ success: true, eventCount: 1 });
    expect(await streamOf(ownTeam)).toHaveLength(1);
  });

  it("When the owner's answer was lost and a stranger sends the owner's requestId, then the stranger is not given the owner's events as a replay; the owner's retry still is", async () => {
    const team = randomUUID();
    const requestId = randomUUID();
    expect((await create(ownerToken, team, requestId)).status).toBe(200);
    // The remembered answers are lost (as when Redis or the ingress failed before keeping them):
    // only the aggregate's own record of the request id is left.
    for await (const keys of scanKeys(subject.redis, `${subject.config.redisKeyPrefix}idempotency:*`)) {
      for (const key of keys) await subject.redis.del(key);
    }

    const strangers = await create(strangerToken, team, requestId);
    expect(strangers.status).toBe(400);
    expect(strangers.body).toMatchObject({
      requestId,
      success: false,
      errorCode: 'COMMAND_VALIDATION_ERROR',
      errorMessage: 'Team already exists',
    });

    const retry = await create(ownerToken, team, requestId);
    expect(retry.status).toBe(200);
    expect(retry.body).toMatchObject({ requestId, success: true, eventCount: 1 });
    const events = await streamOf(team);
    expect(events).toHaveLength(1);
    expect(events[0]?.data).toMatchObject({ ownerUserId: expect.any(String) });
  });

  it("When a client sends X-Request-Id, then the event's correlation id is a fresh UUID of the service's own, and the client's id is kept as traceId only", async () => {
    const first = randomUUID();
    const second = randomUUID();
    const traceId = 'client-chosen-trace-1';
    const body = (aggregateRootId: string) => ({
      commandType: 'CreateFantasyTeam',
      command: { aggregateRootId, name: 'Traced' },
    });
    expect((await send(ownerToken, body(first), traceId)).status).toBe(200);
    expect((await send(strangerToken, body(second), traceId)).status).toBe(200);

    const [a] = await streamOf(first);
    const [b] = await streamOf(second);
    expect(a?.metadata.correlationId).toMatch(UUID);
    expect(b?.metadata.correlationId).toMatch(UUID);
    expect(a?.metadata.correlationId).not.toBe(b?.metadata.correlationId);
    expect(a?.metadata.traceId).toBe(traceId);
    expect(b?.metadata.traceId).toBe(traceId);
  });
});
