import { accept, type Decider, reject } from '../decider';
import type { WebhookSubscriptionCommand } from './webhook-subscription.commands';
import type { WebhookSubscriptionEvent } from './webhook-subscription.events';
import { WEBHOOK_MESSAGES } from './webhook-subscription.messages';

export type WebhookSubscriptionStatus = 'enabled' | 'disabled' | 'deleted';

/** A subscription as folded from its events; null before it is created. */
export type WebhookSubscriptionState = {
  readonly url: string;
  readonly eventTypes: readonly string[];
  readonly description: string | null;
  readonly status: WebhookSubscriptionStatus;
  readonly createdAt: string;
  readonly updatedAt: string;
  /** Set while a rotated-out secret still signs (ISO 8601), else null. */
  readonly previousSecretUntil: string | null;
  /** The last replay asked for: the delivery engine rewinds each partition once per replayId. */
  readonly replay: { readonly replayId: string; readonly from: string } | null;
} | null;

type Existing = NonNullable<WebhookSubscriptionState>;

export const webhookSubscriptionDecider: Decider<
  WebhookSubscriptionState,
  WebhookSubscriptionCommand,
  WebhookSubscriptionEvent
> = {
  aggregateType: 'webhook-subscription',
  initialState: null,

  decide(command, state, context) {
    const at = context.now.toISOString();
    const byUserId = context.actorUserId;
    if (command.type === 'CreateWebhookSubscription') {
      if (state !== null) return reject(WEBHOOK_MESSAGES.alreadyExists);
      return accept({ type: 'WebhookSubscriptionCreatedEvent', data: { ...command.data, at, byUserId } });
    }
    if (state === null) return reject(WEBHOOK_MESSAGES.nonExistent);
    if (state.status === 'deleted') return reject(WEBHOOK_MESSAGES.deleted);
    switch (command.type) {
      case 'UpdateWebhookSubscription': {
        const { url, eventTypes, description } = command.data;
        if (url === undefined && eventTypes === undefined && description === undefined) {
          return reject(WEBHOOK_MESSAGES.nothingToUpdate);
        }
        return accept({
          type: 'WebhookSubscriptionUpdatedEvent',
          data: {
            url: url ?? state.url,
            eventTypes: eventTypes ?? state.eventTypes,
            description: description === undefined ? state.description : description,
            at,
            byUserId,
          },
        });
      }
      case 'RotateWebhookSecret':
        return accept({ type: 'WebhookSecretRotatedEvent', data: { ...command.data, at, byUserId } });
      case 'DisableWebhookSubscription':
        if (state.status === 'disabled') return reject(WEBHOOK_MESSAGES.alreadyDisabled);
        return accept({ type: 'WebhookSubscriptionDisabledEvent', data: { ...command.data, at, byUserId } });
      case 'EnableWebhookSubscription':
        if (state.status === 'enabled') return reject(WEBHOOK_MESSAGES.alreadyEnabled);
        return accept({ type: 'WebhookSubscriptionEnabledEvent', data: { at, byUserId } });
      case 'DeleteWebhookSubscription':
        return accept({ type: 'WebhookSubscriptionDeletedEvent', data: { at, byUserId } });
      case 'ReplayWebhookEvents':
        if (state.status !== 'enabled') return reject(WEBHOOK_MESSAGES.disabledReplay);
        if (Date.parse(command.data.from) > context.now.getTime()) {
          return reject(WEBHOOK_MESSAGES.replayFromFuture);
        }
        return accept({ type: 'WebhookReplayRequestedEvent', data: { ...command.data, at, byUserId } });
      default: {
        const _exhaustive: never = command;
        return _exhaustive;
      }
    }
  },

  evolve(state, event) {
    if (event.type === 'WebhookSubscriptionCreatedEvent') {
      const { url, eventTypes, description, at } = event.data;
      return {
        url,
        eventTypes,
        description,
        status: 'enabled',
        createdAt: at,
        updatedAt: at,
        previousSecretUntil: null,
        replay: null,
      };
    }
    if (state === null) return state;
    const updated: Existing = { ...state, updatedAt: event.data.at };
    switch (event.type) {
      case 'WebhookSubscriptionUpdatedEvent': {
        const { url, eventTypes, description } = event.data;
        return { ...updated, url, eventTypes, description };
      }
      case 'WebhookSecretRotatedEvent':
        return { ...updated, previousSecretUntil: event.data.previousSecretUntil };
      case 'WebhookSubscriptionDisabledEvent':
        return { ...updated, status: 'disabled' };
      case 'WebhookSubscriptionEnabledEvent':
        return { ...updated, status: 'enabled' };
      case 'WebhookSubscriptionDeletedEvent':
        return { ...updated, status: 'deleted' };
      case 'WebhookReplayRequestedEvent':
        return { ...updated, replay: { replayId: event.data.replayId, from: event.data.from } };
      default: {
        const _exhaustive: never = event;
        return _exhaustive;
      }
    }
  },
};
