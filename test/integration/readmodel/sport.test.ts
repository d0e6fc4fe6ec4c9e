import { randomUUID } from 'node:crypto';

import request from 'supertest';

import { ALL_PROJECTIONS } from '../../../workers/projector/all-projections';
import { Projector } from '../../../workers/projector/projector';
import { rebuildProjection } from '../../../workers/projector/rebuild';
import { createTestApp, type TestApp } from '../../helpers/app-fixture';
import { eventually } from '../../helpers/processes';
import { caughtUp } from '../../helpers/projector-fixtures';
import { playerPlatformId, seedPlayer } from '../../helpers/seed-players';
import { passwordGrantToken } from '../../helpers/tokens';

const PASSWORD = 'sport-test-password';
const ADMIN = 'sport-admin@example.com';
const MACHINE = 'sport-machine@example.com';
const OWNER = 'sport-owner@example.com';
const STRANGER = 'sport-stranger@example.com';
const basic = (email: string) => `Basic ${Buffer.from(`${email}:${PASSWORD}`).toString('base64')}`;

describe('sport data: PlayerSeeding, GetMappedPlayers, GetTeamRatingInputByTeamId', () => {
  let subject: TestApp;
  let projector: Projector;
  let ownerToken: string;
  let strangerToken: string;
  let adminToken: string;
  let machineToken: string;

  const token = (email: string) => passwordGrantToken(subject.app, email, PASSWORD);
  const seedPlayers = (importData: object, email = ADMIN) =>
    request(subject.app)
      .post('/api/import')
      .set('Authorization', basic(email))
      .send({ requestId: randomUUID(), importerType: 'PlayerSeeding', priority: 'High', importData });
  const settled = () =>
    eventually(() => caughtUp(subject.redis, subject.services.keys, ALL_PROJECTIONS), 10_000, 20);
  const mappedPlayers = (query: object = {}, envelope: object = {}, auth = basic(MACHINE)) =>
    request(subject.app)
      .post('/api/readmodel')
      .set('Authorization', auth)
      .send({ query: { queryType: 'GetMappedPlayers', ...query }, ...envelope });
  const command = (commandType: string, fields: object, bearer = ownerToken) =>
    request(subject.app)
      .post('/api/command')
      .set('Authorization', `Bearer ${bearer}`)
      .send({ commandType, command: fields });
  const ratingInput = (query: object, bearer = ownerToken, dataType: unknown = 'TeamRatingInput') =>
    request(subject.app)
      .post('/api/readmodel')
      .set('Authorization', `Bearer ${bearer}`)
      .send({ query: { queryType: 'GetTeamRatingInputByTeamId', ...query }, dataType });

  beforeAll(async () => {
    subject = await createTestApp();
    await subject.createUser({ email: ADMIN, password: PASSWORD, roles: ['Admin'] });
    await subject.createUser({
      email: MACHINE,
      password: PASSWORD,
      userType: 'ServiceAccount',
      roles: ['ServiceAccount'],
    });
    await subject.createUser({ email: OWNER, password: PASSWORD, roles: ['Member'] });
    await subject.createUser({ email: STRANGER, password: PASSWORD, roles: ['Member'] });
    projector = new Projector(subject.redis, subject.services.keys, ALL_PROJECTIONS, subject.logger, {
      batchSize: 100,
      idleMs: 5,
      leaseMs: 1000,
    });
    projector.start();
    ownerToken = await token(OWNER);
    strangerToken = await token(STRANGER);
    adminToken = await token(ADMIN);
    machineToken = await token(MACHINE);
    // Players 1-6 in 2026 at round 5 of 30; players 1-2 also in 2025 (no rounds set there).
    const seeded = await seedPlayers({
      season: '2026',
      round: 5,
      finalRound: 30,
      players: [6, 3, 1, 5, 2, 4].map((n) => seedPlayer(n)),
    });
    expect(seeded.body).toMatchObject({ status: 'Completed', success: true });
    await seedPlayers({ season: '2025', players: [seedPlayer(1), seedPlayer(2)] });
    await settled();
  });
  afterAll(async () => {
    await projector.stop();
    await subject.close();
  });

  describe('PlayerSeeding', () => {
    it('seeds players: the season, two identifier claims and one player per row, with their events', async () => {
      const res = await seedPlayers({ players: [seedPlayer(40), seedPlayer(41)] });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({
        status: 'Completed',
        success: true,
        processedSynchronously: true,
        message: 'Import completed successfully',
        // 1 season + 2 x (2 claims + 1 player); events: round set + 2 x (2 claims + registered + stats)
        commandsExecuted: 7,
        eventsGenerated: 9,
        aggregatesProcessed: 7,
      });
    });

    it('raises no event when the same data is imported again', async () => {
      const res = await seedPlayers({ players: [seedPlayer(40), seedPlayer(41)] });
      expect(res.body).toMatchObject({ status: 'Completed', success: true, eventsGenerated: 0 });
    });

    it('refuses a player whose feed id or fantasy id another player holds, and seeds the rest', async () => {
      const res = await seedPlayers({
        players: [
          seedPlayer(50),
          seedPlayer(51, { feedId: 101 }), // player 1's feed id
          seedPlayer(52, { fantasyId: 9002 }), // player 2's fantasy id
        ],
      });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({
        status: 'Failed',
        success: false,
        errorCode: 'AGGREGATE_PROCESSING_FAILED',
        message: `Import failed at aggregate ${playerPlatformId(51)}: Feed id 101 is already mapped to player ${playerPlatformId(1)} (1 of 3 player(s) seeded, 2 refused)`,
        rowErrors: [
          {
            index: 1,
            platformId: playerPlatformId(51),
            code: 'FEED_ID_TAKEN',
            message: `Feed id 101 is already mapped to player ${playerPlatformId(1)}`,
          },
          {
            index: 2,
            platformId: playerPlatformId(52),
            code: 'FANTASY_ID_TAKEN',
            message: `Fantasy id 9002 is already mapped to player ${playerPlatformId(2)}`,
          },
        ],
      });
      await settled();
      // Never silently re-pointed: feed id 101 is still player 1's, and the refused rows hold nothing.
      expect((await mappedPlayers({ feedId: 101 })).body.results).toEqual([
        expect.objectContaining({ platformId: playerPlatformId(1) }),
      ]);
      expect((await mappedPlayers({ platformId: playerPlatformId(52) })).body.totalCount).toBe(0);
      const retry = await seedPlayers({ players: [seedPlayer(52)] });
      expect(retry.body).toMatchObject({ status: 'Completed' }); // its own feed id 152 was given back
    });

    it("frees a player's old feed id when its identity changes, for another player to take", async () => {
      await seedPlayers({ players: [seedPlayer(60)] });
      const moved = await seedPlayers({ players: [seedPlayer(60, { feedId: 1060, platformSlug: 'moved' })] });
      // Updated, feed id 1060 claimed, feed id 160 released.
      expect(moved.body).toMatchObject({ status: 'Completed', eventsGenerated: 3 });
      const taken = await seedPlayers({ players: [seedPlayer(61, { feedId: 160 })] });
      expect(taken.body).toMatchObject({ status: 'Completed' });
      await settled();
      expect((await mappedPlayers({ platformId: playerPlatformId(60) })).body.results[0]).toMatchObject({
        feedId: 1060,
        platformSlug: 'moved',
      });
      expect((await mappedPlayers({ feedId: 160 })).body.results).toEqual([
        expect.objectContaining({ platformId: playerPlatformId(61) }),
      ]);
    });

    it('refuses a batch repeating a key in itself before running anything', async () => {
      const res = await seedPlayers({ players: [seedPlayer(70), seedPlayer(71, { fantasyId: 9070 })] });
      expect(res.body).toMatchObject({
        status: 'Failed',
        errorCode: 'IMPORT_VALIDATION_FAILED',
        commandsExecuted: 0,
        rowErrors: [
          { index: 1, code: 'DUPLICATE_IN_BATCH', message: 'fantasyId 9070 is already used by row 0' },
        ],
      });
    });

    it('needs Admin, checked while processing (spec 5 rule 4)', async () => {
      const res = await seedPlayers({ players: [seedPlayer(80)] }, OWNER);
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({
        status: 'Failed',
        success: false,
        errorCode: 'AGGREGATE_PROCESSING_FAILED',
        commandsExecuted: 0,
      });
      expect(res.body.message).toMatch(
        new RegExp(
          `^Import failed at aggregate ${playerPlatformId(80)}: User '${OWNER}' \\(.+\\) lacks required roles to execute SeedPlayerCommand\\. Required roles: \\[Admin\\]\\. User roles: \\[Member\\]\\.$`,
        ),
      );
    });

    it('answers a 400 naming the fields of a malformed row, and imports nothing', async () => {
      const res = await seedPlayers({
        round: 40,
        finalRound: 30,
        players: [seedPlayer(90, { platformId: 'not-a-guid', feedId: 1.5, stats: { price: '12' } })],
      });
      expect(res.status).toBe(400);
      expect(res.body.errors).toMatchObject({
        Round: ['Round must not be after the final round'],
        'Players[0].PlatformId': ['Players[0].PlatformId must be a GUID'],
        'Players[0].FeedId': ['Players[0].FeedId must be an integer'],
        'Players[0].Stats.Price': ['Players[0].Stats.Price must be a number'],
      });
    });
  });

  describe('GetMappedPlayers (spec 4.2)', () => {
    beforeAll(settled);

    it('answers every mapped player in the spec 2.4 shape, ordered by feed id, with totalCount', async () => {
      const res = await mappedPlayers();
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toMatch(/^application\/json/);
      const feedIds = (res.body.results as { feedId: number }[]).map((p) => p.feedId);
      expect(feedIds).toEqual([...feedIds].sort((a, b) => a - b));
      expect(res.body.totalCount).toBe(feedIds.length);
      expect(res.body.results[0]).toEqual({
        feedId: 101,
        feedFirstName: 'First1',
        feedLastName: 'Last1',
        feedFullName: 'First1 Last1',
        feedShortName: 'F. Last1',
        leaguePlayerId: 'L-1',
        leagueFirstName: 'LFirst1',
        leagueLastName: 'LLast1',
        fantasyId: 9001,
        fantasyCompositeId: '9001-2026',
        platformId: playerPlatformId(1),
        platformFullName: 'Platform 1',
        platformSlug: 'player-1',
      });
      expect(Object.keys(res.body)).toEqual(['queryType', 'results', 'totalCount']);
    });

    it('pages with skip and take, totalCount counting every match', async () => {
      const all = (await mappedPlayers()).body as { results: unknown[]; totalCount: number };
      const page = await mappedPlayers({}, { skip: 2, take: 3 });
      expect(page.body).toEqual({
        queryType: 'GetMappedPlayers',
        results: all.results.slice(2, 5),
        totalCount: all.totalCount,
      });
      const past = await mappedPlayers({}, { skip: 10_000 });
      expect(past.body).toEqual({ queryType: 'GetMappedPlayers', results: [], totalCount: all.totalCount });
    });

    it('refuses a take above 1,000 or a negative skip with a 400 naming the field', async () => {
      const res = await mappedPlayers({}, { take: 1001, skip: -1 });
      expect(res.status).toBe(400);
      expect(res.body.errors).toEqual({
        Take: ['Take must be at most 1000'],
        Skip: ['Skip must be at least 0'],
      });
    });

    it('filters by feed id, fantasy id, league player id, platform id and season', async () => {
      const only = async (query: object) =>
        ((await mappedPlayers(query)).body.results as { platformId: string }[]).map((p) => p.platformId);
      expect(await only({ feedId: 103 })).toEqual([playerPlatformId(3)]);
      expect(await only({ fantasyId: 9004 })).toEqual([playerPlatformId(4)]);
      expect(await only({ leaguePlayerId: 'L-5' })).toEqual([playerPlatformId(5)]);
      expect(await only({ platformId: playerPlatformId(6).toUpperCase() })).toEqual([playerPlatformId(6)]);
      expect(await only({ season: '2025' })).toEqual([playerPlatformId(1), playerPlatformId(2)]);
      expect(await only({ season: '2025', feedId: 103 })).toEqual([]);
      expect(await only({ feedId: 999_999 })).toEqual([]);
      const in2025 = await mappedPlayers({ season: '2025', fantasyId: 9001 });
      expect(in2025.body).toEqual({
        queryType: 'GetMappedPlayers',
        results: [expect.objectContaining({ fantasyCompositeId: '9001-2025' })],
        totalCount: 1,
      });
    });

    it('accepts Basic only: a bearer token, even a service account’s, gets 401', async () => {
      const res = await mappedPlayers({}, {}, `Bearer ${machineToken}`);
      expect(res.status).toBe(401);
      expect(res.body).toMatchObject({ title: 'Unauthorized', status: 401 });
    });

    it('needs the ServiceAccount role: an Admin by Basic gets 403', async () => {
      const res = await mappedPlayers({}, {}, basic(ADMIN));
      expect(res.status).toBe(403);
      expect(res.body).toMatchObject({ title: 'Forbidden', status: 403 });
    });

    it('answers 404 while the sport-core module is not enabled', async () => {
      const disabled = await createTestApp({
        REDIS_KEY_PREFIX: subject.config.redisKeyPrefix,
        MODULES: 'none',
      });
      try {
        const res = await request(disabled.app)
          .post('/api/readmodel')
          .set('Authorization', basic(MACHINE))
          .send({ query: { queryType: 'GetMappedPlayers' } });
        expect(res.status).toBe(404);
        expect(res.body).toMatchObject({ title: 'Not Found', status: 404 });
      } finally {
        await disabled.close();
      }
    });
  });

  describe('GetTeamRatingInputByTeamId (spec 4.1)', () => {
    const teamId = randomUUID();
    const unmapped = randomUUID();

    beforeAll(async () => {
      // The rounds of the last 2026 import count: set them again after the importer tests' defaults.
      await seedPlayers({ season: '2026', round: 5, finalRound: 30, players: [seedPlayer(1)] });
      expect((await command('CreateFantasyTeam', { aggregateRootId: teamId, name: 'Rated' })).status).toBe(
        200,
      );
      const roster = await command('SetFantasyTeamRoster', {
        aggregateRootId: teamId,
        players: [
          { participantId: playerPlatformId(1), selectionStatus: 0 },
          { participantId: playerPlatformId(2), selectionStatus: 1 },
          { participantId: playerPlatformId(3), selectionStatus: 2 },
          { participantId: unmapped, selectionStatus: 4 },
        ],
      });
      expect(roster.status).toBe(200);
      await settled();
    });

    it("answers the owner the roster keyed by feed id with each player's stats, and the season's rounds", async () => {
      const res = await ratingInput({ id: teamId }).set('X-Request-Id', 'rating-req-1');
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
      expect(res.body).toEqual({
        queryType: 'GetTeamRatingInputByTeamId',
        results: [
          {
            team: {
              '101': {
                rating: 50.5,
                breakdown: { '3': { projectedPoints: 1, priceDelta: -1 } },
                price: 100_001,
                selectionStatus: 0,
                fantasyPositions: [1],
              },
              '102': {
                rating: 51,
                breakdown: null,
                price: 100_002,
                selectionStatus: 1,
                fantasyPositions: [2],
              },
              '103': {
                rating: 51.5,
                breakdown: { '3': { projectedPoints: 3, priceDelta: -3 } },
                price: 100_003,
                selectionStatus: 2,
                fantasyPositions: [3],
              },
            },
            round: 5,
            finalRound: 30,
          },
        ],
        totalCount: 1,
        requestId: 'rating-req-1',
      });
    });

    it('leaves out players without stats for the season; a season without rounds is at round 1 of 27', async () => {
      const res = await ratingInput({ id: teamId, season: '2025' });
      expect(res.status).toBe(200);
      expect(res.body.results).toEqual([
        {
          team: {
            '101': expect.objectContaining({ selectionStatus: 0 }),
            '102': expect.objectContaining({ selectionStatus: 1 }),
          },
          round: 1,
          finalRound: 27,
        },
      ]);
      const empty = await ratingInput({ id: teamId, season: '1999' });
      expect(empty.body.results).toEqual([{ team: {}, round: 1, finalRound: 27 }]);
    });

    it('answers an Admin too', async () => {
      const res = await ratingInput({ id: teamId }, adminToken);
      expect(res.status).toBe(200);
      expect(Object.keys(res.body.results[0].team)).toEqual(['101', '102', '103']);
    });

    it('answers 404 with empty results to a caller who is not the owner, and for a missing team (rule 2)', async () => {
      for (const res of [
        await ratingInput({ id: teamId }, strangerToken),
        await ratingInput({ id: randomUUID() }),
      ]) {
        expect(res.status).toBe(404);
        expect(res.body).toEqual({ queryType: 'GetTeamRatingInputByTeamId', results: [], totalCount: 0 });
      }
    });

    it('answers a missing id with the validation problem whose errors.Id is ["Id is required"] (rule 6)', async () => {
      const res = await ratingInput({});
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({
        type: 'https://tools.ietf.org/html/rfc7231#section-6.5.1',
        title: 'One or more validation errors occurred.',
        status: 400,
        errors: { Id: ['Id is required'] },
      });
    });

    it('refuses another dataType with a 400 naming dataType', async () => {
      const res = await ratingInput({ id: teamId }, ownerToken, 'Something');
      expect(res.status).toBe(400);
      expect(res.body.errors).toEqual({ DataType: ['DataType must be one of: [TeamRatingInput]'] });
    });

    it('needs a bearer token: Basic gets 401, no credentials a 401 problem', async () => {
      const byBasic = await request(subject.app)
        .post('/api/readmodel')
        .set('Authorization', basic(OWNER))
        .send({
          query: { queryType: 'GetTeamRatingInputByTeamId', id: teamId },
          dataType: 'TeamRatingInput',
        });
      expect(byBasic.status).toBe(401);
      const anonymous = await request(subject.app)
        .post('/api/readmodel')
        .send({
          query: { queryType: 'GetTeamRatingInputByTeamId', id: teamId },
          dataType: 'TeamRatingInput',
        });
      expect(anonymous.status).toBe(401);
      expect(anonymous.body).toMatchObject({ title: 'Unauthorized', status: 401 });
    });
  });

  it('gives byte-identical answers after every projection is rebuilt from the log', async () => {
    await settled();
    const teamId = randomUUID();
    await command('CreateFantasyTeam', { aggregateRootId: teamId, name: 'Rebuilt' });
    await command('SetFantasyTeamRoster', {
      aggregateRootId: teamId,
      players: [1, 2, 3, 4, 5, 6].map((n) => ({
        participantId: playerPlatformId(n),
        selectionStatus: n % 5,
      })),
    });
    await settled();
    const answers = async () =>
      Promise.all([
        mappedPlayers().then((res) => res.text),
        mappedPlayers({ season: '2025' }).then((res) => res.text),
        mappedPlayers({ leaguePlayerId: 'L-3' }).then((res) => res.text),
        ratingInput({ id: teamId })
          .set('X-Request-Id', 'same')
          .then((res) => res.text),
        ratingInput({ id: teamId, season: '2025' })
          .set('X-Request-Id', 'same')
          .then((res) => res.text),
      ]);
    const before = await answers();
    for (const projection of ALL_PROJECTIONS) {
      await rebuildProjection(subject.redis, subject.services.keys, projection);
    }
    await settled();
    expect(await answers()).toEqual(before);
  });
});
