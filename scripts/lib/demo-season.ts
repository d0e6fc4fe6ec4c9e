import { DEMO_MEMBER_EMAIL, DEMO_SERVICE_ACCOUNT_EMAIL } from '../../ingress/auth/sandbox-admin';
import { EXAMPLE_IDS } from '../../ingress/openapi/spec-examples';
import { SELECTION_STATUS } from '../../shared/fantasy-team/fantasy-team.commands';

/**
 * The sample season `npm run seed:demo` loads into a sandbox (ADR 0017). Its ids are the OpenAPI
 * examples' (EXAMPLE_IDS), so every request example of Swagger UI runs as it is against it: the
 * team the link example links, the account GetUser looks up. Not the import job GetImportJobResult
 * reads: a deployment's job ids follow its own user ids (ADR 0035).
 */
export const DEMO_SEASON = '2026';

export { DEMO_MEMBER_EMAIL, DEMO_SERVICE_ACCOUNT_EMAIL };
/** The team the Member owns: the one the examples read, link and unlink. */
export const DEMO_TEAM_ID = EXAMPLE_IDS.team;
export const DEMO_TEAM_NAME = 'Sandbox Strikers';
/** A subscription nobody receives: `.invalid` never resolves (RFC 2606), so deliveries fail, safely. */
export const DEMO_WEBHOOK_ID = EXAMPLE_IDS.webhookSubscription;
export const DEMO_WEBHOOK_URL = 'https://webhooks.invalid/fantasy-team';

/** Fixed, so a second run asks for the same import job, and the job's id is the examples'. */
export const DEMO_PLAYERS_REQUEST_ID = EXAMPLE_IDS.seedRequest;

interface DemoPlayer {
  readonly feedId: number;
  readonly first: string;
  readonly last: string;
  readonly fantasyId: number;
  readonly platformId: string;
  readonly rating: number | null;
  readonly price: number;
  readonly positions: readonly number[];
  readonly selectionStatus: number;
}

const PLAYERS: readonly DemoPlayer[] = [
  {
    feedId: 10234,
    first: 'Jordan',
    last: 'Smith',
    fantasyId: 7781,
    platformId: 'd2a5c3e1-7b4f-4a6e-9c8d-0e1f2a3b4c5d',
    rating: 8.4,
    price: 550000,
    positions: [2],
    selectionStatus: SELECTION_STATUS.Captain,
  },
  {
    feedId: 10871,
    first: 'Alex',
    last: 'Brown',
    fantasyId: 7802,
    platformId: '5b0e8f2a-3c4d-4e6f-8a9b-1c2d3e4f5a6b',
    rating: 6.1,
    price: 420000,
    positions: [3],
    selectionStatus: SELECTION_STATUS.ViceCaptain,
  },
  {
    feedId: 11012,
    first: 'Sam',
    last: 'Taylor',
    fantasyId: 7815,
    platformId: '0c1d2e3f-4a5b-4c6d-9e8f-7a6b5c4d3e2f',
    rating: 7.3,
    price: 480000,
    positions: [1],
    selectionStatus: SELECTION_STATUS.Selected,
  },
  {
    feedId: 11456,
    first: 'Riley',
    last: 'Jones',
    fantasyId: 7840,
    platformId: '8e7d6c5b-4a39-4281-8f0e-d1c2b3a49586',
    rating: 5.2,
    price: 310000,
    positions: [4],
    selectionStatus: SELECTION_STATUS.Selected,
  },
  {
    feedId: 12033,
    first: 'Casey',
    last: 'Lee',
    fantasyId: 7866,
    platformId: '2f3e4d5c-6b7a-4899-a0b1-c2d3e4f5a6b7',
    rating: null,
    price: 250000,
    positions: [],
    selectionStatus: SELECTION_STATUS.Reserve,
  },
  {
    feedId: 12570,
    first: 'Morgan',
    last: 'Diaz',
    fantasyId: 7891,
    platformId: '9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d',
    rating: 4.8,
    price: 205000,
    positions: [2, 3],
    selectionStatus: SELECTION_STATUS.Bench,
  },
];

/** `PlayerSeeding`'s importData: each player's four identities, this season's stats and price. */
export const DEMO_PLAYER_SEEDING = {
  season: DEMO_SEASON,
  round: 3,
  finalRound: 27,
  players: PLAYERS.map((player, index) => ({
    feedId: player.feedId,
    feedFirstName: player.first,
    feedLastName: player.last,
    feedFullName: `${player.first} ${player.last}`,
    feedShortName: `${player.first[0]}. ${player.last}`,
    leaguePlayerId: `LP-${2291 + index}`,
    leagueFirstName: player.first,
    leagueLastName: player.last,
    fantasyId: player.fantasyId,
    platformId: player.platformId,
    platformFullName: `${player.first} ${player.last}`,
    platformSlug: `${player.first}-${player.last}`.toLowerCase(),
    stats: {
      rating: player.rating,
      price: player.price,
      fantasyPositions: player.positions,
      breakdown:
        player.rating === null
          ? null
          : { '3': { projectedPoints: Math.round(player.rating * 70) / 10, priceDelta: 8000 } },
    },
  })),
};

/** `SetFantasyTeamRoster`'s players: one Captain, one ViceCaptain, the rest in the squad. */
export const DEMO_ROSTER = PLAYERS.map((player) => ({
  participantId: player.platformId,
  selectionStatus: player.selectionStatus,
}));

/** The two accounts of the season, as `UserSeeding` rows (their passwords are made per run). */
export const DEMO_ACCOUNTS = [
  {
    email: DEMO_MEMBER_EMAIL,
    userName: 'demo-member',
    userType: 'Human',
    roles: ['Member'],
    firstName: 'Demo',
    lastName: 'Member',
    emailVerified: true,
  },
  {
    email: DEMO_SERVICE_ACCOUNT_EMAIL,
    userName: 'rating-service',
    userType: 'ServiceAccount',
    roles: ['ServiceAccount'],
  },
] as const;
