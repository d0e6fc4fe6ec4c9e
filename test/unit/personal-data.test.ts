import { randomUUID } from 'node:crypto';

import {
  newPersonalDataKey,
  PERSONAL_DATA_KEY_FIELD,
  personalDataCodec as codec,
} from '../../shared/accounts/personal-data';
import type { EventEnvelope } from '../../shared/event-store/envelope';

const USER_ID = 'b7a1c6f2-2f4c-5c1e-9a55-0f6b2f9d3e11';
const PERSONAL = {
  email: 'zelda.quartermaine@example.com',
  userName: 'zquarter',
  firstName: 'Zelda',
  lastName: 'Quartermaine',
};

function creation(data: Record<string, unknown> = {}): EventEnvelope {
  return {
    eventId: randomUUID(),
    eventType: 'UserCreatedEvent',
    aggregateType: 'user',
    aggregateId: USER_ID,
    version: 1,
    occurredAt: '2026-11-24T10:00:00.000Z',
    data: {
      userId: USER_ID,
      ...PERSONAL,
      userType: 'Human',
      roles: ['Member'],
      emailVerified: false,
      createdAt: '2026-11-24T10:00:00.000Z',
      securityStamp: 'stamp',
      ...data,
    },
    metadata: { actorUserId: 'system', requestId: null, correlationId: 'test' },
  };
}

const disabled = (reason: string | null): EventEnvelope => ({
  ...creation(),
  eventType: 'UserDisabledEvent',
  version: 2,
  data: { at: '2026-11-24T11:00:00.000Z', byUserId: 'admin', securityStamp: 's2', reason },
});

describe('Personal data sealed at rest (the user codec)', () => {
  it('When a creation is sealed, then its stored JSON holds none of the personal fields, and its key opens it to the event as written', () => {
    const key = newPersonalDataKey();
    const event = creation();
    const sealed = codec.seal(event, key);
    const stored = JSON.stringify(sealed);
    for (const value of Object.values(PERSONAL))
      expect(stored.toLowerCase()).not.toContain(value.toLowerCase());
    expect(codec.isSealed(sealed)).toBe(true);
    expect(sealed.data).toMatchObject({ userId: USER_ID, roles: ['Member'], securityStamp: 'stamp' });
    expect(codec.open(sealed, key)).toEqual({
      ...event,
      data: expect.objectContaining(event.data) as unknown,
    });
    expect(Object.keys(codec.open(sealed, key).data as object).sort()).toEqual(
      Object.keys(event.data as object).sort(),
    );
  });

  it('When the key is gone (erased), then the personal fields open as null and nothing else changes', () => {
    const sealed = codec.seal(creation({ lastName: null }), newPersonalDataKey());
    const opened = codec.open(sealed, null);
    expect(opened.data).toEqual({
      ...(creation().data as object),
      email: null,
      userName: null,
      firstName: null,
      lastName: null,
    });
    expect(codec.isSealed(opened)).toBe(false);
  });

  it("When another key is given (the e-mail was registered again, under a new key), then the old creation's fields open as null", () => {
    const sealed = codec.seal(creation(), newPersonalDataKey());
    expect(codec.open(sealed, newPersonalDataKey()).data).toMatchObject({ email: null, firstName: null });
  });

  it('When the sealed text was altered, or moved into another event, then opening it with its own key throws instead of reading as erased', () => {
    const key = newPersonalDataKey();
    const sealed = codec.seal(creation(), key);
    const text = (sealed.data as { personalData: string }).personalData;
    // A character well inside the ciphertext (the last one may carry unused bits).
    const at = text.length - 8;
    const flipped = `${text.slice(0, at)}${text[at] === 'A' ? 'B' : 'A'}${text.slice(at + 1)}`;
    expect(() =>
      codec.open({ ...sealed, data: { ...(sealed.data as object), personalData: flipped } }, key),
    ).toThrow(/does not open under its own key/);
    expect(() => codec.open({ ...sealed, eventId: randomUUID() }, key)).toThrow(
      /does not open under its own key/,
    );
  });

  it('When a creation was written before sealing (plain fields), then it reads as it is with any key or none', () => {
    const legacy = creation();
    expect(codec.isSealed(legacy)).toBe(false);
    expect(codec.open(legacy, null)).toBe(legacy);
    expect(codec.open(legacy, newPersonalDataKey())).toBe(legacy);
  });

  it('When a disable carries a reason, then the reason is sealed; without one, the event needs no key', () => {
    const key = newPersonalDataKey();
    expect(codec.seals(disabled(null))).toBe(false);
    expect(codec.seals(disabled('Zelda Quartermaine left'))).toBe(true);
    const sealed = codec.seal(disabled('Zelda Quartermaine left'), key);
    expect(JSON.stringify(sealed)).not.toContain('Zelda');
    expect(codec.open(sealed, key).data).toMatchObject({ reason: 'Zelda Quartermaine left' });
    expect(codec.open(sealed, null).data).toMatchObject({ reason: null, byUserId: 'admin' });
  });

  it('When two events are sealed under one key, then each gets its own IV (no two sealed texts alike)', () => {
    const key = newPersonalDataKey();
    const event = creation();
    const [a, b] = [codec.seal(event, key), codec.seal(event, key)];
    expect((a.data as { personalData: string }).personalData).not.toBe(
      (b.data as { personalData: string }).personalData,
    );
  });

  it('When keys are made, then each is a fresh 256-bit key under the record field personalDataKey', () => {
    expect(PERSONAL_DATA_KEY_FIELD).toBe('personalDataKey');
    expect(codec.keyField).toBe(PERSONAL_DATA_KEY_FIELD);
    const key = newPersonalDataKey();
    expect(key).toMatch(/^pdk1\.[A-Za-z0-9_-]{43}$/);
    expect(newPersonalDataKey()).not.toBe(key);
    expect(() => codec.seal(creation(), 'not-a-key')).toThrow(/not one this service made/);
  });

  it('When more accounts are read than prepared keys are kept, then every event still opens under its own key and no other', () => {
    // Past the 4,096 keys kept prepared: the first ones have been dropped and are prepared again.
    const sealed = Array.from({ length: 5_000 }, () => {
      const key = newPersonalDataKey();
      return { key, envelope: codec.seal(creation(), key) };
    });
    for (const { key, envelope } of [...sealed, ...sealed.slice(0, 50)]) {
      expect(codec.open(envelope, key).data).toMatchObject(PERSONAL);
    }
    const [first, second] = sealed;
    expect(first && second && codec.open(first.envelope, second.key).data).toMatchObject({ email: null });
  });
});
