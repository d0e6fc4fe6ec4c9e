import { createHmac, randomBytes, randomInt } from 'node:crypto';

import { HmacSha256 } from '../../ingress/auth/hmac-sha256';

const expected = (key: Uint8Array, text: string) =>
  createHmac('sha256', key).update(text, 'utf8').digest('hex');

/** Text of `length` UTF-16 units drawn from ASCII, Latin-1, the BMP, astral pairs and lone surrogates. */
function randomText(length: number): string {
  let text = '';
  while (text.length < length) {
    const kind = randomInt(5);
    if (kind === 0) text += String.fromCharCode(0x20 + randomInt(0x5f));
    else if (kind === 1) text += String.fromCharCode(0x80 + randomInt(0x780));
    else if (kind === 2) text += String.fromCharCode(0x800 + randomInt(0xd000));
    else if (kind === 3) text += String.fromCodePoint(0x10000 + randomInt(0xfffff));
    else text += String.fromCharCode(0xd800 + randomInt(0x800));
  }
  return text;
}

describe('HmacSha256', () => {
  it.each([
    ['empty text', ''],
    ['an e-mail and a password', 'ada@example.com\0s3cret'],
    ['non-ASCII text', 'jürgen@example.com\0pässwörd€🔑'],
    ['a lone surrogate', 'ada\0p\uD800w'],
    ['text of 55 bytes (one padded block)', 'x'.repeat(55)],
    ['text of 56 bytes (two padded blocks)', 'x'.repeat(56)],
    ['text longer than a block', 'x'.repeat(1_000)],
  ])('When it digests %s, then the digest is createHmac sha256 of the same key and text', (_, text) => {
    for (const key of [randomBytes(64), randomBytes(32), randomBytes(1), new Uint8Array(0)]) {
      expect(new HmacSha256(key).digest(text)).toBe(expected(key, text));
    }
  });

  it('When it digests random texts of every length up to 300 under random keys, then each digest is createHmac sha256', () => {
    for (let length = 0; length <= 300; length += 1) {
      const key = randomBytes(randomInt(65));
      const text = length % 2 === 0 ? 'a'.repeat(length) : randomText(length);
      expect(new HmacSha256(key).digest(text)).toBe(expected(key, text));
    }
  });

  it('When it digests one text after another, then each digest is that text alone (the reused buffers keep nothing)', () => {
    const key = randomBytes(32);
    const hmac = new HmacSha256(key);
    hmac.digest(randomText(500));
    expect(hmac.digest('b')).toBe(expected(key, 'b'));
    expect(hmac.digest('ünïcode\0🔑')).toBe(expected(key, 'ünïcode\0🔑'));
    expect(hmac.digest('b')).toBe(expected(key, 'b'));
  });

  it('When the key is longer than a block, then it is refused (callers make their own of 32 bytes)', () => {
    expect(() => new HmacSha256(randomBytes(65))).toThrow();
  });

  it('When two are made with random keys, then they digest the same text differently', () => {
    expect(HmacSha256.withRandomKey().digest('ada@example.com\0pw')).not.toBe(
      HmacSha256.withRandomKey().digest('ada@example.com\0pw'),
    );
  });
});
