import type { RequestHandler, Response } from 'express';

import { AppError } from '../../shared/errors';
import { type CommandAnswer, commandAnswer } from '../../shared/event-store/command-answer';
import { sendJsonText } from '../../shared/http/json-answer';
import { jsonBody } from '../../shared/http/request-body';
import type { RouteTable } from '../../shared/http/route-table';
import type { Metrics } from '../../shared/metrics/metrics';
import { authenticate } from '../auth/authenticate';
import { CHALLENGES } from '../auth/challenge';
import type { Authentication } from '../auth/passport';
import { authenticatedPrincipal } from '../auth/principal';
import { jsonObjectBody } from '../http/json-body';
import { labelOperation } from '../metrics/http-metrics';
import { type AccountCommandServices, runAccountCommand } from './account-commands';
import { isKnownCommandType, parseCommandRequest } from './command-request';
import { runTeamCommand, type TeamCommandServices } from './run-team-command';
import { runWebhookCommand, type WebhookCommandServices } from './webhook-commands';

/** Where commands are sent. */
export const COMMAND_PATH = '/api/command';

/**
 * POST /api/command: authenticate (Bearer), validate the envelope and the command, run it by its
 * family (runTeamCommand: the role, a replayed requestId, the owner's team bound, the team;
 * runAccountCommand: the role, a replayed requestId, the account; runWebhookCommand: Admin, a
 * replayed requestId, the subscription and its sealed secret), and answer its outcome in the
 * spec's 2.6 shape.
 */
export function registerCommandRoutes(
  routes: RouteTable,
  deps: TeamCommandServices &
    AccountCommandServices &
    WebhookCommandServices & {
      authentication: Authentication;
      metrics: Metrics;
      bodyLimitBytes: number;
    },
): void {
  /** Every answer in the 2.6 shape goes out here, so each is counted by its errorCode once. */
  const send = (res: Response, answer: CommandAnswer): void => {
    const { commandType, errorCode } = answer.body;
    deps.metrics.recordCommandAnswer(
      commandType !== null && isKnownCommandType(commandType) ? commandType : null,
      errorCode,
    );
    if (answer.retryAfterSeconds !== undefined)
      res.setHeader('Retry-After', String(answer.retryAfterSeconds));
    sendJsonText(res, answer.status, JSON.stringify(answer.body));
  };

  const handle: RequestHandler = async (req, res) => {
    const principal = authenticatedPrincipal(req);
    if (principal.authenticationType !== 'Bearer') {
      res.setHeader('WWW-Authenticate', CHALLENGES.Bearer);
      throw new AppError('UNAUTHORIZED', 'Commands accept Bearer authentication only.', 401);
    }
    const parsed = parseCommandRequest(jsonObjectBody(req));
    if (!parsed.valid) return send(res, commandAnswer(parsed.refusal, parsed.requestId, parsed.commandType));
    const { command } = parsed;
    const traceId = req.requestId;
    const outcome =
      command.family === 'team'
        ? await runTeamCommand(deps, principal, { ...command.request, traceId })
        : command.family === 'account'
          ? await runAccountCommand(
              deps,
              { ...principal, clientAddress: req.ip ?? 'unknown' },
              { ...command.request, traceId },
            )
          : await runWebhookCommand(deps, principal, { ...command.request, traceId });
    send(res, commandAnswer(outcome, command.request.requestId, command.request.definition.commandType));
  };

  routes.add(
    'post',
    COMMAND_PATH,
    labelOperation(['commandType'], isKnownCommandType),
    authenticate(deps.authentication, 'problem'),
    jsonBody(deps.bodyLimitBytes),
    handle,
  );
}
