import { COMMAND_ERRORS, type CommandFailureStatus } from '../../shared/event-store/command-answer';
import { TEAM_MESSAGES } from '../../shared/fantasy-team/fantasy-team.messages';
import { GUID_FORMAT_MESSAGE } from '../../shared/validation';
import { securityOf, unauthorizedAnswer } from '../auth/authentication.contract';
import {
  discriminatedOneOf,
  type OperationContract,
  requestBody,
  responsesOf,
} from '../openapi/contract-kit';
import { joiToJsonSchema } from '../openapi/joi-to-json-schema';
import { EXAMPLE_IDS, type OperationExamples } from '../openapi/spec-examples';
import { COMMAND_PATH } from './command.routes';
import { commandRequestSchema, type RoutedDefinition } from './command-request';
import { COMMAND_SUCCEEDED_SCHEMA, commandFailedSchema } from './command-response';

/** POST /api/command: spec 4.5, 3.2 and 7. */
const COMMAND_EXAMPLES: OperationExamples = {
  requests: [
    {
      name: 'LinkFantasyTeam',
      summary: 'Spec 4.5: link a fantasy-game team identity',
      value: {
        commandType: 'LinkFantasyTeam',
        command: {
          aggregateRootId: EXAMPLE_IDS.team,
          fantasyTeamExternalId: 4815162342,
          fantasyUserId: 1087,
        },
        expectedVersion: 0,
        requestId: EXAMPLE_IDS.request,
      },
    },
    {
      name: 'UnlinkFantasyTeam',
      summary: 'Spec 4.5: unlink it',
      value: {
        commandType: 'UnlinkFantasyTeam',
        command: { aggregateRootId: EXAMPLE_IDS.team, unlinkReason: 'The manager changed fantasy accounts' },
        expectedVersion: 0,
      },
    },
  ],
  responses: {
    200: [
      {
        name: 'Linked',
        summary: 'Spec 3.2 and 2.6: accepted, one event',
        value: {
          requestId: EXAMPLE_IDS.request,
          success: true,
          eventCount: 1,
          commandType: 'LinkFantasyTeam',
          version: 2,
        },
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

/** POST /api/command: one operation, the command type chosen by `commandType`. */
export function commandContract(commands: readonly RoutedDefinition[]): OperationContract {
  return {
    path: COMMAND_PATH,
    method: 'post',
    operation({ component, answers }) {
      const examples = COMMAND_EXAMPLES;
      const requests = commands.map(({ definition }) => ({
        value: definition.commandType,
        ref: component(`${definition.commandType}Command`, {
          description: definition.description,
          ...joiToJsonSchema(commandRequestSchema(definition)),
        }),
      }));
      const succeeded = component('CommandSucceeded', COMMAND_SUCCEEDED_SCHEMA);
      const failed = (status: CommandFailureStatus) =>
        component(`CommandFailed${status}`, commandFailedSchema(status));
      const codesOf = (status: CommandFailureStatus) =>
        Object.entries(COMMAND_ERRORS)
          .filter(([, error]) => error.status === status)
          .map(([code, error]) => `\`${code}\`: ${error.meaning}`)
          .join(' ');

      return {
        operationId: 'command',
        summary: 'Run a command on a fantasy team or an account',
        description: [
          'The command type is chosen by `commandType`; `command` holds its fields. Every answer has the',
          "spec's 2.6 shape; a refusal carries an `errorCode`:",
          '',
          '| errorCode | status | when |',
          '| --- | --- | --- |',
          ...Object.entries(COMMAND_ERRORS).map(
            ([code, error]) => `| \`${code}\` | ${error.status} | ${error.meaning} |`,
          ),
        ].join('\n'),
        tags: ['Commands'],
        security: securityOf(['Bearer']),
        // Each command type needs its own roles: `x-command-types` lists them (none: any account).
        requestBody: requestBody(
          'One command: its type, its fields, and optionally expectedVersion and requestId.',
          discriminatedOneOf('commandType', requests),
          examples.requests,
        ),
        responses: {
          '200': answers.json('Accepted: the events are stored.', succeeded, responsesOf(examples, 200)),
          '400': answers.jsonOrProblem(
            400,
            `Refused: ${codesOf(400)} A body that is not JSON (or nested deeper than 64 levels, or in an encoding not accepted) gets the 400 problem.`,
            failed(400),
            responsesOf(examples, 400),
          ),
          '401': unauthorizedAnswer(answers),
          '403': answers.json(`Refused: ${codesOf(403)}`, failed(403)),
          '409': answers.json(`Refused: ${codesOf(409)}`, failed(409)),
          ...answers.common({ authenticated: true }),
          '503': {
            ...answers.jsonOrProblem(
              503,
              `Refused: ${codesOf(503)} Or Redis is not reachable (a problem). When Redis became unreachable after the command was sent to it, or (with WRITE_DURABILITY=replicated) no Redis replica confirmed it in time, the problem's detail says that the command may have taken effect and names the requestId to send it again with. A command that checks or sets a password (ChangePassword, SetUserPassword) also gets the problem while too many sign-ins are being checked at once. All carry Retry-After.`,
              failed(503),
            ),
            headers: { 'Retry-After': { schema: { type: 'integer' } } },
          },
        },
        'x-command-types': commands.map((routed) => ({
          commandType: routed.definition.commandType,
          description: routed.definition.description,
          roles: routed.definition.roles,
        })),
      };
    },
  };
}
