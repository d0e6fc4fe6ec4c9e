import { problem } from '../../shared/http/problem';
import type { UserView } from '../../shared/user/user-view';
import { securityOf, unauthorizedAnswer } from '../auth/authentication.contract';
import { componentRef, type JsonSchema } from '../http/json-schema';
import {
  type OperationContract,
  PROBLEM_MEDIA,
  type QueryTypeContract,
  requestBody,
  responsesOf,
} from '../openapi/contract-kit';
import { joiToJsonSchema } from '../openapi/joi-to-json-schema';
import { EXAMPLE_IDS, type OperationExamples } from '../openapi/spec-examples';
import { CLAIM_TYPES } from './current-user/current-user.query';
import { NOT_FOUND_LISTING_SCHEMA } from './listing';
import type { RegisteredQuery } from './query-definition';
import { withQueryTypeMember } from './query-type-member';
import { READ_MODEL_PATH } from './readmodel.routes';

const SERVICE_ACCOUNT = EXAMPLE_IDS.serviceAccount;

/** That service account as GetUser and ListUsers show it. */
const SERVICE_ACCOUNT_USER: UserView = {
  id: EXAMPLE_IDS.user,
  email: SERVICE_ACCOUNT,
  userName: SERVICE_ACCOUNT,
  userType: 'ServiceAccount',
  roles: ['ServiceAccount'],
  firstName: null,
  lastName: null,
  emailVerified: false,
  disabled: false,
  createdAt: '2026-03-14T09:20:11.204Z',
  updatedAt: '2026-03-14T09:20:11.204Z',
  version: 1,
};

