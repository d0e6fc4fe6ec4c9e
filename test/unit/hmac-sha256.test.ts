import { createHmac, randomBytes } from 'node:crypto';

import { HmacSha256 } from '../../ingress/auth/hmac-sha256';

const sevenBitKey = (length: number) => Buffer.from(randomBytes(length).map((byte) => byte & 0x7f));

describe('HmacSha256', () => {
  it.each([
    ['empty text', ''],
    ['an e-mail and a password', 'ada@example.com\0s3cret'],
    ['non-ASCII text', 'jürgen@example.com\0pässwörd€🔑'],
    ['text longer than a block', 'x'.repeat(1_000)],
  ])('When it digests %s, then the digest is createHmac sha256 of the same key and text', (_, text) => {
    for (const key of [sevenBitKey(64), sevenBitKey(32), sevenBitKey(1)]) {
      expect(new HmacSha256(key).digest(text)).toBe(
        createHmac('sha256', key).update(text, 'utf8').digest('base64url'),
      );
    }
  });

  it('When it digests one text after another, then each digest is that text alone (the reused buffer keeps nothing)', () => {
    const key = sevenBitKey(64);
    const hmac = new HmacSha256(key);
    hmac.digest('a much longer first message than the second');
    expect(hmac.digest('b')).toBe(createHmac('sha256', key).update('b').digest('base64url'));
  });

  it('When the key has a byte of 0x80 or more, or more than 64 bytes, then it is refused', () => {
    expect(() => new HmacSha256(Buffer.from([0x41, 0x80]))).toThrow();
    expect(() => new HmacSha256(Buffer.alloc(65, 0x41))).toThrow();
  });

  it('When two are made with random keys, then they digest the same text differently', () => {
    expect(HmacSha256.withRandomKey().digest('ada@example.com\0pw')).not.toBe(
      HmacSha256.withRandomKey().digest('ada@example.com\0pw'),
    );
  });
});
