import { fold, SERVICE_ACTOR_ID } from '../../shared/event-store/decider';
import type { ActiveUser, UserState } from '../../shared/user/user.decider';
import type { AnyWebhookSubscriptionCommand } from '../../shared/webhook-subscription/webhook-subscription.commands';
import { webhookSubscriptionDecider } from '../../shared/webhook-subscription/webhook-subscription.decider';
import type { WebhookSubscriptionEvent } from '../../shared/webhook-subscription/webhook-subscription.events';
import {
  type OwnerLapse,
  ownerLapseReason,
  WEBHOOK_MESSAGES,
} from '../../shared/webhook-subscription/webhook-subscription.messages';
import { lapsesAmong, lapseSince, ownerLapse } from '../../workers/webhooks/owner-authority';
import { decisionContext, spec } from '../helpers/decider-spec';

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

describe('A webhook subscription and its owner', () => {
  const subscription = spec(webhookSubscriptionDecider);
  const at = '2026-11-24T08:00:00.000Z';
  const OWNER = '11111111-1111-5111-8111-111111111111';
  const OTHER_ADMIN = '22222222-2222-5222-8222-222222222222';
  const asService = decisionContext({ now: new Date(at), actorUserId: SERVICE_ACTOR_ID });
  const asOtherAdmin = decisionContext({ now: new Date(at), actorUserId: OTHER_ADMIN });
  const createdByOwner: WebhookSubscriptionEvent = {
    type: 'WebhookSubscriptionCreatedEvent',
    data: { url: 'https://x.example/', eventTypes: ['*'], description: null, at, byUserId: OWNER },
  };
  const reason = ownerLapseReason(OWNER, 'disabled');
  const suspend = (ownerUserId = OWNER): AnyWebhookSubscriptionCommand => ({
    type: 'SuspendWebhookSubscription',
    data: { ownerUserId, reason },
  });
  const suspended: WebhookSubscriptionEvent = {
    type: 'WebhookSubscriptionSuspendedEvent',
    data: { ownerUserId: OWNER, reason, at, byUserId: SERVICE_ACTOR_ID },
  };
  const enabledByOther: WebhookSubscriptionEvent = {
    type: 'WebhookSubscriptionEnabledEvent',
    data: { at, byUserId: OTHER_ADMIN },
  };

  it('When a subscription is created, then its creator owns it', () => {
    expect(fold(webhookSubscriptionDecider, [createdByOwner])).toMatchObject({
      createdBy: OWNER,
      ownerUserId: OWNER,
      ownerSince: at,
      status: 'enabled',
      statusReason: null,
    });
  });

  it('When the service suspends an enabled subscription of the owner, then it is suspended with the reason', () => {
    subscription.given([createdByOwner]).when(suspend(), asService).then([suspended]);
    expect(fold(webhookSubscriptionDecider, [createdByOwner, suspended])).toMatchObject({
      status: 'suspended',
      statusReason: 'Owner 11111111-1111-5111-8111-111111111111 was disabled',
      ownerUserId: OWNER,
    });
  });

  it('When a suspended subscription is suspended again (another replica), then it is refused', () => {
    subscription
      .given([createdByOwner, suspended])
      .when(suspend(), asService)
      .thenRejectedWith(WEBHOOK_MESSAGES.alreadySuspended);
  });

  it('When an Admin sends the suspension, then it is forbidden: only the service suspends', () => {
    subscription
      .given([createdByOwner])
      .when(suspend(), asOtherAdmin)
      .thenRejectedWith(WEBHOOK_MESSAGES.suspendByServiceOnly, 'forbidden');
  });

  it('When the suspension names an owner the subscription no longer has, then it is refused', () => {
    const disabled: WebhookSubscriptionEvent = {
      type: 'WebhookSubscriptionDisabledEvent',
      data: { reason: null, automatic: false, at, byUserId: OWNER },
    };
    subscription
      .given([createdByOwner, disabled, enabledByOther])
      .when(suspend(OWNER), asService)
      .thenRejectedWith(WEBHOOK_MESSAGES.suspendOtherOwner);
  });

  it('When a disabled subscription is to be suspended, then it is refused (it delivers nothing already)', () => {
    const disabled: WebhookSubscriptionEvent = {
      type: 'WebhookSubscriptionDisabledEvent',
      data: { reason: 'paused', automatic: false, at, byUserId: OWNER },
    };
    subscription
      .given([createdByOwner, disabled])
      .when(suspend(), asService)
      .thenRejectedWith(WEBHOOK_MESSAGES.suspendNotEnabled);
  });

  it('When an Admin enables a suspended subscription, then it is enabled and that Admin owns it, its creator kept', () => {
    subscription
      .given([createdByOwner, suspended])
      .when({ type: 'EnableWebhookSubscription', data: {} }, asOtherAdmin)
      .then([enabledByOther]);
    expect(fold(webhookSubscriptionDecider, [createdByOwner, suspended, enabledByOther])).toMatchObject({
      status: 'enabled',
      statusReason: null,
      createdBy: OWNER,
      ownerUserId: OTHER_ADMIN,
      ownerSince: at,
    });
  });

  const later = '2026-11-24T09:00:00.000Z';
  const updatedByOther = (data: {
    url?: string;
    eventTypes?: string[];
    description?: string | null;
  }): WebhookSubscriptionEvent => ({
    type: 'WebhookSubscriptionUpdatedEvent',
    data: {
      url: data.url ?? 'https://x.example/',
      eventTypes: data.eventTypes ?? ['*'],
      description: data.description ?? null,
      at: later,
      byUserId: OTHER_ADMIN,
    },
  });

  it.each([
    ['its url', { url: 'https://other.example/' }],
    ['its eventTypes', { eventTypes: ['UserCreatedEvent'] }],
  ])(
    'When another Admin changes %s, then that Admin owns it from then on, its creator kept',
    (_what, change) => {
      expect(fold(webhookSubscriptionDecider, [createdByOwner, updatedByOther(change)])).toMatchObject({
        createdBy: OWNER,
        ownerUserId: OTHER_ADMIN,
        ownerSince: later,
        status: 'enabled',
      });
    },
  );

  it('When another Admin changes only the description (or names the same url and types), then the owner stays', () => {
    const events = [createdByOwner, updatedByOther({ description: 'notes' })];
    expect(fold(webhookSubscriptionDecider, events)).toMatchObject({ ownerUserId: OWNER, ownerSince: at });
  });

  it('When another Admin rotates the secret, then that Admin owns it (they hold the secret that signs)', () => {
    const rotated: WebhookSubscriptionEvent = {
      type: 'WebhookSecretRotatedEvent',
      data: { previousSecretUntil: later, at: later, byUserId: OTHER_ADMIN },
    };
    expect(fold(webhookSubscriptionDecider, [createdByOwner, rotated])).toMatchObject({
      ownerUserId: OTHER_ADMIN,
      ownerSince: later,
    });
  });

  it('When another Admin asks for a replay, then the owner stays (same receiver, same secret)', () => {
    const replayed: WebhookSubscriptionEvent = {
      type: 'WebhookReplayRequestedEvent',
      data: { from: at, replayId: 'r1', at: later, byUserId: OTHER_ADMIN },
    };
    expect(fold(webhookSubscriptionDecider, [createdByOwner, replayed])).toMatchObject({
      ownerUserId: OWNER,
      ownerSince: at,
    });
  });

  it('When a deleted subscription is to be suspended, then it is refused', () => {
    const deleted: WebhookSubscriptionEvent = {
      type: 'WebhookSubscriptionDeletedEvent',
      data: { at, byUserId: OWNER },
    };
    subscription
      .given([createdByOwner, deleted])
      .when(suspend(), asService)
      .thenRejectedWith(WEBHOOK_MESSAGES.deleted);
  });
});

