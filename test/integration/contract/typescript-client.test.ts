import { randomUUID } from 'node:crypto';

import { FantasyApiError, FantasyTeamClient, type QueryType } from '../../../clients/typescript/src';
import { QUERY_SCHEMES } from '../../../clients/typescript/src/generated/query-schemes';
import type { OpenApiDocument } from '../../../ingress/openapi/openapi-document';
import { testRedisEnv, uniquePrefix } from '../../helpers/app-fixture';
import { responseContract } from '../../helpers/openapi-contract';
import {
  eventually,
  killAll,
  type ServiceProcess,
  startIngressProcess,
  startServiceProcess,
} from '../../helpers/processes';

/**
 * The steps of docs/integrators.md's walk-through ("Typed client"), run with the client's sources against a
 * real ingress and a real worker process over real HTTP (test/smoke/typed-client-package.test.ts runs the
 * guide's own block from the packed client): a token, an import, a team created and
 * linked, its rating input, the mapped players. Every answer the client receives is also held to
 * the OpenAPI document, as supertest's answers are in the other integration tests; and the client's
 * query methods and schemes are held to the document the ingress serves, so they cannot drift.
 */

// Non-ASCII passwords: Basic must travel as UTF-8 (the Admin imports by Basic, the service account
// reads the mapped players by Basic, the only scheme that query accepts).
const ADMIN = {
  email: `client-admin-${randomUUID().slice(0, 8)}@example.com`,
  password: 'Grüße aus Köln, Ådmin 管理者',
};
const MEMBER = {
  email: `client-member-${randomUUID().slice(0, 8)}@example.com`,
  password: 'naïve member pässword',
};
const SERVICE = {
  email: `client-service-${randomUUID().slice(0, 8)}@example.com`,
  password: 'Dienstkonto-Schlüssel-ñ-日本',
};
const TEAM_ID = randomUUID();
const PLAYERS = [
  {
    feedId: 71_001,
    fantasyId: 81_001,
    platformId: randomUUID(),
    leaguePlayerId: 'LP-71001',
    rating: 8.4,
    price: 550_000,
  },
  {
    feedId: 71_002,
    fantasyId: 81_002,
    platformId: randomUUID(),
    leaguePlayerId: 'LP-71002',
    rating: 6.1,
    price: 420_000,
  },
];

let worker: ServiceProcess | undefined;
let ingress: ServiceProcess | undefined;
let baseUrl: string;
const violations: string[] = [];
let conforming = 0;

/** A fetch that holds every answer the client receives to the OpenAPI document. */
const checkedFetch: typeof fetch = async (input, init) => {
  const request = new Request(input, init);
  const requestBody: unknown = request.body ? JSON.parse(await request.clone().text()) : undefined;
  const response = await fetch(request);
  const text = await response.clone().text();
  const contentType = response.headers.get('content-type') ?? undefined;
  const verdict = responseContract().check({
    method: request.method,
    path: new URL(request.url).pathname,
    requestBody,
    status: response.status,
    contentType,
    body: text && contentType?.includes('json') ? (JSON.parse(text) as unknown) : text,
    text,
  });
  if (verdict.kind === 'violates') violations.push(...verdict.problems);
  if (verdict.kind === 'conforms') conforming += 1;
  return response;
};

function client(options: { credentials?: { email: string; password: string }; token?: string } = {}) {
  return new FantasyTeamClient({ baseUrl, fetch: checkedFetch, ...options });
}

beforeAll(async () => {
  const env = {
    ...testRedisEnv(),
    REDIS_KEY_PREFIX: uniquePrefix(),
    NODE_ENV: 'test',
    JWT_SECRET: 'typed-client-walk-through-secret-of-32-characters',
    ADMIN_EMAIL: ADMIN.email,
    ADMIN_PASSWORD: ADMIN.password,
  };
  // Generous start-up bounds: both processes compile through tsx, slow on a loaded machine.
  worker = startServiceProcess('workers/main.ts', env);
  const started = await startIngressProcess(env, 120_000);
  ingress = started.process;
  baseUrl = started.baseUrl;
  await worker.waitForOutput('worker ready', 120_000);
}, 250_000);

afterAll(async () => {
  await killAll(ingress, worker);
});

afterEach(() => {
  expect(violations).toEqual([]);
});

