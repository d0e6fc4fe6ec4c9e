import type { EventEnvelope } from '../../shared/event-store/envelope';
import {
  isPublicEventType,
  PUBLIC_EVENT_TYPES,
  toPublicEvent,
} from '../../shared/event-stream/public-events';

const envelope = (eventType: string, data: Record<string, unknown>): EventEnvelope => ({
  eventId: 'e1',
  eventType,
  aggregateType: 'user',
  aggregateId: 'a1',
  version: 3,
  occurredAt: '2026-11-24T08:00:00.000Z',
  data,
  metadata: { actorUserId: 'u', requestId: null, correlationId: null },
});

describe('The public form of an event', () => {
  it('When an event is made public, then it is {type, timestamp, data} with aggregateId and version, and no stamp, hash or sealed field', () => {
    expect(
      toPublicEvent(
        envelope('UserPasswordChangedEvent', {
          at: '2026-11-24T08:00:00.000Z',
          byUserId: 'u',
          securityStamp: 'secret-stamp',
          personalData: 'pd1.sealed',
          passwordHash: '$argon2id$...',
        }),
      ),
    ).toEqual({
      type: 'UserPasswordChangedEvent',
      timestamp: '2026-11-24T08:00:00.000Z',
      data: { at: '2026-11-24T08:00:00.000Z', byUserId: 'u', aggregateId: 'a1', version: 3 },
    });
  });

  it("When an event's own fields are named aggregateId or version, then the envelope's win", () => {
    expect(toPublicEvent(envelope('UserEnabledEvent', { aggregateId: 'x', version: 99 })).data).toEqual({
      aggregateId: 'a1',
      version: 3,
    });
  });

  it('When the catalogue is read, then it names the spec events and nothing inherited', () => {
    expect(PUBLIC_EVENT_TYPES).toEqual(
      expect.arrayContaining(['FantasyTeamLinkedEvent', 'FantasyTeamUnlinkedEvent']),
    );
    expect(isPublicEventType('toString')).toBe(false);
    expect(isPublicEventType('__proto__')).toBe(false);
  });
});
