import { TEAM_MESSAGES } from '../../shared/domain/fantasy-team/fantasy-team.messages';
import { USER_COMMAND_ROLES } from '../../shared/domain/user/user.commands';
import { USER_MESSAGES } from '../../shared/domain/user/user.messages';
import { failedAtAggregate } from '../../shared/importers/importer';
import { lacksRolesMessage } from '../../shared/roles';
import { GUID_FORMAT_MESSAGE } from '../../shared/validation';
import { CLAIM_TYPES } from '../readmodel/current-user/current-user.query';
import { problem } from '../http/problem';
import { EMPTY_GUID, unknownImporterMessage } from '../import/import-response';

/**
 * The spec's examples, as OpenAPI examples. The spec shows its requests and answers as tables
 * of fields, values and messages rather than as JSON, so each example here is those tables
 * written out: every name, value and message is the spec's (messages come from the modules
 * that answer them, so an example cannot quote a text the service no longer sends); ids are
 * made up. `summary` names the section. A contract test validates each against its schema.
 */
export interface SpecExample {
  /** The example's key in the OpenAPI examples map. */
  readonly name: string;
  readonly summary: string;
  readonly value: unknown;
  /** Of a response example; `application/json` unless said. */
  readonly mediaType?: 'application/json' | 'application/problem+json';
}

export interface OperationExamples {
  readonly requests: readonly SpecExample[];
  /** By HTTP status. */
  readonly responses: Readonly<Record<number, readonly SpecExample[]>>;
}

const TEAM_ID = '3f2b8c1e-6d4a-4f7b-9c2e-1a5d7e9f0b3c';
const REQUEST_ID = '7c9e6679-7425-40de-944b-e07fc1f90ae7';
const TRACE_ID = '0b5f4c3e-2d1a-4e8f-9a7b-6c5d4e3f2a1b';
const IMPORT_JOB_ID = 'a3bb189e-8bf9-3888-9912-ace4e6543002';
const USER_ID = '9f8e7d6c-5b4a-5c3d-8e2f-1a0b9c8d7e6f';
const SERVICE_ACCOUNT = 'rating-service@example.com';
const PROBLEM = 'application/problem+json';

const userSeedingImportData = {
  enabled: true,
  skipIfUsersExist: false,
  users: [
    {
      email: SERVICE_ACCOUNT,
      userName: SERVICE_ACCOUNT,
      userType: 'ServiceAccount',
      roles: ['ServiceAccount'],
      firstName: 'Rating',
      lastName: 'Service',
      password: 'a-long-service-account-password',
      emailVerified: true,
    },
  ],
};

const importEcho = {
  requestId: REQUEST_ID,
  importJobId: IMPORT_JOB_ID,
  importerType: 'UserSeeding',
};

const ranInline = {
  ...importEcho,
  importResultId: IMPORT_JOB_ID,
  priority: 'High',
  processedSynchronously: true,
  executionDuration: '00:00:00.12',
};

