import { failedAtAggregate, type Importer } from '../../shared/importers/importer';
import { lacksRolesMessage } from '../../shared/roles';
import { USER_COMMAND_ROLES } from '../../shared/user/user.commands';
import { USER_MESSAGES } from '../../shared/user/user.messages';
import { BASIC_OR_BEARER } from '../auth/authentication.contract';
import {
  discriminatedOneOf,
  type OperationContract,
  requestBody,
  responsesOf,
} from '../openapi/contract-kit';
import { joiToJsonSchema } from '../openapi/joi-to-json-schema';
import { EXAMPLE_IDS, type OperationExamples } from '../openapi/spec-examples';
import { IMPORT_PATH } from './import.routes';
import { importRequestSchema } from './import-request';
import { EMPTY_GUID, IMPORT_RESPONSE_SCHEMA, unknownImporterMessage } from './import-response';

const SERVICE_ACCOUNT = EXAMPLE_IDS.serviceAccount;

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
  requestId: EXAMPLE_IDS.request,
  importJobId: EXAMPLE_IDS.importJob,
  importerType: 'UserSeeding',
};

const ranInline = {
  ...importEcho,
  importResultId: EXAMPLE_IDS.importJob,
  priority: 'High',
  processedSynchronously: true,
  executionDuration: '00:00:00.12',
};

/** POST /api/import: spec 2.7, 3.3, 4.6 and 7. */
const IMPORT_EXAMPLES: OperationExamples = {
  requests: [
    {
      name: 'UserSeedingHigh',
      summary: 'Spec 4.6: seed a service account, inline if the queue is idle',
      value: {
        requestId: EXAMPLE_IDS.request,
        importerType: 'UserSeeding',
        priority: 'High',
        importData: userSeedingImportData,
      },
    },
    {
      name: 'UserSeedingNormal',
      summary: 'Spec 3.3: priority omitted, so Normal and queued',
      value: {
        requestId: EXAMPLE_IDS.request,
        importerType: 'UserSeeding',
        importData: userSeedingImportData,
      },
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
          message: failedAtAggregate(EXAMPLE_IDS.user, USER_MESSAGES.alreadyExists),
          success: false,
          commandsExecuted: 0,
          eventsGenerated: 0,
          aggregatesProcessed: 0,
          skipped: 0,
          errorMessage: failedAtAggregate(EXAMPLE_IDS.user, USER_MESSAGES.alreadyExists),
          errorCode: 'AGGREGATE_PROCESSING_FAILED',
          rowErrors: [{ index: 0, code: 'USER_EXISTS', message: USER_MESSAGES.alreadyExists }],
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
          EXAMPLE_IDS.user,
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
          requestId: EXAMPLE_IDS.request,
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

/** POST /api/import: one operation, the importer chosen by `importerType`. */
export function importContract(importers: readonly Importer[], maxImportRows: number): OperationContract {
  return {
    path: IMPORT_PATH,
    method: 'post',
    operation({ component, answers }) {
      const examples = IMPORT_EXAMPLES;
      const requests = importers.map((importer) => ({
        value: importer.importerType,
        ref: component(`${importer.importerType}Import`, {
          description: `${importer.description} Its commands need one of the roles: ${importer.requiredRoles.join(', ')}.`,
          ...joiToJsonSchema(importRequestSchema(importer, maxImportRows)),
        }),
      }));
      const response = component('ImportResponse', IMPORT_RESPONSE_SCHEMA);

      return {
        operationId: 'import',
        summary: 'Submit a bulk import',
        description: [
          'Any authenticated account may submit; the roles an importer needs are checked while it runs',
          '(spec 5 rule 4), so a refusal there is a 200 with status `Failed` and errorCode',
          '`AGGREGATE_PROCESSING_FAILED`. `Normal` is queued; `High` runs inline when the queue is idle.',
          '',
          '| importerType | roles its commands need | description |',
          '| --- | --- | --- |',
          ...importers.map(
            (importer) =>
              `| \`${importer.importerType}\` | ${importer.requiredRoles.join(', ')} | ${importer.description} |`,
          ),
        ].join('\n'),
        tags: ['Imports'],
        security: BASIC_OR_BEARER,
        requestBody: requestBody(
          "The envelope, with the importer's own data as `importData`.",
          discriminatedOneOf('importerType', requests),
          examples.requests,
        ),
        responses: {
          '200': answers.json(
            'Queued (Pending), run inline (Completed or Failed), a dry run, or the job a repeated requestId made.',
            response,
            responsesOf(examples, 200),
          ),
          '400': answers.jsonOrProblem(
            400,
            'An unknown importerType (spec 2.7 shape, UNKNOWN_IMPORTER_TYPE, all-zero importJobId), or a validation problem (a field, or a body that is not JSON, nested deeper than 64 levels or in an encoding not accepted).',
            response,
            responsesOf(examples, 400),
          ),
          '401': {
            description: [
              'Not authenticated: **no body at all** (spec 4.6 and 5 rule 1), no Content-Type and no',
              'WWW-Authenticate, unlike the other endpoints, which answer a 401 problem. Tell it by the',
              'status, never by the body: a client that reads only a parsed body (openapi-fetch gives',
              '`data` and `error` both `undefined` for an empty body) would take it for a success.',
            ].join(' '),
            headers: {
              'Content-Length': { schema: { type: 'integer', const: 0 }, description: 'Always 0.' },
            },
          },
          ...answers.common({ authenticated: true }),
          '429': answers.problem(
            429,
            'Too many failed sign-ins or requests for the account; or the account already has MAX_PENDING_IMPORTS_PER_USER imports Pending (nothing was stored; a resent requestId is not a new import); or it sent more than IMPORT_BYTES_PER_ACCOUNT_PER_MINUTE bytes of import bodies this minute (its Content-Length counts, before the body is read, and a chunked body first counts as IMPORT_BODY_LIMIT, then as the bytes it held; the body was not read). See Retry-After.',
          ),
        },
        'x-importer-types': importers.map((importer) => ({
          importerType: importer.importerType,
          description: importer.description,
          requiredRoles: importer.requiredRoles,
        })),
      };
    },
  };
}
