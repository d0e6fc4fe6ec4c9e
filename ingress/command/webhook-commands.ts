import { randomUUID } from 'node:crypto';

import { serviceUnavailable } from '../../shared/errors';
import { type CommandOutcome, refused, SECRET_NOT_REPEATED } from '../../shared/event-store/command-answer';
import type { CommandIdempotency, CommandRequestKey } from '../../shared/event-store/command-idempotency';
import { AppendOutcomeUnknownError } from '../../shared/event-store/errors';
import type { EventStore } from '../../shared/event-store/event-store';
import type { CommandHandler, CommandInput } from '../../shared/event-store/handle-command';
import { trimmedThrough } from '../../shared/event-stream/log-retention';
import type { RedisClient } from '../../shared/redis/connections';
import type { Keys } from '../../shared/redis/keys';
import { hasAnyRole, lacksRolesMessage } from '../../shared/roles';
import { userDecider } from '../../shared/user/user.decider';
import {
  newSigningSecret,
  SECRETS_FIELD,
  type WebhookSecrets,
} from '../../shared/webhook-subscription/webhook-secrets';
import type { WebhookCommandDefinition } from '../../shared/webhook-subscription/webhook-subscription.commands';
import type { WebhookSubscriptionCommand } from '../../shared/webhook-subscription/webhook-subscription.commands';
import { webhookSubscriptionDecider } from '../../shared/webhook-subscription/webhook-subscription.decider';
import { WEBHOOK_MESSAGES } from '../../shared/webhook-subscription/webhook-subscription.messages';
import { answerOnce, type CommandRequest, outcomeUnknownMessage, refusalOfStoreError } from './command-steps';
import { webhookTargetProblem } from './webhook-target';

/** How long a rotated-out secret keeps signing beside the new one. */
export const PREVIOUS_SECRET_SIGNS_MS = 24 * 60 * 60 * 1000;

export interface WebhookCommandCaller {
  readonly userId: string;
  readonly email: string;
  readonly roles: readonly string[];
}

/** One validated webhook command, as POST /api/command received it. */
export type WebhookCommandRequest = CommandRequest<WebhookCommandDefinition>;

export interface WebhookCommandServices {
  readonly commands: CommandHandler;
  readonly store: EventStore;
  readonly idempotency: CommandIdempotency;
  readonly redis: RedisClient;
  readonly keys: Keys;
  readonly webhookSecrets: WebhookSecrets;
  readonly webhookSettings: { readonly allowPrivateTargets: boolean };
}

/**
 * Runs one webhook command for its caller: checks the role (Admin), answers a repeated requestId
 * with its first outcome (without the secret), checks the target URL, makes and seals a signing
 * secret for Create and Rotate, and runs the command on the subscription. The new secret is in
 * this answer only: not in the event, not in the remembered answer, not in a log line.
 */
export function runWebhookCommand(
  services: WebhookCommandServices,
  caller: WebhookCommandCaller,
  request: WebhookCommandRequest,
): Promise<CommandOutcome> {
  const { commandType, roles } = request.definition;
  // 1. Authorise.
  if (!hasAnyRole(caller.roles, roles)) {
    return Promise.resolve(refused('COMMAND_FORBIDDEN', lacksRolesMessage(caller, commandType, roles)));
  }
  const aggregateId = String(request.fields.aggregateRootId).toLowerCase();
  // 2. A repeated requestId answers what it answered first (never the secret again).
  const key: CommandRequestKey | null = request.requestId
    ? { callerUserId: caller.userId, requestId: request.requestId, commandType, aggregateId }
    : null;
  return answerOnce(services.idempotency, key, () =>
    runOnSubscription(services, caller, request, aggregateId),
  );
}

interface Prepared {
  readonly command: WebhookSubscriptionCommand;
  /** The new secret, answered once. */
  readonly signingSecret?: string;
  readonly attachments?: Readonly<Record<string, string>>;
  /** Rotation decides on the secrets it read: the append is fenced on that version. */
  readonly readAtVersion?: number;
}

