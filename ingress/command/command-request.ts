import Joi from 'joi';

import { AppError } from '../../shared/errors';
import { type CommandOutcome, refused } from '../../shared/event-store/command-answer';
import {
  FANTASY_TEAM_COMMAND_DEFINITIONS,
  type FantasyTeamCommandDefinition,
} from '../../shared/fantasy-team/fantasy-team.commands';
import type { Role } from '../../shared/roles';
import { ACCOUNT_COMMAND_DEFINITIONS, type AccountCommandDefinition } from '../../shared/user/user.commands';
import { guid, GUID_FORMAT_MESSAGE, isGuid, text, validate } from '../../shared/validation';
import {
  WEBHOOK_COMMAND_DEFINITIONS,
  type WebhookCommandDefinition,
} from '../../shared/webhook-subscription/webhook-subscription.commands';
import type { AccountCommandRequest } from './account-commands';
import type { TeamCommandRequest } from './run-team-command';
import type { WebhookCommandRequest } from './webhook-commands';

/** Every command's envelope; the command's own fields are its definition's schema. */
export const commandEnvelopeSchema = Joi.object({
  commandType: text({ max: 100 }).required(),
  command: Joi.object().required(),
  expectedVersion: Joi.number()
    .strict()
    .integer()
    .min(0)
    .default(0)
    .description(
      "Optimistic concurrency: above 0, the command runs only at the aggregate's version (the team's, or the account's).",
    ),
  // Checked before the envelope, to answer the spec's own message (section 7, rule 1).
  requestId: guid()
    .allow(null)
    .description(
      'Echoed in the answer; the same command with the same requestId within 24 h is answered once.',
    ),
});

/** What every command definition of either family offers the endpoint and the OpenAPI document. */
export interface CommandDefinition {
  readonly commandType: string;
  readonly description: string;
  readonly schema: Joi.ObjectSchema;
  /** Who may send it (none: any authenticated account). */
  readonly roles: readonly Role[];
}

/**
 * Every command type of POST /api/command, by the aggregate family that runs it: fantasy-team
 * commands (runTeamCommand), account commands (runAccountCommand) and webhook subscription
 * commands (runWebhookCommand).
 */
export type RoutedDefinition =
  | { readonly family: 'team'; readonly definition: FantasyTeamCommandDefinition }
  | { readonly family: 'account'; readonly definition: AccountCommandDefinition }
  | { readonly family: 'webhook'; readonly definition: WebhookCommandDefinition };

export const COMMAND_DEFINITIONS: readonly RoutedDefinition[] = [
  ...FANTASY_TEAM_COMMAND_DEFINITIONS.map((definition) => ({ family: 'team' as const, definition })),
  ...ACCOUNT_COMMAND_DEFINITIONS.map((definition) => ({ family: 'account' as const, definition })),
  ...WEBHOOK_COMMAND_DEFINITIONS.map((definition) => ({ family: 'webhook' as const, definition })),
];

/**
 * The whole request body of one command type: the envelope with its commandType fixed and its
 * definition's schema as `command`. The route validates the same two parts one after the other
 * (to word each error); the OpenAPI document shows them joined.
 */
export function commandRequestSchema(definition: CommandDefinition): Joi.ObjectSchema {
  return commandEnvelopeSchema.keys({
    commandType: Joi.string().valid(definition.commandType).required(),
    command: definition.schema.required(),
  });
}

const DEFINITIONS = new Map<string, RoutedDefinition>(
  COMMAND_DEFINITIONS.map((routed) => [routed.definition.commandType, routed]),
);

/** Whether `commandType` names a command (the metrics label only known ones). */
export function isKnownCommandType(commandType: string): boolean {
  return DEFINITIONS.has(commandType);
}

interface Envelope {
  readonly commandType: string;
  readonly command: Record<string, unknown>;
  readonly expectedVersion: number;
}

/** A body that is a command, or the refusal to answer it with (and what that answer echoes). */
/** A valid command, by the family that runs it. */
export type ParsedCommand =
  | { readonly family: 'team'; readonly request: Omit<TeamCommandRequest, 'traceId'> }
  | { readonly family: 'account'; readonly request: Omit<AccountCommandRequest, 'traceId'> }
  | { readonly family: 'webhook'; readonly request: Omit<WebhookCommandRequest, 'traceId'> };

export type ParsedCommandRequest =
  | { readonly valid: true; readonly command: ParsedCommand }
  | {
      readonly valid: false;
      readonly refusal: CommandOutcome;
      readonly requestId: string | null;
      readonly commandType: string | null;
    };

/** Field errors of the 400 problem, flattened into the command response's one errorMessage. */
function validationMessage(error: unknown): string | undefined {
  if (!(error instanceof AppError) || error.code !== 'VALIDATION_ERROR') return undefined;
  const errors = (error.details.errors ?? {}) as Record<string, string[]>;
  return Object.values(errors).flat().join(' ');
}

/**
 * Validates a command body in the spec's order: the requestId (absent, null, or a GUID, echoed in
 * lower case), the envelope, the command type, then the command's own fields. A refusal echoes the
 * commandType sent when it was a string.
 */
export function parseCommandRequest(body: Record<string, unknown>): ParsedCommandRequest {
  const rawRequestId = body.requestId;
  const commandTypeText = typeof body.commandType === 'string' ? body.commandType : null;
  const invalid = (refusal: CommandOutcome, requestId: string | null): ParsedCommandRequest => ({
    valid: false,
    refusal,
    requestId,
    commandType: commandTypeText,
  });
  if (rawRequestId !== undefined && rawRequestId !== null && !isGuid(rawRequestId)) {
    return invalid(refused('COMMAND_VALIDATION_ERROR', GUID_FORMAT_MESSAGE), null);
  }
  const requestId = typeof rawRequestId === 'string' ? rawRequestId.toLowerCase() : null;
  try {
    // Both validate() calls try the check derived from their schema first (shared/validation.ts):
    // a plain envelope and command, as clients send them, never reach joi.
    const envelope = validate(commandEnvelopeSchema, body) as Envelope;
    const routed = DEFINITIONS.get(envelope.commandType);
    if (!routed) {
      const message = `Unknown command type: ${envelope.commandType}`;
      return invalid(refused('UNKNOWN_COMMAND_TYPE', message), requestId);
    }
    const fields = validate(routed.definition.schema, envelope.command) as Record<string, unknown>;
    const common = { fields, expectedVersion: envelope.expectedVersion, requestId };
    const command: ParsedCommand =
      routed.family === 'team'
        ? { family: 'team', request: { ...common, definition: routed.definition } }
        : routed.family === 'account'
          ? { family: 'account', request: { ...common, definition: routed.definition } }
          : { family: 'webhook', request: { ...common, definition: routed.definition } };
    return { valid: true, command };
  } catch (error) {
    const message = validationMessage(error);
    if (message === undefined) throw error;
    return invalid(refused('COMMAND_VALIDATION_ERROR', message), requestId);
  }
}