/** POST /api/readmodel: spec 4.1 to 4.4 and 7. */
export const READ_MODEL_EXAMPLES: OperationExamples = {
  requests: [
    {
      name: 'GetTeamRatingInputByTeamId',
      summary: 'Spec 4.1: the rating input of one team (Bearer, Member, owner or Admin)',
      value: {
        query: { queryType: 'GetTeamRatingInputByTeamId', id: TEAM_ID, season: '2026' },
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
  ],
  responses: {
    200: [
      {
        name: 'TeamRatingInput',
        summary: 'Spec 4.1 and 2.2 to 2.3: the team keyed by feed player id',
        value: {
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
          requestId: REQUEST_ID,
        },
      },
      {
        name: 'MappedPlayers',
        summary: 'Spec 4.2 and 2.4: one mapped player',
        value: {
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
          data: [
            {
              name: SERVICE_ACCOUNT,
              email: SERVICE_ACCOUNT,
              roles: ['ServiceAccount'],
              claims: {
                [CLAIM_TYPES.nameIdentifier]: USER_ID,
                [CLAIM_TYPES.accountType]: 'ServiceAccount',
                [CLAIM_TYPES.internalUserId]: USER_ID,
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
    ],
    400: [
      {
        name: 'IdMissing',
        summary: 'Spec 4.1 rule 6 and 7: id missing',
        mediaType: PROBLEM,
        value: problem(400, TRACE_ID, { errors: { Id: ['Id is required'] } }),
      },
    ],
    401: [
      {
        name: 'NotAuthenticated',
        summary: 'Spec 5 rule 1 and 7: no credentials',
        mediaType: PROBLEM,
        value: problem(401, TRACE_ID),
      },
    ],
    404: [
      {
        name: 'NotFoundListing',
        summary: "Spec 4.1 rule 2: the team is missing or not the caller's",
        value: { results: [], totalCount: 0 },
      },
    ],
    500: [
      {
        name: 'ServerFailure',
        summary: 'Spec 7: server failure',
        mediaType: PROBLEM,
        value: problem(500, TRACE_ID),
      },
    ],
  },
};

/** POST /api/command: spec 4.5, 3.2 and 7. */
export const COMMAND_EXAMPLES: OperationExamples = {
  requests: [
    {
      name: 'LinkFantasyTeam',
      summary: 'Spec 4.5: link a fantasy-game team identity',
      value: {
        commandType: 'LinkFantasyTeam',
        command: { aggregateRootId: TEAM_ID, fantasyTeamExternalId: 4815162342, fantasyUserId: 1087 },
        expectedVersion: 0,
        requestId: REQUEST_ID,
      },
    },
    {
      name: 'UnlinkFantasyTeam',
      summary: 'Spec 4.5: unlink it',
      value: {
        commandType: 'UnlinkFantasyTeam',
        command: { aggregateRootId: TEAM_ID, unlinkReason: 'The manager changed fantasy accounts' },
        expectedVersion: 0,
      },
    },
  ],
  responses: {
    200: [
      {
        name: 'Linked',
        summary: 'Spec 3.2 and 2.6: accepted, one event',
        value: { requestId: REQUEST_ID, success: true, eventCount: 1, commandType: 'LinkFantasyTeam' },
      },
    ],
    400: [
      ...(
        [
          ['NonExistent', 'LinkFantasyTeam', TEAM_MESSAGES.nonExistent('link')],
          ['Archived', 'LinkFantasyTeam', TEAM_MESSAGES.archived('link')],
          ['AlreadyLinked', 'LinkFantasyTeam', TEAM_MESSAGES.alreadyLinked],
          ['ExternalIdNotPositive', 'LinkFantasyTeam', TEAM_MESSAGES.externalIdNotPositive],
          ['NotLinked', 'UnlinkFantasyTeam', TEAM_MESSAGES.notLinked],
        ] as const
      ).map(([name, commandType, errorMessage]) => ({
        name,
        summary: `Spec 7: ${errorMessage}`,
        value: {
          requestId: null,
          success: false,
          eventCount: 0,
          errorMessage,
          errorCode: 'COMMAND_VALIDATION_ERROR',
          commandType,
        },
      })),
      {
        name: 'RequestIdNotAGuid',
        summary: 'Spec 7 rule 1: a requestId that is not a GUID',
        value: {
          requestId: null,
          success: false,
          eventCount: 0,
          errorMessage: GUID_FORMAT_MESSAGE,
          errorCode: 'COMMAND_VALIDATION_ERROR',
          commandType: 'LinkFantasyTeam',
        },
      },
    ],
  },
};

/** POST /api/import: spec 2.7, 3.3, 4.6 and 7. */
export const IMPORT_EXAMPLES: OperationExamples = {
  requests: [
    {
      name: 'UserSeedingHigh',
      summary: 'Spec 4.6: seed a service account, inline if the queue is idle',
      value: {
        requestId: REQUEST_ID,
        importerType: 'UserSeeding',
        priority: 'High',
        importData: userSeedingImportData,
      },
    },
    {
      name: 'UserSeedingNormal',
      summary: 'Spec 3.3: priority omitted, so Normal and queued',
      value: { requestId: REQUEST_ID, importerType: 'UserSeeding', importData: userSeedingImportData },
    },
  ],
  responses: {
    200: [
      {
        name: 'Queued',
        summary: 'Spec 3.3: Normal priority, queued',
        value: {
          ...importEcho,
          status: 'Pending',
          priority: 'Normal',
          message: 'Import job queued with Normal priority',
          processedSynchronously: false,
        },
      },
      {
        name: 'Completed',
        summary: 'Spec 4.6 rule 4: High on an idle queue, run inline',
        value: {
          ...ranInline,
          status: 'Completed',
          message: 'Import completed successfully',
          success: true,
          commandsExecuted: 1,
          eventsGenerated: 1,
          aggregatesProcessed: 1,
          skipped: 0,
          rowErrors: [],
        },
      },
      {
        name: 'UserExists',
        summary: 'Spec 4.6 rule 2: the user exists already',
        value: {
          ...ranInline,
          status: 'Failed',
          message: failedAtAggregate(USER_ID, USER_MESSAGES.alreadyExists),
          success: false,
          commandsExecuted: 0,
          eventsGenerated: 0,
          aggregatesProcessed: 0,
          skipped: 0,
          errorMessage: failedAtAggregate(USER_ID, USER_MESSAGES.alreadyExists),
          errorCode: 'AGGREGATE_PROCESSING_FAILED',
          rowErrors: [
            { index: 0, email: SERVICE_ACCOUNT, code: 'USER_EXISTS', message: USER_MESSAGES.alreadyExists },
          ],
        },
      },
      ((message: string) => ({
        name: 'LacksRoles',
        summary: 'Spec 4.6 rule 3 and 5 rule 4: a Member-only submitter, refused while processing',
        value: {
          ...ranInline,
          status: 'Failed',
          message,
          success: false,
          commandsExecuted: 0,
          eventsGenerated: 0,
          aggregatesProcessed: 0,
          skipped: 0,
          errorMessage: message,
          errorCode: 'AGGREGATE_PROCESSING_FAILED',
          rowErrors: [],
        },
      }))(
        failedAtAggregate(
          USER_ID,
          lacksRolesMessage(
            {
              email: 'member@example.com',
              userId: '1b4e28ba-2fa1-5d2e-883f-0016d3cca427',
              roles: ['Member'],
            },
            'CreateUser',
            USER_COMMAND_ROLES.CreateUser,
          ),
        ),
      ),
    ],
    400: [
      {
        name: 'UnknownImporterType',
        summary: 'Spec 3.3 and 7: the importer is not registered',
        value: {
          requestId: REQUEST_ID,
          importJobId: EMPTY_GUID,
          status: 'Failed',
          priority: 'Normal',
          importerType: 'NoSuchImporter',
          message: unknownImporterMessage('NoSuchImporter'),
          processedSynchronously: false,
          errorMessage: unknownImporterMessage('NoSuchImporter'),
          errorCode: 'UNKNOWN_IMPORTER_TYPE',
        },
      },
    ],
  },
};
