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
    expect(stored).not.toContain('fantasy-team');
    expect(stored).not.toContain('abc-def');
    const read = envelopeFromStream(stored, place);
    expect(read).toEqual(written);
    expect(JSON.stringify(read)).toBe(JSON.stringify(written));
  });

  it('When the id is not spelled as the key spells it (lower case), then it is kept as written', () => {
    const written = envelope('ABC-def');
    expect(envelopeFromStream(compactEnvelopeJson(written), place)).toEqual(written);
  });

  it('When an entry was written as a compact object (ADR 0020 before positional envelopes), then it reads as it was appended', () => {
    const { aggregateType: _type, aggregateId: _id, version: _version, ...own } = envelope('abc-def');
    expect(JSON.stringify(envelopeFromStream(JSON.stringify(own), place))).toBe(
      JSON.stringify(envelope('abc-def')),
    );
  });

  it('When an entry was written before ADR 0020 (a full envelope), then it reads as it is', () => {
    const written = envelope('abc-def');
    expect(envelopeFromStream(JSON.stringify(written), place)).toEqual(written);
  });

  it('When the usual envelope is stored, then it is positional: no field name is stored and occurredAt is epoch milliseconds', () => {
    const written = envelope('abc-def');
    const stored = compactEnvelopeJson(written);
    expect(JSON.parse(stored)).toEqual([
      '6f1c2d8e-0000-4000-8000-000000000001',
      'FantasyTeamLinkedEvent',
      Date.parse('2026-11-24T10:00:00.000Z'),
      { fantasyTeamExternalId: 7 },
      'a',
      null,
      'c',
    ]);
    expect(JSON.stringify(envelopeFromStream(stored, place))).toBe(JSON.stringify(written));
  });

  it('When the metadata carries a traceId and a requestId, then both are stored and read back in their places', () => {
    const written: EventEnvelope = {
      ...envelope('abc-def'),
      metadata: { actorUserId: 'a', requestId: 'r-1', correlationId: null, traceId: 't-1' },
    };
    const stored = compactEnvelopeJson(written);
    expect(JSON.parse(stored)).toHaveLength(8);
    expect(JSON.stringify(envelopeFromStream(stored, place))).toBe(JSON.stringify(written));
  });

  it('When the metadata carries a trace context, then it is stored last, 58 bytes more, and reads back in its place', () => {
    const traceparent = `00-${'4'.repeat(32)}-${'a'.repeat(16)}-01`;
    const plain = envelope('abc-def');
    for (const metadata of [
      { actorUserId: 'a', requestId: 'r-1', correlationId: null, traceId: 't-1', traceparent },
      { actorUserId: 'a', requestId: null, correlationId: 'c', traceparent },
    ]) {
      const written: EventEnvelope = { ...plain, metadata };
      const stored = compactEnvelopeJson(written);
      expect(JSON.parse(stored)).toHaveLength(9);
      expect(JSON.stringify(envelopeFromStream(stored, place))).toBe(JSON.stringify(written));
    }
    const withoutTraceId: EventEnvelope = { ...plain, metadata: { ...plain.metadata, traceparent } };
    // `,null` holds the traceId's place; `,"<55 characters>"` the context.
    expect(compactEnvelopeJson(withoutTraceId).length - compactEnvelopeJson(plain).length).toBe(5 + 58);
  });

  it('When the trace context comes before the traceId, then the envelope is kept as an object, in its order', () => {
    const written: EventEnvelope = {
      ...envelope('abc-def'),
      metadata: { actorUserId: 'a', requestId: null, correlationId: 'c', traceparent: 'x', traceId: 't' },
    };
    const stored = compactEnvelopeJson(written);
    expect(stored.startsWith('{')).toBe(true);
    expect(JSON.stringify(envelopeFromStream(stored, place))).toBe(JSON.stringify(written));
  });

  it('When the metadata holds a traceId key without a value, then it reads back as JSON would keep it: without the key', () => {
    const written: EventEnvelope = {
      ...envelope('abc-def'),
      metadata: { actorUserId: 'a', requestId: null, correlationId: 'c', traceId: undefined },
    };
    const read = envelopeFromStream(compactEnvelopeJson(written), place);
    expect(JSON.stringify(read)).toBe(JSON.stringify(written));
    expect(read.metadata).not.toHaveProperty('traceId');
  });

  it('When occurredAt is not the ISO text its instant spells, then it is stored as the text', () => {
    const written = { ...envelope('abc-def'), occurredAt: '2026-11-24T10:00:00Z' };
    const stored = compactEnvelopeJson(written);
    expect((JSON.parse(stored) as unknown[])[2]).toBe('2026-11-24T10:00:00Z');
    expect(JSON.stringify(envelopeFromStream(stored, place))).toBe(JSON.stringify(written));
  });

  it.each([
    ['its fields come in another order', { ...envelope('abc-def'), occurredAt: undefined, extra: 1 }],
    [
      'its metadata has a field the positional form does not know',
      {
        ...envelope('abc-def'),
        metadata: { actorUserId: 'a', requestId: null, correlationId: 'c', causationId: 'x' },
      },
    ],
    [
      'its metadata fields come in another order',
      { ...envelope('abc-def'), metadata: { requestId: null, actorUserId: 'a', correlationId: 'c' } },
    ],
  ])('When %s, then it is stored as an object and reads back exactly', (_why, written) => {
    const stored = compactEnvelopeJson(written as unknown as EventEnvelope);
    expect(Array.isArray(JSON.parse(stored))).toBe(false);
    expect(JSON.stringify(envelopeFromStream(stored, place))).toBe(JSON.stringify(written));
  });
});
