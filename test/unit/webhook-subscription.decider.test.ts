import { fold } from '../../shared/domain/decider';
import { webhookSubscriptionDecider } from '../../shared/domain/webhook-subscription/webhook-subscription.decider';
import type { WebhookSubscriptionEvent } from '../../shared/domain/webhook-subscription/webhook-subscription.events';
import { WEBHOOK_MESSAGES } from '../../shared/domain/webhook-subscription/webhook-subscription.messages';

const context = { now: new Date('2026-11-24T08:00:00.000Z'), actorUserId: 'admin', actorRoles: ['Admin'] };
const created: WebhookSubscriptionEvent = {
  type: 'WebhookSubscriptionCreatedEvent',
  data: {
    url: 'https://x.example/',
    eventTypes: ['*'],
    description: null,
    at: context.now.toISOString(),
    byUserId: 'admin',
  },
};
const given = (...events: WebhookSubscriptionEvent[]) => fold(webhookSubscriptionDecider, events);

describe('The webhook subscription decider', () => {
  it('When a subscription is created, then its event carries no secret', () => {
    const decision = webhookSubscriptionDecider.decide(
      {
        type: 'CreateWebhookSubscription',
        data: { url: 'https://x.example/', eventTypes: ['*'], description: null },
      },
      null,
      context,
    );
    expect(decision).toEqual({ accepted: true, events: [created] });
    expect(JSON.stringify(decision)).not.toMatch(/secret|whsec/i);
  });

  it('When an update names nothing, then it is refused', () => {
    const decision = webhookSubscriptionDecider.decide(
      { type: 'UpdateWebhookSubscription', data: {} },
      given(created),
      context,
    );
    expect(decision).toEqual({ accepted: false, kind: 'invalid', message: WEBHOOK_MESSAGES.nothingToUpdate });
  });

  it('When a disabled subscription is asked for a replay, then it is refused', () => {
    const disabled: WebhookSubscriptionEvent = {
      type: 'WebhookSubscriptionDisabledEvent',
      data: { reason: null, automatic: true, at: context.now.toISOString(), byUserId: 'admin' },
    };
    const decision = webhookSubscriptionDecider.decide(
      { type: 'ReplayWebhookEvents', data: { from: '2026-11-24T07:00:00.000Z', replayId: 'r' } },
      given(created, disabled),
      context,
    );
    expect(decision).toMatchObject({ accepted: false, message: WEBHOOK_MESSAGES.disabledReplay });
  });

  it('When a subscription is deleted, then every later command is refused', () => {
    const deleted: WebhookSubscriptionEvent = {
      type: 'WebhookSubscriptionDeletedEvent',
      data: { at: context.now.toISOString(), byUserId: 'admin' },
    };
    const decision = webhookSubscriptionDecider.decide(
      { type: 'EnableWebhookSubscription', data: {} },
      given(created, deleted),
      context,
    );
    expect(decision).toMatchObject({ accepted: false, message: WEBHOOK_MESSAGES.deleted });
  });
});