describe("A subscription owner's authority", () => {
  const since = '2026-11-24T08:00:00.000Z';
  /** An ownership recorded before versions were (ownerSinceVersion null): compared by time. */
  const ownership = { ownerUserId: 'u', ownerSince: since, ownerSinceVersion: null };
  const account = (overrides: Partial<ActiveUser> = {}): ActiveUser => ({
    userId: 'u',
    email: 'u@example.com',
    userName: 'u@example.com',
    userType: 'Human',
    roles: ['Admin'],
    firstName: null,
    lastName: null,
    emailVerified: false,
    createdAt: '2026-11-01T00:00:00.000Z',
    updatedAt: '2026-11-01T00:00:00.000Z',
    disabled: false,
    disabledReason: null,
    securityStamp: 's',
    ...overrides,
  });

  const cases: [string, UserState, OwnerLapse | null][] = [
    ['an enabled Admin', account(), null],
    ['an Admin whose password (stamp) changed', account({ securityStamp: 'changed' }), null],
    ['a disabled Admin', account({ disabled: true }), 'disabled'],
    ['an account without Admin', account({ roles: ['Member'] }), 'notAdmin'],
    ['an erased account', { deleted: true, userId: 'u', tombstoneId: 't', deletedAt: since }, 'deleted'],
    ['no account', null, 'deleted'],
    [
      'an account registered again under the same id after the ownership began',
      account({ createdAt: '2026-11-25T00:00:00.000Z' }),
      'deleted',
    ],
  ];
  it.each(cases.map(([what, owner, lapse]) => [what, lapse ?? 'none', owner, lapse] as const))(
    'When the owner is %s, then its lapse is %s',
    (_what, _named, owner, lapse) => {
      expect(ownerLapse(ownership, owner)).toBe(lapse);
    },
  );

  it('When the owner was disabled and enabled again between two reads, then the lapse is seen all the same, and only by ownerships begun before it', () => {
    const disabledAt = '2026-11-24T09:00:00.000Z';
    const seen = lapsesAmong('u', [
      { state: account({ disabled: true }), version: 4, at: disabledAt },
      { state: account(), version: 5, at: '2026-11-24T09:00:01.000Z' },
    ]);
    expect(seen).toEqual([{ lapse: 'disabled', version: 4, at: disabledAt }]);
    expect(lapseSince(ownership, seen)).toBe('disabled');
    expect(
      lapseSince({ ownerUserId: 'u', ownerSince: '2026-11-24T10:00:00.000Z', ownerSinceVersion: null }, seen),
    ).toBeNull();
  });

  it('When the ownership records its account version, then only versions decide which lapses count: clocks that disagree by an hour either way change nothing', () => {
    const seen = lapsesAmong('u', [
      { state: account({ disabled: true }), version: 4, at: '2026-11-24T09:00:00.000Z' },
      { state: account(), version: 5, at: '2026-11-24T09:00:01.000Z' },
    ]);
    for (const ownerSince of ['2026-11-24T08:00:00.000Z', '2026-11-24T10:00:00.000Z']) {
      // Taken over at version 3 (before the disable): the lapse counts, whatever ownerSince says.
      expect(lapseSince({ ownerUserId: 'u', ownerSince, ownerSinceVersion: 3 }, seen)).toBe('disabled');
      // Taken over at version 5 (after it): it does not.
      expect(lapseSince({ ownerUserId: 'u', ownerSince, ownerSinceVersion: 5 }, seen)).toBeNull();
    }
    // A re-registered account's creation time is not compared: its erasure is a lapse seen instead.
    const later = account({ createdAt: '2026-11-25T00:00:00.000Z' });
    expect(ownerLapse({ ownerUserId: 'u', ownerSince: since, ownerSinceVersion: 3 }, later)).toBeNull();
    expect(
      lapseSince(
        { ownerUserId: 'u', ownerSince: '2026-11-26T00:00:00.000Z', ownerSinceVersion: 3 },
        lapsesAmong('u', [
          {
            state: { deleted: true, userId: 'u', tombstoneId: 't', deletedAt: since },
            version: 4,
            at: since,
          },
          { state: later, version: 5, at: since },
        ]),
      ),
    ).toBe('deleted');
  });

  it('When an Admin takes a subscription over, then the take-over records its account version, and the state keeps it as ownerSinceVersion', () => {
    const decision = webhookSubscriptionDecider.decide(
      { type: 'EnableWebhookSubscription', data: {} },
      fold(webhookSubscriptionDecider, [
        {
          type: 'WebhookSubscriptionCreatedEvent',
          data: {
            url: 'https://example.com/h',
            eventTypes: ['*'],
            description: null,
            at: since,
            byUserId: 'u',
          },
        },
        {
          type: 'WebhookSubscriptionDisabledEvent',
          data: { reason: null, automatic: false, at: since, byUserId: 'u' },
        },
      ]),
      { now: new Date(since), actorUserId: 'a', actorRoles: ['Admin'], actorAccountVersion: 7 },
    );
    expect(decision).toMatchObject({
      accepted: true,
      events: [{ data: { byUserId: 'a', byUserVersion: 7 } }],
    });
  });
});
