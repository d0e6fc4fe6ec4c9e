import type { RequestHandler, Response } from 'express';
import Joi from 'joi';

import { fantasyTeamDecider } from '../../shared/domain/fantasy-team/fantasy-team.decider';
import { AggregateBusyError, ConcurrencyConflictError } from '../../shared/event-store/errors';
import type { CommandHandler } from '../../shared/event-store/handle-command';
import { AppError } from '../../shared/errors';
import { hasAnyRole } from '../../shared/roles';
import { GUID_FORMAT_MESSAGE, isGuid, validate } from '../../shared/validation';
import { authenticate } from '../auth/authenticate';
import type { PassportAuthenticator } from '../auth/passport';
import { REALM } from '../auth/passport';
import type { RouteTable } from '../http/route-table';
import { COMMAND_DEFINITIONS, type CommandDefinition } from './command-definitions';
import { failed, succeeded, type CommandAnswer } from './command-response';
import { CommandIdempotency } from './idempotency';
import { authenticatedPrincipal } from '../auth/principal';
import { jsonObjectBody } from '../http/json-body';

/** The roles that may send commands at all; ownership is the decider's check. */
const COMMAND_ROLES = ['Member'] as const;

const envelopeSchema = Joi.object({
  commandType: Joi.string().max(100).required(),
  command: Joi.object().required(),
  expectedVersion: Joi.number().strict().integer().min(0).default(0),
  requestId: Joi.any(),
});

interface Envelope {
  readonly commandType: string;
  readonly command: Record<string, unknown>;
  readonly expectedVersion: number;
}

/** Field errors of the 400 problem, flattened into the command response's one errorMessage. */
function validationMessage(error: unknown): string | undefined {
  if (!(error instanceof AppError) || error.code !== 'VALIDATION_ERROR') return undefined;
  const errors = (error.details.errors ?? {}) as Record<string, string[]>;
  return Object.values(errors).flat().join(' ');
}

function send(res: Response, answer: CommandAnswer): void {
  if (answer.retryAfterSeconds !== undefined) res.setHeader('Retry-After', String(answer.retryAfterSeconds));
  res.status(answer.status).json(answer.body);
}

/**
 * POST /api/command: authenticate (Bearer), validate the envelope and the command, check the
 * role, replay a known requestId, run the command on its aggregate, answer in the spec's 2.6 shape.
 */
export function registerCommandRoutes(
  routes: RouteTable,
  deps: { passport: PassportAuthenticator; commands: CommandHandler; idempotency: CommandIdempotency },
): void {
  const definitions = new Map<string, CommandDefinition>(COMMAND_DEFINITIONS.map((d) => [d.commandType, d]));

  const handle: RequestHandler = async (req, res) => {
    const principal = authenticatedPrincipal(req);
    if (principal.authenticationType !== 'Bearer') {
      res.setHeader('WWW-Authenticate', `Bearer realm="${REALM}"`);
      throw new AppError('UNAUTHORIZED', 'Commands accept Bearer authentication only.', 401);
    }
    const body = jsonObjectBody(req);
    const rawRequestId = body.requestId;
    const commandTypeText = typeof body.commandType === 'string' ? body.commandType : null;

    // 1. requestId: absent, null, or a GUID (echoed in lower case).
    if (rawRequestId !== undefined && rawRequestId !== null && !isGuid(rawRequestId)) {
      send(res, failed(400, 'COMMAND_VALIDATION_ERROR', GUID_FORMAT_MESSAGE, null, commandTypeText));
      return;
    }
    const requestId = typeof rawRequestId === 'string' ? rawRequestId.toLowerCase() : null;

    // 2. The envelope, then the command type, then the command's own fields.
    let envelope: Envelope;
    let definition: CommandDefinition | undefined;
    let fields: Record<string, unknown>;
    try {
      envelope = validate(envelopeSchema, body) as Envelope;
      definition = definitions.get(envelope.commandType);
      if (!definition) {
        send(
          res,
          failed(
            400,
            'UNKNOWN_COMMAND_TYPE',
            `Unknown command type: ${envelope.commandType}`,
            requestId,
            commandTypeText,
          ),
        );
        return;
      }
      fields = validate(definition.schema, envelope.command) as Record<string, unknown>;
    } catch (error) {
      const message = validationMessage(error);
      if (message === undefined) throw error;
      send(res, failed(400, 'COMMAND_VALIDATION_ERROR', message, requestId, commandTypeText));
      return;
    }
    const { commandType } = definition;

    // 3. Authorise: the role here, ownership in the decider.
    if (!hasAnyRole(principal.roles, COMMAND_ROLES)) {
      send(
        res,
        failed(403, 'COMMAND_FORBIDDEN', `${commandType} requires the role Member.`, requestId, commandType),
      );
      return;
    }

    // 4. A repeated requestId answers what it answered first.
    const aggregateId = String(fields.aggregateRootId);
    const fingerprint = CommandIdempotency.fingerprint(commandType, aggregateId);
    if (requestId) {
      const recalled = await deps.idempotency.recall(requestId, fingerprint);
      if (recalled.kind === 'replay') return send(res, recalled.answer);
      if (recalled.kind === 'mismatch') {
        const message = `requestId ${requestId} was already used for another command`;
        return send(res, failed(409, 'DUPLICATE_REQUEST_ID', message, requestId, commandType));
      }
    }

    // 5. Run it on the aggregate.
    let answer: CommandAnswer;
    try {
      const outcome = await deps.commands.handle(fantasyTeamDecider, {
        aggregateId,
        command: definition.toDomain(fields),
        expectedVersion: envelope.expectedVersion,
        context: { now: new Date(), actorUserId: principal.userId, actorRoles: principal.roles },
        metadata: { actorUserId: principal.userId, requestId, correlationId: req.requestId },
      });
      if (outcome.accepted) answer = succeeded(requestId, commandType, outcome.events.length);
      else if (outcome.kind === 'forbidden')
        answer = failed(403, 'COMMAND_FORBIDDEN', outcome.message, requestId, commandType);
      else answer = failed(400, 'COMMAND_VALIDATION_ERROR', outcome.message, requestId, commandType);
    } catch (error) {
      if (error instanceof ConcurrencyConflictError) {
        const message = `Expected version ${error.expectedVersion}, but the team is at version ${error.actualVersion}`;
        answer = failed(409, 'CONCURRENCY_CONFLICT', message, requestId, commandType);
      } else if (error instanceof AggregateBusyError) {
        const message = 'The team is busy with another command. Retry shortly.';
        answer = { ...failed(503, 'AGGREGATE_BUSY', message, requestId, commandType), retryAfterSeconds: 1 };
      } else {
        throw error;
      }
    }
    send(res, requestId ? await deps.idempotency.remember(requestId, fingerprint, answer) : answer);
  };

  routes.add('post', '/api/command', authenticate(deps.passport, 'problem'), handle);
}
