import { playerDecider } from '../../shared/sport/player.decider';
import { playerIdentifierDecider } from '../../shared/sport/player-identifier.decider';
import { seasonDecider } from '../../shared/sport/season.decider';
import type { SeedPlayer } from '../../shared/sport/sport.commands';
import type {
  PlayerRegisteredEvent,
  PlayerSeasonStatsSetEvent,
  PlayerUpdatedEvent,
} from '../../shared/sport/sport.events';
import { SPORT_MESSAGES } from '../../shared/sport/sport.messages';
import {
  playerIdentifierId,
  type PlayerIdentity,
  type PlayerSeasonStats,
  seasonId,
} from '../../shared/sport/sport.model';
import { decisionContext, spec } from '../helpers/decider-spec';

const PLATFORM_ID = 'aaaaaaaa-0000-4000-8000-000000000001';
const OTHER_PLATFORM_ID = 'aaaaaaaa-0000-4000-8000-000000000002';
const NOW = new Date('2026-03-01T10:00:00.000Z');
const AT = NOW.toISOString();
const context = decisionContext({ now: NOW });

const identity = (overrides: Partial<PlayerIdentity> = {}): PlayerIdentity => ({
  feedId: 101,
  feedFirstName: 'Ada',
  feedLastName: 'Lovelace',
  feedFullName: 'Ada Lovelace',
  feedShortName: 'A. Lovelace',
  leaguePlayerId: 'L-101',
  leagueFirstName: 'Ada',
  leagueLastName: 'Lovelace',
  fantasyId: 9001,
  platformFullName: 'Ada Lovelace',
  platformSlug: 'ada-lovelace',
  ...overrides,
});
const stats = (overrides: Partial<PlayerSeasonStats> = {}): PlayerSeasonStats => ({
  rating: 87.5,
  price: 650000,
  fantasyPositions: [2, 3],
  breakdown: {
    '2': { projectedPoints: 55, priceDelta: -1000 },
    '1': { projectedPoints: 61, priceDelta: 2000 },
  },
  ...overrides,
});
const seed = (id = identity(), season = '2026', s = stats()): SeedPlayer => ({
  type: 'SeedPlayer',
  data: { platformId: PLATFORM_ID, identity: id, season, stats: s },
});
const registered = (id = identity()): PlayerRegisteredEvent => ({
  type: 'PlayerRegisteredEvent',
  data: { platformId: PLATFORM_ID, ...id, registeredAt: AT },
});
const statsSet = (season = '2026', s = stats()): PlayerSeasonStatsSetEvent => ({
  type: 'PlayerSeasonStatsSetEvent',
  data: {
    platformId: PLATFORM_ID,
    season,
    rating: s.rating,
    price: s.price,
    fantasyPositions: s.fantasyPositions,
    // Rounds in numeric order, whatever order the import sent them in.
    breakdown: s.breakdown && {
      ...Object.fromEntries(Object.entries(s.breakdown).sort(([a], [b]) => Number(a) - Number(b))),
    },
    setAt: AT,
  },
});

describe('player decider', () => {
  const player = spec(playerDecider);

  it('registers a new player with its identity and the season stats', () => {
    player.given([]).when(seed(), context).then([registered(), statsSet()]);
  });

  it('raises nothing when the same identity and stats are seeded again', () => {
    player.given([registered(), statsSet()]).when(seed(), context).then([]);
  });

  it('treats the same breakdown in another key order as unchanged', () => {
    const reordered = stats({
      breakdown: {
        '1': { projectedPoints: 61, priceDelta: 2000 },
        '2': { projectedPoints: 55, priceDelta: -1000 },
      },
    });
    player
      .given([registered(), statsSet()])
      .when(seed(identity(), '2026', reordered), context)
      .then([]);
  });

  it('records an identity change with the changed fields and the identifiers held before', () => {
    const next = identity({ feedId: 202, platformSlug: 'ada-l' });
    const updated: PlayerUpdatedEvent = {
      type: 'PlayerUpdatedEvent',
      data: {
        platformId: PLATFORM_ID,
        ...next,
        changedFields: ['feedId', 'platformSlug'],
        previousFeedId: 101,
        previousFantasyId: 9001,
        updatedAt: AT,
      },
    };
    player.given([registered(), statsSet()]).when(seed(next), context).then([updated]);
  });

  it('sets stats per season, leaving other seasons alone', () => {
    player
      .given([registered(), statsSet('2025')])
      .when(seed(identity(), '2026'), context)
      .then([statsSet('2026')]);
  });

  it('records changed stats, including a rating becoming null', () => {
    const changed = stats({ rating: null, breakdown: null });
    player
      .given([registered(), statsSet()])
      .when(seed(identity(), '2026', changed), context)
      .then([statsSet('2026', changed)]);
  });
});

