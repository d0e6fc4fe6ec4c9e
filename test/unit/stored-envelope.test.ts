import type { EventEnvelope } from '../../shared/event-store/envelope';
import { compactEnvelopeJson, envelopeFromStream } from '../../shared/event-store/stored-envelope';

const envelope = (aggregateId: string): EventEnvelope => ({
  eventId: '6f1c2d8e-0000-4000-8000-000000000001',
  eventType: 'FantasyTeamLinkedEvent',
  aggregateType: 'fantasy-team',
  aggregateId,
  version: 4,
  occurredAt: '2026-11-24T10:00:00.000Z',
  data: { fantasyTeamExternalId: 7 },
  metadata: { actorUserId: 'a', requestId: null, correlationId: 'c' },
});

const place = { aggregateType: 'fantasy-team', aggregateId: 'abc-def', version: 4 };

describe('Envelopes as an aggregate stream stores them (no Redis)', () => {
  it('When an envelope is stored, then what the key and entry id say is left out, and it reads back equal, field order included', () => {
    const written = envelope('abc-def');
    const stored = compactEnvelopeJson(written);
    expect(JSON.parse(stored)).not.toHaveProperty('aggregateType');
    expect(JSON.parse(stored)).not.toHaveProperty('aggregateId');
    expect(JSON.parse(stored)).not.toHaveProperty('version');
    const read = envelopeFromStream(stored, place);
    expect(read).toEqual(written);
    expect(JSON.stringify(read)).toBe(JSON.stringify(written));
  });

  it('When the id is not spelled as the key spells it (lower case), then it is kept as written', () => {
    const written = envelope('ABC-def');
    expect(envelopeFromStream(compactEnvelopeJson(written), place)).toEqual(written);
  });

  it('When an entry was written before ADR 0020 (a full envelope), then it reads as it is', () => {
    const written = envelope('abc-def');
    expect(envelopeFromStream(JSON.stringify(written), place)).toEqual(written);
  });
});
