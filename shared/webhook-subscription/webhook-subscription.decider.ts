import {
  accept,
  type Decider,
  type Decision,
  type DecisionContext,
  forbid,
  reject,
  SERVICE_ACTOR_ID,
} from '../event-store/decider';
import type {
  AnyWebhookSubscriptionCommand,
  SuspendWebhookSubscription,
} from './webhook-subscription.commands';
import type { WebhookSubscriptionEvent } from './webhook-subscription.events';
import { WEBHOOK_MESSAGES } from './webhook-subscription.messages';

/** `suspended`: stopped by the service because its owner lost the authority (see ownerUserId). */
export type WebhookSubscriptionStatus = 'enabled' | 'disabled' | 'suspended' | 'deleted';

/** A subscription as folded from its events; null before it is created. */
export type WebhookSubscriptionState = {
  readonly url: string;
  readonly eventTypes: readonly string[];
  readonly description: string | null;
  readonly status: WebhookSubscriptionStatus;
  /** Why it is disabled or suspended (the Admin's reason, or the owner's change); else null. */
  readonly statusReason: string | null;
  /** The Admin who created it. */
  readonly createdBy: string;
  /**
   * Whose authority it delivers under: its creator, then the last Admin who enabled it, changed
   * where it delivers or what (url, eventTypes), or rotated its secret. Deliveries stop when that
   * account is disabled, erased or loses Admin.
   */
  readonly ownerUserId: string;
  /** Since when (ISO 8601): shown, and compared only for an ownership without ownerSinceVersion. */
  readonly ownerSince: string;
  /**
   * The version of the owner's account stream when it took the subscription over: a lapse of the
   * account at a later version counts against it (ADR 0038). null: taken over before this was
   * recorded; then ownerSince is compared with the account's event times, as before.
   */
  readonly ownerSinceVersion: number | null;
  readonly createdAt: string;
  readonly updatedAt: string;
  /** Set while a rotated-out secret still signs (ISO 8601), else null. */
  readonly previousSecretUntil: string | null;
  /** The last replay asked for: the delivery engine rewinds each partition once per replayId. */
  readonly replay: { readonly replayId: string; readonly from: string } | null;
} | null;

type Existing = NonNullable<WebhookSubscriptionState>;

/** The ownership an Admin takes by enabling, redirecting or re-keying a subscription. */
function takenOverBy(event: {
  readonly at: string;
  readonly byUserId: string;
  readonly byUserVersion?: number;
}): {
  ownerUserId: string;
  ownerSince: string;
  ownerSinceVersion: number | null;
} {
  return {
    ownerUserId: event.byUserId,
    ownerSince: event.at,
    ownerSinceVersion: event.byUserVersion ?? null,
  };
}

function sameEventTypes(left: readonly string[], right: readonly string[]): boolean {
  const rightTypes = new Set(right);
  return left.length === right.length && left.every((type) => rightTypes.has(type));
}

/**
 * The service's suspension: only as the service itself (no client command reaches it), only of an
 * enabled subscription still owned by the account named. A second suspension is refused, so
 * replicas racing to suspend write one event.
 */
function decideSuspension(
  command: SuspendWebhookSubscription,
  state: Existing,
  context: DecisionContext,
): Decision<WebhookSubscriptionEvent> {
  if (context.actorUserId !== SERVICE_ACTOR_ID) return forbid(WEBHOOK_MESSAGES.suspendByServiceOnly);
  if (state.ownerUserId !== command.data.ownerUserId) return reject(WEBHOOK_MESSAGES.suspendOtherOwner);
  if (state.status === 'suspended') return reject(WEBHOOK_MESSAGES.alreadySuspended);
  if (state.status !== 'enabled') return reject(WEBHOOK_MESSAGES.suspendNotEnabled);
  return accept({
    type: 'WebhookSubscriptionSuspendedEvent',
    data: { ...command.data, at: context.now.toISOString(), byUserId: context.actorUserId },
  });
}