describe('player identifier decider', () => {
  const identifier = spec(playerIdentifierDecider);
  const claim = (platformId = PLATFORM_ID) =>
    ({ type: 'ClaimPlayerIdentifier', data: { kind: 'feed', value: 101, platformId } }) as const;
  const release = (platformId = PLATFORM_ID) =>
    ({ type: 'ReleasePlayerIdentifier', data: { kind: 'feed', value: 101, platformId } }) as const;
  const claimed = (platformId = PLATFORM_ID) =>
    ({
      type: 'PlayerIdentifierClaimedEvent',
      data: { kind: 'feed', value: 101, platformId, claimedAt: AT },
    }) as const;
  const released = (platformId = PLATFORM_ID) =>
    ({
      type: 'PlayerIdentifierReleasedEvent',
      data: { kind: 'feed', value: 101, platformId, releasedAt: AT },
    }) as const;

  it('claims a free identifier', () => {
    identifier.given([]).when(claim(), context).then([claimed()]);
  });

  it('raises nothing when the holder claims it again', () => {
    identifier.given([claimed()]).when(claim(), context).then([]);
  });

  it('refuses a claim by another player, naming the holder', () => {
    identifier
      .given([claimed()])
      .when(claim(OTHER_PLATFORM_ID), context)
      .thenRejectedWith(SPORT_MESSAGES.identifierTaken('feed', 101, PLATFORM_ID));
    expect(SPORT_MESSAGES.identifierTaken('feed', 101, PLATFORM_ID)).toBe(
      `Feed id 101 is already mapped to player ${PLATFORM_ID}`,
    );
  });

  it('lets another player claim it once released', () => {
    identifier
      .given([claimed(), released()])
      .when(claim(OTHER_PLATFORM_ID), context)
      .then([claimed(OTHER_PLATFORM_ID)]);
  });

  it('releases only for its holder; another player releasing it changes nothing', () => {
    identifier.given([claimed()]).when(release(), context).then([released()]);
    identifier.given([claimed()]).when(release(OTHER_PLATFORM_ID), context).then([]);
  });
});

describe('season decider', () => {
  const season = spec(seasonDecider);
  const set = (round: number, finalRound: number) =>
    ({ type: 'SetSeasonRound', data: { season: '2026', round, finalRound } }) as const;
  const roundSet = (round: number, finalRound: number) =>
    ({ type: 'SeasonRoundSetEvent', data: { season: '2026', round, finalRound, setAt: AT } }) as const;

  it('sets the round, and raises nothing when it is unchanged', () => {
    season
      .given([])
      .when(set(3, 27), context)
      .then([roundSet(3, 27)]);
    season
      .given([roundSet(3, 27)])
      .when(set(3, 27), context)
      .then([]);
    season
      .given([roundSet(3, 27)])
      .when(set(4, 27), context)
      .then([roundSet(4, 27)]);
  });

  it('refuses a round after the final round', () => {
    season.given([]).when(set(28, 27), context).thenRejectedWith('Round 28 is after the final round 27');
  });
});

describe('sport ids', () => {
  it('derives one stable id per identifier and per season', () => {
    expect(playerIdentifierId('feed', 7)).toBe(playerIdentifierId('feed', 7));
    expect(playerIdentifierId('feed', 7)).not.toBe(playerIdentifierId('fantasy', 7));
    expect(seasonId('2026')).not.toBe(seasonId('2025'));
  });
});