/** POST /api/readmodel: spec 4.1 to 4.4 and 7. */
const READ_MODEL_EXAMPLES: OperationExamples = {
  requests: [
    {
      name: 'GetTeamRatingInputByTeamId',
      summary: 'Spec 4.1: the rating input of one team (Bearer, Member, owner or Admin)',
      value: {
        query: { queryType: 'GetTeamRatingInputByTeamId', id: EXAMPLE_IDS.team, season: '2026' },
        dataType: 'TeamRatingInput',
      },
    },
    {
      name: 'GetMappedPlayers',
      summary: 'Spec 4.2: every mapped player (Basic, ServiceAccount)',
      value: { query: { queryType: 'GetMappedPlayers' } },
    },
    {
      name: 'CurrentUser',
      summary: 'Spec 4.3: the caller (any account)',
      value: { query: { queryType: 'CurrentUser' }, skip: 0, take: 10 },
    },
    {
      name: 'AvailableImporters',
      summary: 'Spec 4.4: the registered importers',
      value: { query: { queryType: 'AvailableImporters' } },
    },
    {
      name: 'GetUser',
      summary: 'One account, by e-mail or by id (UserManager or Admin)',
      value: { query: { queryType: 'GetUser', email: SERVICE_ACCOUNT } },
    },
    {
      name: 'ListUsers',
      summary: 'Enabled service accounts whose e-mail starts with "rating", by e-mail (UserManager or Admin)',
      value: {
        query: { queryType: 'ListUsers', userType: 'ServiceAccount', disabled: false, emailPrefix: 'rating' },
        skip: 0,
        take: 100,
      },
    },
    {
      name: 'GetFantasyTeam',
      summary: 'One team: its owner, linked identity, roster and version (owner or Admin)',
      value: { query: { queryType: 'GetFantasyTeam', id: EXAMPLE_IDS.team } },
    },
    {
      name: 'GetImportJobResult',
      summary: 'An import job, queued or finished (its submitter or an Admin)',
      value: { query: { queryType: 'GetImportJobResult', importJobId: EXAMPLE_IDS.importJob } },
    },
    {
      name: 'ListWebhookSubscriptions',
      summary: 'Every webhook subscription (Admin)',
      value: { query: { queryType: 'ListWebhookSubscriptions' }, skip: 0, take: 100 },
    },
    {
      name: 'GetWebhookDeliveries',
      summary: "A subscription's deliveries, newest first (Admin)",
      value: {
        query: { queryType: 'GetWebhookDeliveries', subscriptionId: EXAMPLE_IDS.webhookSubscription },
        skip: 0,
        take: 100,
      },
    },
  ],
  responses: {
    200: [
      {
        name: 'TeamRatingInput',
        summary: 'Spec 4.1 and 2.2 to 2.3: the team keyed by feed player id',
        value: {
          queryType: 'GetTeamRatingInputByTeamId',
          results: [
            {
              team: {
                '10234': {
                  rating: 8.4,
                  breakdown: null,
                  price: 550000,
                  selectionStatus: 0,
                  fantasyPositions: [],
                },
                '10871': {
                  rating: 6.1,
                  breakdown: null,
                  price: 420000,
                  selectionStatus: 2,
                  fantasyPositions: [],
                },
              },
              round: 1,
              finalRound: 27,
            },
          ],
          totalCount: 1,
          requestId: EXAMPLE_IDS.request,
        },
      },
      {
        name: 'MappedPlayers',
        summary: 'Spec 4.2 and 2.4: one mapped player',
        value: {
          queryType: 'GetMappedPlayers',
          results: [
            {
              feedId: 10234,
              feedFirstName: 'Jordan',
              feedLastName: 'Smith',
              feedFullName: 'Jordan Smith',
              feedShortName: 'J. Smith',
              leaguePlayerId: 'LP-2291',
              leagueFirstName: 'Jordan',
              leagueLastName: 'Smith',
              fantasyId: 7781,
              fantasyCompositeId: '7781-2026',
              platformId: 'd2a5c3e1-7b4f-4a6e-9c8d-0e1f2a3b4c5d',
              platformFullName: 'Jordan Smith',
              platformSlug: 'jordan-smith',
            },
          ],
          totalCount: 1,
        },
      },
      {
        name: 'CurrentUser',
        summary: 'Spec 4.3 and 2.8: a service account created by an import, signed in by Basic',
        value: {
          queryType: 'CurrentUser',
          data: [
            {
              name: SERVICE_ACCOUNT,
              email: SERVICE_ACCOUNT,
              roles: ['ServiceAccount'],
              claims: {
                [CLAIM_TYPES.nameIdentifier]: EXAMPLE_IDS.user,
                [CLAIM_TYPES.accountType]: 'ServiceAccount',
                [CLAIM_TYPES.internalUserId]: EXAMPLE_IDS.user,
                [CLAIM_TYPES.role]: 'ServiceAccount',
              },
              authenticationType: 'Basic',
              requestTime: '2026-03-14T09:26:53.589Z',
              effectiveRoles: ['ServiceAccount', 'Public'],
            },
          ],
          totalCount: 1,
          skip: 0,
        },
      },
      {
        name: 'Users',
        summary: 'ListUsers (GetUser answers the same results): the service account the import examples seed',
        value: { queryType: 'ListUsers', results: [SERVICE_ACCOUNT_USER], totalCount: 1 },
      },
    ],
    400: [
      {
        name: 'IdMissing',
        summary: 'Spec 4.1 rule 6 and 7: id missing',
        mediaType: PROBLEM_MEDIA,
        value: problem(400, EXAMPLE_IDS.trace, { errors: { Id: ['Id is required'] } }),
      },
    ],
    401: [
      {
        name: 'NotAuthenticated',
        summary: 'Spec 5 rule 1 and 7: no credentials',
        mediaType: PROBLEM_MEDIA,
        value: problem(401, EXAMPLE_IDS.trace),
      },
    ],
    404: [
      {
        name: 'NotFoundListing',
        summary: "Spec 4.1 rule 2: the team is missing or not the caller's",
        value: { queryType: 'GetTeamRatingInputByTeamId', results: [], totalCount: 0 },
      },
    ],
    500: [
      {
        name: 'ServerFailure',
        summary: 'Spec 7: server failure',
        mediaType: PROBLEM_MEDIA,
        value: problem(500, EXAMPLE_IDS.trace),
      },
    ],
  },
};

/**
 * POST /api/readmodel: one operation, the query chosen by `query.queryType`; each query's own
 * request, answer, schemes and roles are in `x-query-types`.
 */
