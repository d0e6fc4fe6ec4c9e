import type { RequestHandler, Response } from 'express';
import Joi from 'joi';

import { fantasyTeamDecider } from '../../shared/domain/fantasy-team/fantasy-team.decider';
import { AggregateBusyError, ConcurrencyConflictError } from '../../shared/event-store/errors';
import type { CommandHandler } from '../../shared/event-store/handle-command';
import { AppError } from '../../shared/errors';
import { hasAnyRole, type Role } from '../../shared/roles';
import { GUID_FORMAT_MESSAGE, guid, isGuid, validate } from '../../shared/validation';
import { authenticate } from '../auth/authenticate';
import type { Authentication } from '../auth/passport';
import { REALM } from '../auth/passport';
import type { RouteTable } from '../http/route-table';
import { COMMAND_DEFINITIONS, type CommandDefinition } from './command-definitions';
import { failed, succeeded, type CommandAnswer } from './command-response';
import { CommandIdempotency } from './idempotency';
import { authenticatedPrincipal } from '../auth/principal';
import { jsonObjectBody } from '../http/json-body';
import type { Metrics } from '../../shared/metrics/metrics';
import { labelOperation } from '../metrics/http-metrics';

/** The roles that may send commands at all; ownership is the decider's check. */
export const COMMAND_ROLES: readonly Role[] = ['Member'];

/** Every command's envelope; the command's own fields are its definition's schema. */
const envelopeSchema = Joi.object({
  commandType: Joi.string().max(100).required(),
  command: Joi.object().required(),
  expectedVersion: Joi.number()
    .strict()
    .integer()
    .min(0)
    .default(0)
    .description("Optimistic concurrency: above 0, the command runs only at the team's version."),
  // Checked before the envelope, to answer the spec's own message (section 7, rule 1).
  requestId: guid()
    .allow(null)
    .description(
      'Echoed in the answer; the same command with the same requestId within 24 h is answered once.',
    ),
});

/**
 * The whole request body of one command type: the envelope with its commandType fixed and its
 * definition's schema as `command`. The route validates the same two parts one after the other
 * (to word each error); the OpenAPI document shows them joined.
 */
export function commandRequestSchema(definition: CommandDefinition): Joi.ObjectSchema {
  return envelopeSchema.keys({
    commandType: Joi.string().valid(definition.commandType).required(),
    command: definition.schema.required(),
  });
}

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

/**
 * POST /api/command: authenticate (Bearer), validate the envelope and the command, check the
 * role, replay a known requestId, run the command on its aggregate, answer in the spec's 2.6 shape.
 */
export function registerCommandRoutes(
  routes: RouteTable,
  deps: {
    authentication: Authentication;
    commands: CommandHandler;
    idempotency: CommandIdempotency;
    metrics: Metrics;
  },
): void {
  const definitions = new Map<string, CommandDefinition>(COMMAND_DEFINITIONS.map((d) => [d.commandType, d]));
  const isKnown = (commandType: string) => definitions.has(commandType);

  /** Every answer in the 2.6 shape goes out here, so each is counted by its errorCode once. */
  const send = (res: Response, answer: CommandAnswer): void => {
    const { commandType, errorCode } = answer.body;
    deps.metrics.recordCommandAnswer(
      commandType !== null && isKnown(commandType) ? commandType : null,
      errorCode,
    );
    if (answer.retryAfterSeconds !== undefined)
      res.setHeader('Retry-After', String(answer.retryAfterSeconds));
    res.status(answer.status).json(answer.body);
  };

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
      send(res, failed('COMMAND_VALIDATION_ERROR', GUID_FORMAT_MESSAGE, null, commandTypeText));
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
      send(res, failed('COMMAND_VALIDATION_ERROR', message, requestId, commandTypeText));
      return;
    }
    const { commandType } = definition;

    // 3. Authorise: the role here, ownership in the decider.
    if (!hasAnyRole(principal.roles, COMMAND_ROLES)) {
      send(
        res,
        failed('COMMAND_FORBIDDEN', `${commandType} requires the role Member.`, requestId, commandType),
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
        return send(res, failed('DUPLICATE_REQUEST_ID', message, requestId, commandType));
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
        // A retry whose first attempt appended but lost its answer gets that attempt's events back.
        ...(requestId ? { requestId } : {}),
      });
      if (outcome.accepted) answer = succeeded(requestId, commandType, outcome.events.length);
      else if (outcome.kind === 'forbidden')
        answer = failed('COMMAND_FORBIDDEN', outcome.message, requestId, commandType);
      else answer = failed('COMMAND_VALIDATION_ERROR', outcome.message, requestId, commandType);
    } catch (error) {
      if (error instanceof ConcurrencyConflictError && envelope.expectedVersion > 0) {
        const message = `Expected version ${error.expectedVersion}, but the team is at version ${error.actualVersion}`;
        answer = failed('CONCURRENCY_CONFLICT', message, requestId, commandType);
      } else if (error instanceof ConcurrencyConflictError) {
        // The caller expected no version: the append's fence refused a decision made on a version
        // that another command moved on from after this one's lock expired. Nothing was written; a
        // retry is decided on the team as it is then.
        const message =
          'The team changed while this command was being handled; nothing was written. Retry shortly.';
        answer = { ...failed('AGGREGATE_BUSY', message, requestId, commandType), retryAfterSeconds: 1 };
      } else if (error instanceof AggregateBusyError) {
        const message = 'The team is busy with another command. Retry shortly.';
        answer = { ...failed('AGGREGATE_BUSY', message, requestId, commandType), retryAfterSeconds: 1 };
      } else {
        throw error;
      }
    }
    send(res, requestId ? await deps.idempotency.remember(requestId, fingerprint, answer) : answer);
  };

  routes.add(
    'post',
    '/api/command',
    labelOperation(['commandType'], isKnown),
    authenticate(deps.authentication, 'problem'),
    handle,
  );
}
