import { commandErrorCodesFor, type CommandFailureStatus } from '../../shared/event-store/command-answer';
import { closedObject, GUID_SCHEMA, type JsonSchema } from '../http/json-schema';

// The answer's codes and shape are the use case's (shared/event-store/command-answer.ts); this module
// holds their JSON Schemas, for the OpenAPI document.

const requestIdSchema: JsonSchema = {
  ...GUID_SCHEMA,
  type: ['string', 'null'],
  description: "Echo of the request's requestId (lower case), or null when none was given.",
};

/** The JSON Schema of a 200 answer (spec 2.6): success, one event per accepted command. */
export const COMMAND_SUCCEEDED_SCHEMA: JsonSchema = closedObject(
  {
    requestId: requestIdSchema,
    success: { const: true },
    eventCount: {
      type: 'integer',
      minimum: 0,
      description: 'Events raised: 1 for the commands of the spec.',
    },
    commandType: { type: 'string' },
    version: {
      type: 'integer',
      minimum: 0,
      description:
        "The aggregate's version once the command is written (the team's, the account's or the subscription's): the expectedVersion of a next command, and the minVersion of a read that must see this write. Unchanged when the command raised no event; for a repeated requestId, the version the first answer named.",
    },
    signingSecret: {
      type: 'string',
      pattern: '^whsec_[A-Za-z0-9+/]+={0,2}$',
      description:
        'CreateWebhookSubscription and RotateWebhookSecret only: the new signing secret, in this answer only (never stored in the clear, never answered again).',
    },
    note: {
      type: 'string',
      description: 'Why a repeated answer (the same requestId) carries no signingSecret.',
    },
  },
  ['signingSecret', 'note'],
  { title: 'CommandSucceeded' },
);

/** The JSON Schema of a refusal with `status` (spec 2.6): the codes of that status only. */
export function commandFailedSchema(status: CommandFailureStatus): JsonSchema {
  const codes = commandErrorCodesFor(status);
  return closedObject(
    {
      requestId: requestIdSchema,
      success: { const: false },
      eventCount: { const: 0 },
      errorMessage: { type: 'string' },
      errorCode: codes.length === 1 ? { const: codes[0] } : { enum: codes },
      commandType: {
        type: ['string', 'null'],
        description: 'The commandType sent, or null when it was not a string.',
      },
    },
    [],
    { title: `CommandFailed${status}` },
  );
}