export const webhookSubscriptionDecider: Decider<
  WebhookSubscriptionState,
  AnyWebhookSubscriptionCommand,
  WebhookSubscriptionEvent
> = {
  aggregateType: 'webhook-subscription',
  initialState: null,
  // 2: statusReason, createdBy, ownerUserId and ownerSince joined the state.
  // 3: an update of url or eventTypes, and a rotation, pass the ownership to their Admin.
  // 4: ownerSinceVersion joined the state.
  stateVersion: 4,

  decide(command, state, context) {
    const at = context.now.toISOString();
    const byUserId = context.actorUserId;
    // Recorded by what takes the subscription over (ADR 0038).
    const byOwner =
      context.actorAccountVersion === undefined
        ? { at, byUserId }
        : { at, byUserId, byUserVersion: context.actorAccountVersion };
    if (command.type === 'CreateWebhookSubscription') {
      if (state !== null) return reject(WEBHOOK_MESSAGES.alreadyExists);
      return accept({ type: 'WebhookSubscriptionCreatedEvent', data: { ...command.data, ...byOwner } });
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
            ...byOwner,
          },
        });
      }
      case 'RotateWebhookSecret':
        return accept({ type: 'WebhookSecretRotatedEvent', data: { ...command.data, ...byOwner } });
      case 'DisableWebhookSubscription':
        if (state.status === 'disabled') return reject(WEBHOOK_MESSAGES.alreadyDisabled);
        return accept({ type: 'WebhookSubscriptionDisabledEvent', data: { ...command.data, at, byUserId } });
      case 'SuspendWebhookSubscription':
        return decideSuspension(command, state, context);
      case 'EnableWebhookSubscription':
        if (state.status === 'enabled') return reject(WEBHOOK_MESSAGES.alreadyEnabled);
        return accept({ type: 'WebhookSubscriptionEnabledEvent', data: byOwner });
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
      const { url, eventTypes, description, at, byUserId, byUserVersion } = event.data;
      return {
        url,
        eventTypes,
        description,
        status: 'enabled',
        statusReason: null,
        createdBy: byUserId,
        ownerUserId: byUserId,
        ownerSince: at,
        ownerSinceVersion: byUserVersion ?? null,
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
        const redirected = url !== state.url || !sameEventTypes(eventTypes, state.eventTypes);
        // Whoever chose where it delivers, or what, answers for it: else an Admin could point
        // another's subscription at a receiver of their own and keep it delivering there after
        // their own account is disabled. A new description alone changes neither.
        return {
          ...updated,
          url,
          eventTypes,
          description,
          ...(redirected ? takenOverBy(event.data) : {}),
        };
      }
      case 'WebhookSecretRotatedEvent':
        // The rotating Admin is answered the new secret: whoever holds it can verify, so can
        // receive, the deliveries. The subscription delivers under that Admin's authority.
        return {
          ...updated,
          previousSecretUntil: event.data.previousSecretUntil,
          ...takenOverBy(event.data),
        };
      case 'WebhookSubscriptionDisabledEvent':
        return { ...updated, status: 'disabled', statusReason: event.data.reason };
      case 'WebhookSubscriptionSuspendedEvent':
        return { ...updated, status: 'suspended', statusReason: event.data.reason };
      case 'WebhookSubscriptionEnabledEvent':
        // The enabling Admin takes the subscription over: it delivers under that Admin's authority.
        return { ...updated, status: 'enabled', statusReason: null, ...takenOverBy(event.data) };
      case 'WebhookSubscriptionDeletedEvent':
        return { ...updated, status: 'deleted' };
      case 'WebhookReplayRequestedEvent':
        // No take-over: a replay sends again, to the receiver the owner answers for and signed
        // with the secret the owner holds, events of the types the owner chose, and only while
        // the owner qualifies. The replaying Admin learns nothing new from it.
        return { ...updated, replay: { replayId: event.data.replayId, from: event.data.from } };
      default: {
        const _exhaustive: never = event;
        return _exhaustive;
      }
    }
  },
};