describe('The typed client (clients/typescript) against a real service', () => {
  it("When the integrators guide's walk-through runs through the client, then every step answers its own typed shape", async () => {
    // 1. The Admin (bootstrap account, Basic in UTF-8) imports the accounts and the players.
    const admin = client({ credentials: ADMIN });
    const accounts = await admin.import({
      requestId: randomUUID(),
      importerType: 'UserSeeding',
      priority: 'High',
      importData: {
        users: [
          { email: MEMBER.email, password: MEMBER.password, userType: 'Human', roles: ['Member'] },
          {
            email: SERVICE.email,
            password: SERVICE.password,
            userType: 'ServiceAccount',
            roles: ['ServiceAccount'],
          },
        ],
      },
    });
    const players = await admin.import({
      requestId: randomUUID(),
      importerType: 'PlayerSeeding',
      importData: {
        season: '2026',
        players: PLAYERS.map(({ rating, price, ...ids }) => ({ ...ids, stats: { rating, price } })),
      },
    });
    for (const { importJobId } of [accounts, players]) {
      await eventually(async () => {
        const job = await admin.readModel.getImportJobResult({ importJobId });
        const status = job.results[0]?.status;
        if (status === 'Failed') throw new Error(`import ${importJobId} failed: ${JSON.stringify(job)}`);
        return status === 'Completed';
      }, 30_000);
    }

    // 2. The Member signs in (a token), and creates, links and fills a team (commands: Bearer).
    const member = client({ credentials: MEMBER });
    const token = await member.signIn();
    expect(token.token_type).toBe('Bearer');
    const me = await member.readModel.currentUser();
    expect(me.data[0]?.email).toBe(MEMBER.email);
    expect(me.data[0]?.authenticationType).toBe('Bearer');

    const created = await member.command({
      commandType: 'CreateFantasyTeam',
      command: { aggregateRootId: TEAM_ID, name: 'Köln Kickers' },
    });
    expect(created).toMatchObject({ success: true, commandType: 'CreateFantasyTeam' });
    await member.command({
      commandType: 'LinkFantasyTeam',
      command: { aggregateRootId: TEAM_ID, fantasyTeamExternalId: 4_815_162_342, fantasyUserId: 1087 },
    });
    const roster = await member.command({
      commandType: 'SetFantasyTeamRoster',
      command: {
        aggregateRootId: TEAM_ID,
        players: PLAYERS.map(({ platformId }, i) => ({
          participantId: platformId,
          selectionStatus: i === 0 ? 0 : 2,
        })),
      },
    });
    expect(roster.version).toBe(3);

    // 3. The team's rating input (Bearer only), keyed by feed id: minVersion, the version the roster
    // command answered, makes the read wait for the projection (or answer 503 PROJECTION_BEHIND with
    // Retry-After, which the client sends again).
    const ratingInput = await member.readModel.getTeamRatingInput({
      id: TEAM_ID,
      minVersion: roster.version,
    });
    expect(Object.keys(ratingInput.results[0]?.team ?? {})).toHaveLength(PLAYERS.length);
    expect(ratingInput.results[0]?.team[String(PLAYERS[0]?.feedId)]).toMatchObject({
      rating: PLAYERS[0]?.rating,
      price: PLAYERS[0]?.price,
    });
    const team = await member.readModel.getFantasyTeam({ id: TEAM_ID, minVersion: roster.version });
    expect(team.results[0]).toMatchObject({ name: 'Köln Kickers', fantasyTeamExternalId: 4_815_162_342 });

    // 4. The service account reads the mapped players: Basic only, so the client sends Basic.
    const service = client({ credentials: SERVICE });
    const mapped = await service.readModel.getMappedPlayers({ season: '2026' }, { take: 10 });
    expect(mapped.results.map((player) => player.feedId).sort()).toEqual(
      PLAYERS.map((player) => player.feedId),
    );
    expect(conforming).toBeGreaterThanOrEqual(11); // every answer above was checked, none skipped
  }, 120_000);

  it('When a query takes only Bearer and the client holds only credentials, then it says so without sending', async () => {
    const basicOnly = client({ credentials: MEMBER });
    await expect(basicOnly.readModel.getTeamRatingInput({ id: TEAM_ID })).rejects.toThrow(
      'GetTeamRatingInputByTeamId accepts Bearer: the client needs a token (signIn)',
    );
  });

  it("When the import's credentials are wrong, then its body-less 401 is an error, not a success", async () => {
    const stranger = client({ credentials: { email: ADMIN.email, password: 'not the password' } });
    const refused = await stranger
      .import({ requestId: randomUUID(), importerType: 'UserSeeding', importData: { users: [] } })
      .then(
        () => undefined,
        (error: unknown) => error,
      );
    expect(refused).toBeInstanceOf(FantasyApiError);
    expect(refused).toMatchObject({ status: 401, body: undefined });
  });

  it('When the served document and the client are compared, then every query has its method and its schemes', async () => {
    const served = (await (await fetch(`${baseUrl}/api/openapi.json`)).json()) as OpenApiDocument;
    const pairing = served.components.schemas.ReadModelQueryTypes as {
      properties: Record<string, { properties: { schemes: { items: { enum: string[] } } } }>;
    };
    const servedSchemes = Object.fromEntries(
      Object.entries(pairing.properties).map(([queryType, entry]) => [
        queryType,
        entry.properties.schemes.items.enum,
      ]),
    );
    expect(servedSchemes).toEqual(QUERY_SCHEMES);
    const methods = client().readModel as unknown as Record<string, unknown>;
    expect(Object.keys(methods)).toHaveLength(Object.keys(QUERY_SCHEMES).length);
    const queryTypes: QueryType[] = Object.keys(QUERY_SCHEMES) as QueryType[];
    expect(queryTypes.sort()).toEqual(Object.keys(servedSchemes).sort());
  });
});