/** Step 3: the domain command, the URL checked and the secrets sealed, before the lock is taken. */
async function prepare(
  services: WebhookCommandServices,
  { definition, fields }: WebhookCommandRequest,
  aggregateId: string,
  now: Date,
): Promise<Prepared | CommandOutcome> {
  const url = fields.url as string | undefined;
  if (url !== undefined) {
    const problem = webhookTargetProblem(url, services.webhookSettings.allowPrivateTargets);
    if (problem) return refused('COMMAND_VALIDATION_ERROR', problem);
  }
  switch (definition.commandType) {
    case 'CreateWebhookSubscription': {
      const signingSecret = newSigningSecret();
      return {
        command: {
          type: 'CreateWebhookSubscription',
          data: {
            url: String(url),
            eventTypes: fields.eventTypes as string[],
            description: (fields.description as string | null) || null,
          },
        },
        signingSecret,
        attachments: {
          [SECRETS_FIELD]: services.webhookSecrets.seal(aggregateId, {
            current: signingSecret,
            previous: null,
          }),
        },
      };
    }
    case 'UpdateWebhookSubscription':
      return {
        command: {
          type: 'UpdateWebhookSubscription',
          data: {
            ...(url !== undefined ? { url } : {}),
            ...(fields.eventTypes !== undefined ? { eventTypes: fields.eventTypes as string[] } : {}),
            ...(fields.description !== undefined
              ? { description: (fields.description as string | null) || null }
              : {}),
          },
        },
      };
    case 'RotateWebhookSecret': {
      const record = await services.store.loadRecordWith(
        webhookSubscriptionDecider.aggregateType,
        aggregateId,
        webhookSubscriptionDecider.initialState,
        SECRETS_FIELD,
      );
      const signingSecret = newSigningSecret();
      // A secret sealed under a key replaced since (docs/operators.md, "Rotating JWT_SECRET") cannot
      // sign anything any more: the rotation is how its subscription gets a working one.
      const previous =
        record.attachment === null
          ? null
          : (services.webhookSecrets.openIfReadable(aggregateId, record.attachment)?.current ?? null);
      return {
        command: {
          type: 'RotateWebhookSecret',
          data: { previousSecretUntil: new Date(now.getTime() + PREVIOUS_SECRET_SIGNS_MS).toISOString() },
        },
        signingSecret,
        attachments: {
          [SECRETS_FIELD]: services.webhookSecrets.seal(aggregateId, { current: signingSecret, previous }),
        },
        readAtVersion: record.version,
      };
    }
    case 'DisableWebhookSubscription':
      return {
        command: {
          type: 'DisableWebhookSubscription',
          data: { reason: (fields.reason as string | null) || null, automatic: false },
        },
      };
    case 'EnableWebhookSubscription':
      return { command: { type: 'EnableWebhookSubscription', data: {} } };
    case 'DeleteWebhookSubscription':
      return { command: { type: 'DeleteWebhookSubscription', data: {} } };
    case 'ReplayWebhookEvents': {
      const from = new Date(String(fields.from));
      // LOG_RETENTION: a replay from before trimmed entries would skip them silently; refused instead.
      const trimmed = await trimmedThrough(services.redis, services.keys);
      if (trimmed.some((through) => through.ms >= from.getTime())) {
        return refused('COMMAND_VALIDATION_ERROR', WEBHOOK_MESSAGES.replayFromTrimmed);
      }
      return {
        command: {
          type: 'ReplayWebhookEvents',
          data: { from: from.toISOString(), replayId: randomUUID() },
        },
      };
    }
    default: {
      const _exhaustive: never = definition.commandType;
      return _exhaustive;
    }
  }
}

async function runOnSubscription(
  services: WebhookCommandServices,
  caller: WebhookCommandCaller,
  request: WebhookCommandRequest,
  aggregateId: string,
): Promise<CommandOutcome> {
  const now = new Date();
  const prepared = await prepare(services, request, aggregateId, now);
  if ('kind' in prepared) return prepared;
  // A rotation read the secret at some version: a rotation in between would drop a secret, so the
  // append is fenced on that version (unless the caller named one of its own).
  const expectedVersion = request.expectedVersion || prepared.readAtVersion || 0;
  // The caller's account version now: a take-over records it, and the workers count the owner's
  // lapses after it by its account's versions, not by this process's clock (ADR 0038). Read after
  // the authentication, so a change in between counts against the ownership, never for it.
  const actorAccountVersion = Number(
    (await services.redis.hget(
      services.keys.aggregateRecord(userDecider.aggregateType, caller.userId),
      'version',
    )) ?? 0,
  );
  const input: CommandInput<WebhookSubscriptionCommand> = {
    aggregateId,
    command: prepared.command,
    expectedVersion,
    context: {
      now,
      actorUserId: caller.userId,
      actorRoles: caller.roles,
      actorEmail: caller.email,
      actorAccountVersion,
    },
    metadata: {
      actorUserId: caller.userId,
      requestId: request.requestId,
      correlationId: randomUUID(),
      traceId: request.traceId,
    },
    ...(request.requestId ? { requestId: request.requestId } : {}),
    ...(prepared.attachments ? { attachments: prepared.attachments } : {}),
  };

  // 4. The delivery engine finds subscriptions in this set; added before the append, so a created
  //    subscription is never missed (an id whose create failed is skipped: its record is empty).
  if (request.definition.commandType === 'CreateWebhookSubscription') {
    await services.redis.sadd(services.keys.webhookSubscriptions(), aggregateId);
  }

  // 5. Run it on the subscription.
  let handled;
  try {
    handled = await services.commands.handle(webhookSubscriptionDecider, input);
  } catch (error) {
    if (error instanceof AppendOutcomeUnknownError) {
      throw serviceUnavailable(
        outcomeUnknownMessage(request.requestId, 'webhook subscription', error.reason),
      );
    }
    const refusal = refusalOfStoreError(error, 'webhook subscription');
    if (!refusal) throw error;
    return refusal;
  }
  if (!handled.accepted) {
    return refused(
      handled.kind === 'forbidden' ? 'COMMAND_FORBIDDEN' : 'COMMAND_VALIDATION_ERROR',
      handled.message,
    );
  }
  // A retry of a request that was applied already: the secret it made is sealed; not answered again.
  if (handled.replayed) {
    return {
      kind: 'succeeded',
      eventCount: handled.events.length,
      version: handled.version,
      ...(prepared.signingSecret !== undefined ? { note: SECRET_NOT_REPEATED } : {}),
    };
  }
  return {
    kind: 'succeeded',
    eventCount: handled.events.length,
    version: handled.version,
    ...(prepared.signingSecret !== undefined ? { signingSecret: prepared.signingSecret } : {}),
  };
}