export function readModelContract(queries: readonly RegisteredQuery[]): OperationContract {
  return {
    path: READ_MODEL_PATH,
    method: 'post',
    operation({ component, answers }) {
      const examples = READ_MODEL_EXAMPLES;
      const contracts: QueryTypeContract[] = queries.map((query) => ({
        queryType: query.queryType,
        description: query.description,
        security: securityOf(query.schemes),
        roles: query.roles,
        ...(query.module ? { module: query.module } : {}),
        request: component(`${query.queryType}Query`, {
          description: query.description,
          ...joiToJsonSchema(query.schema),
        }),
        responses: {
          '200': component(resultName(query), withQueryTypeMember(query.response, [query.queryType])),
          ...(query.answersNotFoundListing ? { '404': componentRef('NotFoundListing') } : {}),
        },
      }));
      component(
        'NotFoundListing',
        withQueryTypeMember(
          NOT_FOUND_LISTING_SCHEMA,
          queries.filter((query) => query.answersNotFoundListing).map((query) => query.queryType),
        ),
      );
      component(READ_MODEL_QUERY_TYPES, queryTypesSchema(queries, contracts));
      const schemes = [...new Set(queries.flatMap((query) => query.schemes))];

      return {
        operationId: 'readModel',
        summary: 'Answer a read-model query',
        description: [
          'The query type is chosen by `query.queryType`. Order at the edge: authenticate, validate the',
          'envelope, find the query, check its scheme (401) and roles (403), validate its own fields (400).',
          '',
          '| queryType | schemes | roles (any one) | module | description |',
          '| --- | --- | --- | --- | --- |',
          ...queries.map(
            (query) =>
              `| \`${query.queryType}\` | ${query.schemes.join(', ')} | ${query.roles.join(', ') || 'any account'} | ${query.module ?? ''} | ${query.description} |`,
          ),
          '',
          'Every answer (the 200 and the 404 listing) opens with `queryType`, the query it answers: the',
          "200's discriminator, so a client tells the shapes apart without knowing the request.",
          `Which request and answer belong to which query: the component \`${READ_MODEL_QUERY_TYPES}\` (for generators) and`,
          '`x-query-types` (with roles and modules).',
        ].join('\n'),
        tags: ['Read model'],
        security: securityOf(schemes),
        requestBody: requestBody(
          'The envelope: `query` (with `queryType` and its parameters) and the envelope fields of the query.',
          { oneOf: contracts.map((contract) => contract.request) },
          examples.requests,
        ),
        responses: {
          '200': answers.json(
            "The query's answer; its `queryType` says which query it answers, and so its shape.",
            {
              oneOf: contracts.map((contract) => contract.responses['200'] as JsonSchema),
              discriminator: {
                propertyName: 'queryType',
                mapping: Object.fromEntries(
                  contracts.map((contract) => [contract.queryType, contract.responses['200']?.$ref]),
                ),
              },
            },
            responsesOf(examples, 200),
          ),
          '400': answers.problem(
            400,
            'A field of the envelope or the query is invalid, the query type is unknown, or the body is not JSON (or nested deeper than 64 levels, or in an encoding not accepted).',
            responsesOf(examples, 400),
          ),
          '401': unauthorizedAnswer(answers, responsesOf(examples, 401)),
          '403': answers.problem(403, 'The account has none of the roles the query requires.'),
          '404': answers.jsonOrProblem(
            404,
            "The spec's 404 listing (the item is missing or not the caller's), or a problem when the query's module is not enabled.",
            componentRef('NotFoundListing'),
            responsesOf(examples, 404),
          ),
          ...answers.common({ authenticated: true }),
          '503': {
            ...answers.problem(
              503,
              'Redis is not reachable, or this instance is already checking AUTH_MAX_PENDING_VERIFICATIONS passwords; or (`code` `PROJECTION_BEHIND`) the query named a `minVersion` the projection did not reach within READ_WAIT_MS, or too many such reads are waiting. Retry after Retry-After seconds.',
            ),
            headers: { 'Retry-After': { schema: { type: 'integer' }, description: 'Seconds to wait.' } },
          },
          ...answers.serverFailure(responsesOf(examples, 500)),
        },
        'x-query-types': contracts,
      };
    },
  };
}

/** The component that pairs each query type with its request, answer and schemes. */
export const READ_MODEL_QUERY_TYPES = 'ReadModelQueryTypes';

/**
 * `ReadModelQueryTypes`: one member per query type, `{request, answer, schemes}`. It is no body
 * the service takes or sends; it is where a generator finds what `x-query-types` says (a nested
 * `query.queryType` cannot be an OpenAPI discriminator, and one path has one 200), as types:
 * `components["schemas"]["ReadModelQueryTypes"]["GetFantasyTeam"]["answer"]` is that query's answer.
 */
function queryTypesSchema(
  queries: readonly RegisteredQuery[],
  contracts: readonly QueryTypeContract[],
): JsonSchema {
  return {
    description: [
      "Not a request or an answer: the read model's queries, each paired with its request, its 200",
      'answer and the schemes it accepts, for generated clients (the same as `x-query-types`).',
    ].join(' '),
    type: 'object',
    properties: Object.fromEntries(
      contracts.map((contract, index) => [
        contract.queryType,
        {
          type: 'object',
          properties: {
            request: contract.request,
            answer: contract.responses['200'] as JsonSchema,
            schemes: {
              type: 'array',
              items: { enum: [...(queries[index]?.schemes ?? [])] },
              description: 'The authentication schemes the query accepts (any one).',
            },
          },
          required: ['request', 'answer', 'schemes'],
          additionalProperties: false,
        },
      ]),
    ),
    required: contracts.map((contract) => contract.queryType),
    additionalProperties: false,
  };
}

/** The component name of a query's answer: its schema's title, or `<queryType>Result`. */
function resultName(query: RegisteredQuery): string {
  return typeof query.response.title === 'string' ? query.response.title : `${query.queryType}Result`;
}
