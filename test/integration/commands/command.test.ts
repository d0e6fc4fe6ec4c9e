import { randomUUID } from 'node:crypto';

import request from 'supertest';

import { createTestApp, type TestApp } from '../../helpers/app-fixture';
import { passwordGrantToken } from '../../helpers/tokens';

const PASSWORD = 'team-owner-password';

describe('POST /api/command', () => {
  let subject: TestApp;
  let ownerToken: string;
  let strangerToken: string;
  let adminToken: string;

  const tokenFor = (email: string) => passwordGrantToken(subject.app, email, PASSWORD);

  beforeAll(async () => {
    subject = await createTestApp({ LOCK_WAIT_MS: '150' });
    await subject.createUser({ email: 'owner@example.com', password: PASSWORD });
    await subject.createUser({ email: 'stranger@example.com', password: PASSWORD });
    await subject.createUser({ email: 'admin@example.com', password: PASSWORD, roles: ['Admin'] });
    await subject.createUser({
      email: 'service@example.com',
      password: PASSWORD,
      roles: ['ServiceAccount'],
      userType: 'ServiceAccount',
    });
    ownerToken = await tokenFor('owner@example.com');
    strangerToken = await tokenFor('stranger@example.com');
    adminToken = await tokenFor('admin@example.com');
  });
  afterAll(() => subject.close());

  const send = (body: object, token = ownerToken) =>
    request(subject.app).post('/api/command').set('Authorization', `Bearer ${token}`).send(body);

  const create = async (token = ownerToken) => {
    const id = randomUUID();
    const res = await send(
      { commandType: 'CreateFantasyTeam', command: { aggregateRootId: id, name: 'Team Rocket' } },
      token,
    );
    expect(res.status).toBe(200);
    return id;
  };
  const link = (id: string, ext = 1234567, user = 7654321, token = ownerToken) =>
    send(
      {
        commandType: 'LinkFantasyTeam',
        command: { aggregateRootId: id, fantasyTeamExternalId: ext, fantasyUserId: user },
      },
      token,
    );
  const unlink = (id: string, token = ownerToken, extra: object = {}) =>
    send(
      {
        commandType: 'UnlinkFantasyTeam',
        command: { aggregateRootId: id, unlinkReason: 'moving on' },
        ...extra,
      },
      token,
    );
  const archive = (id: string) =>
    send({ commandType: 'ArchiveFantasyTeam', command: { aggregateRootId: id } });
  const streamOf = (id: string) => subject.services.store.readStream('fantasy-team', id);

  const expectRejected = (
    res: request.Response,
    status: number,
    errorCode: string,
    errorMessage: string,
    commandType: string,
  ) => {
    expect(res.status).toBe(status);
    expect(res.body).toEqual({
      requestId: null,
      success: false,
      eventCount: 0,
      errorMessage,
      errorCode,
      commandType,
    });
  };

  describe('Spec table 3.2', () => {
    it('When an unlinked team is linked with both ids > 0, then 200, eventCount 1, and FantasyTeamLinkedEvent holds the ids and a UTC time', async () => {
      const id = await create();
      const res = await link(id);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({
        requestId: null,
        success: true,
        eventCount: 1,
        commandType: 'LinkFantasyTeam',
        version: 2,
      });
      const events = await streamOf(id);
      expect(events.map((e) => e.eventType)).toEqual(['FantasyTeamCreatedEvent', 'FantasyTeamLinkedEvent']);
      expect(events[1]?.data).toEqual({
        fantasyTeamExternalId: 1234567,
        fantasyUserId: 7654321,
        linkedAt: expect.stringMatching(/Z$/),
      });
    });

    it('When a linked team is unlinked, then 200 and FantasyTeamUnlinkedEvent carries the reason; the ids reset to 0', async () => {
      const id = await create();
      await link(id);
      const res = await unlink(id);
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ success: true, eventCount: 1, commandType: 'UnlinkFantasyTeam' });
      const events = await streamOf(id);
      expect(events[2]?.data).toEqual({ unlinkedAt: expect.stringMatching(/Z$/), unlinkReason: 'moving on' });
      const record = await subject.services.store.loadRecord<{
        fantasyTeamExternalId: number;
        fantasyUserId: number;
      }>('fantasy-team', id, {
        fantasyTeamExternalId: -1,
        fantasyUserId: -1,
      });
      expect(record.state).toMatchObject({ fantasyTeamExternalId: 0, fantasyUserId: 0 });
    });

    it('When the team does not exist, then link and unlink are 400 COMMAND_VALIDATION_ERROR with the spec messages', async () => {
      const id = randomUUID();
      expectRejected(
        await link(id),
        400,
        'COMMAND_VALIDATION_ERROR',
        'Cannot link non-existent team',
        'LinkFantasyTeam',
      );
      expectRejected(
        await unlink(id),
        400,
        'COMMAND_VALIDATION_ERROR',
        'Cannot unlink non-existent team',
        'UnlinkFantasyTeam',
      );
      expect(await streamOf(id)).toHaveLength(0);
    });

    it('When the team is archived, then link and unlink are 400 with the spec messages and no event', async () => {
      const id = await create();
      expect((await archive(id)).status).toBe(200);
      expectRejected(
        await link(id),
        400,
        'COMMAND_VALIDATION_ERROR',
        'Cannot link archived team',
        'LinkFantasyTeam',
      );
      expectRejected(
        await unlink(id),
        400,
        'COMMAND_VALIDATION_ERROR',
        'Cannot unlink archived team',
        'UnlinkFantasyTeam',
      );
      expectRejected(
        await send({ commandType: 'SetFantasyTeamRoster', command: { aggregateRootId: id, players: [] } }),
        400,
        'COMMAND_VALIDATION_ERROR',
        'Cannot set the roster of archived team',
        'SetFantasyTeamRoster',
      );
      expect(await streamOf(id)).toHaveLength(2);
    });

    it('When a linked team is linked again, then 400 with the already-linked message', async () => {
      const id = await create();
      await link(id);
      expectRejected(
        await link(id, 99, 98),
        400,
        'COMMAND_VALIDATION_ERROR',
        'Team is already linked to a fantasy identity. Unlink first before linking a new one',
        'LinkFantasyTeam',
      );
    });

    it('When an unlinked team is unlinked, then 400 with the not-linked message', async () => {
      const id = await create();
      expectRejected(
        await unlink(id),
        400,
        'COMMAND_VALIDATION_ERROR',
        'Team has no linked fantasy identity',
        'UnlinkFantasyTeam',
      );
    });

    it.each([
      [0, 5, 'FantasyTeamExternalId must be positive'],
      [-3, 5, 'FantasyTeamExternalId must be positive'],
      [5, 0, 'FantasyUserId must be positive'],
      [5, -1, 'FantasyUserId must be positive'],
    ])('When link ids are (%d, %d), then 400 "%s"', async (ext, user, message) => {
      const id = await create();
      expectRejected(await link(id, ext, user), 400, 'COMMAND_VALIDATION_ERROR', message, 'LinkFantasyTeam');
      expect(await streamOf(id)).toHaveLength(1);
    });
  });

  describe('Envelope and fields', () => {
    it('When requestId is given, then it is echoed in lower case; when it is not a GUID, the spec message', async () => {
      const id = await create();
      const requestId = randomUUID().toUpperCase();
      const ok = await link(id, 1, 2, ownerToken).then(() =>
        send({ commandType: 'UnlinkFantasyTeam', command: { aggregateRootId: id }, requestId }),
      );
      expect(ok.body).toMatchObject({ requestId: requestId.toLowerCase(), success: true });

      const bad = await send({
        commandType: 'UnlinkFantasyTeam',
        command: { aggregateRootId: id },
        requestId: 'not-a-guid',
      });
      expectRejected(
        bad,
        400,
        'COMMAND_VALIDATION_ERROR',
        'The JSON value is not in a supported Guid format.',
        'UnlinkFantasyTeam',
      );
    });

    it.each([
      [{ fantasyTeamExternalId: 1, fantasyUserId: 2 }, 'AggregateRootId is required'],
      [
        { aggregateRootId: 'team-1', fantasyTeamExternalId: 1, fantasyUserId: 2 },
        'AggregateRootId must be a GUID',
      ],
      [
        { aggregateRootId: randomUUID(), fantasyTeamExternalId: '12', fantasyUserId: 2 },
        'FantasyTeamExternalId must be a number',
      ],
      [
        { aggregateRootId: randomUUID(), fantasyTeamExternalId: 1.5, fantasyUserId: 2 },
        'FantasyTeamExternalId must be an integer',
      ],
      [
        { aggregateRootId: randomUUID(), fantasyTeamExternalId: 2 ** 53 + 2, fantasyUserId: 2 },
        'FantasyTeamExternalId is beyond the supported range',
      ],
      [{ aggregateRootId: randomUUID(), fantasyTeamExternalId: 1 }, 'FantasyUserId is required'],
    ])('When the command is %j, then 400 naming the field: %s', async (command, message) => {
      const res = await send({ commandType: 'LinkFantasyTeam', command });
      expectRejected(res, 400, 'COMMAND_VALIDATION_ERROR', message, 'LinkFantasyTeam');
    });

    it('When commandType is unknown, then 400 UNKNOWN_COMMAND_TYPE', async () => {
      const res = await send({ commandType: 'DeleteEverything', command: {} });
      expectRejected(
        res,
        400,
        'UNKNOWN_COMMAND_TYPE',
        'Unknown command type: DeleteEverything',
        'DeleteEverything',
      );
    });

    it('When commandType or command is missing, then 400 naming it', async () => {
      expectRejected(
        await send({ command: {} }),
        400,
        'COMMAND_VALIDATION_ERROR',
        'CommandType is required',
        null as unknown as string,
      );
      expectRejected(
        await send({ commandType: 'LinkFantasyTeam' }),
        400,
        'COMMAND_VALIDATION_ERROR',
        'Command is required',
        'LinkFantasyTeam',
      );
    });

    it('When no token or a Basic header is sent, then the 401 problem', async () => {
      const none = await request(subject.app)
        .post('/api/command')
        .send({ commandType: 'LinkFantasyTeam', command: {} });
      expect(none.status).toBe(401);
      expect(none.body).toMatchObject({ title: 'Unauthorized', status: 401 });
      const basic = await request(subject.app)
        .post('/api/command')
        .set('Authorization', `Basic ${Buffer.from(`owner@example.com:${PASSWORD}`).toString('base64')}`)
        .send({ commandType: 'LinkFantasyTeam', command: {} });
      expect(basic.status).toBe(401);
    });
  });

  describe('Team lifecycle beyond the spec', () => {
    it('When a team id is created twice, then "Team already exists"', async () => {
      const id = await create();
      const res = await send({
        commandType: 'CreateFantasyTeam',
        command: { aggregateRootId: id, name: 'Again' },
      });
      expectRejected(res, 400, 'COMMAND_VALIDATION_ERROR', 'Team already exists', 'CreateFantasyTeam');
    });

    it('When a roster breaks a rule, then 400 with its message; a valid one is set', async () => {
      const id = await create();
      const captain = { participantId: randomUUID(), selectionStatus: 0 };
      const twoCaptains = [captain, { participantId: randomUUID(), selectionStatus: 0 }];
      expectRejected(
        await send({
          commandType: 'SetFantasyTeamRoster',
          command: { aggregateRootId: id, players: twoCaptains },
        }),
        400,
        'COMMAND_VALIDATION_ERROR',
        'A roster has at most one Captain',
        'SetFantasyTeamRoster',
      );
      const tooMany = Array.from({ length: 31 }, () => ({ participantId: randomUUID(), selectionStatus: 2 }));
      expect(
        (
          await send({
            commandType: 'SetFantasyTeamRoster',
            command: { aggregateRootId: id, players: tooMany },
          })
        ).body.errorMessage,
      ).toBe('A roster holds at most 30 players');
      const ok = await send({
        commandType: 'SetFantasyTeamRoster',
        command: { aggregateRootId: id, players: [captain] },
      });
      expect(ok.status).toBe(200);
    });

    it("When someone other than the owner acts on a team, then the answer is the same as for a team that does not exist (400, the spec's message) and no event; an Admin may act", async () => {
      const id = await create();
      const missing = randomUUID();
      for (const [team, other] of [
        [id, missing],
        [missing, id],
      ] as const) {
        const onTeam = await link(team, 1, 2, strangerToken);
        const onNone = await link(other, 1, 2, strangerToken);
        expect({ status: onTeam.status, body: onTeam.body }).toEqual({
          status: onNone.status,
          body: onNone.body,
        });
      }
      expectRejected(
        await link(id, 1, 2, strangerToken),
        400,
        'COMMAND_VALIDATION_ERROR',
        'Cannot link non-existent team',
        'LinkFantasyTeam',
      );
      expectRejected(
        await unlink(id, strangerToken),
        400,
        'COMMAND_VALIDATION_ERROR',
        'Cannot unlink non-existent team',
        'UnlinkFantasyTeam',
      );
      expect(await streamOf(id)).toHaveLength(1);
      expect((await link(id, 1, 2, adminToken)).status).toBe(200);
    });

    it('When the caller lacks the Member role, then 403 COMMAND_FORBIDDEN', async () => {
      const serviceToken = await tokenFor('service@example.com');
      const res = await send(
        { commandType: 'CreateFantasyTeam', command: { aggregateRootId: randomUUID(), name: 'x' } },
        serviceToken,
      );
      expect(res.status).toBe(403);
      expect(res.body.errorCode).toBe('COMMAND_FORBIDDEN');
    });
  });

  describe('Concurrency and idempotency', () => {
    it('When expectedVersion differs from the team version, then 409 CONCURRENCY_CONFLICT naming the current version; a matching one succeeds', async () => {
      const id = await create();
      const stale = await send({
        commandType: 'LinkFantasyTeam',
        command: { aggregateRootId: id, fantasyTeamExternalId: 1, fantasyUserId: 2 },
        expectedVersion: 3,
      });
      expectRejected(
        stale,
        409,
        'CONCURRENCY_CONFLICT',
        'Expected version 3, but the team is at version 1',
        'LinkFantasyTeam',
      );
      const current = await send({
        commandType: 'LinkFantasyTeam',
        command: { aggregateRootId: id, fantasyTeamExternalId: 1, fantasyUserId: 2 },
        expectedVersion: 1,
      });
      expect(current.status).toBe(200);
    });

    it('When a requestId is repeated for the same command, then the first answer is returned and no event is raised', async () => {
      const id = await create();
      const requestId = randomUUID();
      const body = {
        commandType: 'LinkFantasyTeam',
        command: { aggregateRootId: id, fantasyTeamExternalId: 5, fantasyUserId: 6 },
        requestId,
      };
      const first = await send(body);
      const second = await send(body);
      expect(first.status).toBe(200);
      expect(second.status).toBe(200);
      expect(second.body).toEqual(first.body);
      expect(await streamOf(id)).toHaveLength(2);
    });

    it('When a requestId is reused for a different command, then 409 DUPLICATE_REQUEST_ID', async () => {
      const id = await create();
      const requestId = randomUUID();
      await send({
        commandType: 'LinkFantasyTeam',
        command: { aggregateRootId: id, fantasyTeamExternalId: 5, fantasyUserId: 6 },
        requestId,
      });
      const res = await unlink(id, ownerToken, { requestId });
      expect(res.status).toBe(409);
      expect(res.body).toMatchObject({
        success: false,
        eventCount: 0,
        errorCode: 'DUPLICATE_REQUEST_ID',
        requestId,
      });
      expect(await streamOf(id)).toHaveLength(2);
    });

    it('When the team lock is held past the wait bound, then 503 AGGREGATE_BUSY with Retry-After and nothing written', async () => {
      const id = await create();
      const lock = subject.services.keys.aggregateLock('fantasy-team', id);
      await subject.redis.set(lock, 'someone-else', 'PX', 5_000);
      const res = await link(id);
      expect(res.status).toBe(503);
      expect(res.headers['retry-after']).toBe('1');
      expect(res.body).toMatchObject({ success: false, eventCount: 0, errorCode: 'AGGREGATE_BUSY' });
      await subject.redis.del(lock);
      expect(await streamOf(id)).toHaveLength(1);
    });
  });
});
