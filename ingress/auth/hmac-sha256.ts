import { randomBytes } from 'node:crypto';

/** SHA-256's block size: an HMAC key is padded to it (RFC 2104). */
const BLOCK_BYTES = 64;
const DIGEST_BYTES = 32;
const INNER_PAD = 0x36;
const OUTER_PAD = 0x5c;

/** SHA-256's round constants (FIPS 180-4, 4.2.2). */
const K = new Uint32Array([
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98,
  0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
  0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8,
  0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
  0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819,
  0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
  0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
  0xc67178f2,
]);
/** SHA-256's initial hash value (FIPS 180-4, 5.3.3). */
const INITIAL_STATE = new Uint32Array([
  0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
]);

const HEX = Array.from({ length: 256 }, (_, byte) => byte.toString(16).padStart(2, '0'));
const utf8 = new TextEncoder();

/**
 * HMAC-SHA256 (RFC 2104, FIPS 180-4) of text under one fixed key, in JavaScript: its digest is
 * createHmac('sha256', key)'s, bit for bit (the tests compare them over random keys and texts).
 *
 * Why not createHmac: the Basic verification cache computes one HMAC per request, and in the
 * running ingress each call into OpenSSL (createHmac or crypto.hash) cost a warm Basic request
 * 20-30 us of CPU more than a Bearer one (issue 22; 2 us in a loop, where OpenSSL's code and data
 * stay in the CPU's caches). Here the key's padded blocks are hashed once, so a digest of a short
 * text is two or three SHA-256 blocks of plain arithmetic, on buffers allocated once.
 */
export class HmacSha256 {
  /** SHA-256's state after the block K ^ ipad, and after K ^ opad: every digest starts from them. */
  private readonly innerStart = new Uint32Array(8);
  private readonly outerStart = new Uint32Array(8);
  private readonly state = new Uint32Array(8);
  private readonly schedule = new Uint32Array(64);
  /** The text's UTF-8 bytes and their padding; grown for a longer text. */
  private bytes = new Uint8Array(4 * BLOCK_BYTES);
  private readonly outerBlock = new Uint8Array(BLOCK_BYTES);

  constructor(key: Uint8Array) {
    if (key.length > BLOCK_BYTES) throw new Error(`an HmacSha256 key is at most ${BLOCK_BYTES} bytes`);
    const padded = new Uint8Array(BLOCK_BYTES);
    padded.set(key);
    this.innerStart.set(INITIAL_STATE);
    this.compress(
      this.innerStart,
      padded.map((byte) => byte ^ INNER_PAD),
      0,
    );
    this.outerStart.set(INITIAL_STATE);
    this.compress(
      this.outerStart,
      padded.map((byte) => byte ^ OUTER_PAD),
      0,
    );
    // The outer hash's one block: the inner digest, then its padding for 64 + 32 bytes hashed in all.
    this.outerBlock[DIGEST_BYTES] = 0x80;
    this.outerBlock[BLOCK_BYTES - 2] = ((BLOCK_BYTES + DIGEST_BYTES) * 8) >>> 8;
    this.outerBlock[BLOCK_BYTES - 1] = ((BLOCK_BYTES + DIGEST_BYTES) * 8) & 0xff;
  }

  /** A key of 32 random bytes, made afresh: for a key that never leaves the process. */
  static withRandomKey(): HmacSha256 {
    return new HmacSha256(randomBytes(32));
  }

  /** The HMAC of `text` (its UTF-8 bytes, a lone surrogate as U+FFFD, as Buffer encodes it), in hex. */
  digest(text: string): string {
    const length = this.encode(text);
    // Inner hash: the text, 0x80, zeros, and the bit length of K ^ ipad plus the text.
    const bytes = this.bytes;
    const padded = Math.ceil((length + 9) / BLOCK_BYTES) * BLOCK_BYTES;
    bytes[length] = 0x80;
    bytes.fill(0, length + 1, padded - 4);
    const bits = (BLOCK_BYTES + length) * 8;
    bytes[padded - 4] = bits >>> 24;
    bytes[padded - 3] = (bits >>> 16) & 0xff;
    bytes[padded - 2] = (bits >>> 8) & 0xff;
    bytes[padded - 1] = bits & 0xff;
    const state = this.state;
    state.set(this.innerStart);
    for (let offset = 0; offset < padded; offset += BLOCK_BYTES) this.compress(state, bytes, offset);
    const outer = this.outerBlock;
    for (let i = 0; i < 8; i += 1) {
      const word = state[i] as number;
      outer[i * 4] = word >>> 24;
      outer[i * 4 + 1] = (word >>> 16) & 0xff;
      outer[i * 4 + 2] = (word >>> 8) & 0xff;
      outer[i * 4 + 3] = word & 0xff;
    }
    state.set(this.outerStart);
    this.compress(state, outer, 0);
    let hex = '';
    for (let i = 0; i < 8; i += 1) {
      const word = state[i] as number;
      hex +=
        (HEX[word >>> 24] as string) +
        (HEX[(word >>> 16) & 0xff] as string) +
        (HEX[(word >>> 8) & 0xff] as string) +
        (HEX[word & 0xff] as string);
    }
    return hex;
  }

  /** Writes `text` as UTF-8 at the start of `bytes` (grown to hold it and its padding); its length. */
  private encode(text: string): number {
    // At most 3 bytes per UTF-16 unit, then at most 72 of padding.
    const needed = text.length * 3 + 2 * BLOCK_BYTES;
    if (this.bytes.length < needed) this.bytes = new Uint8Array(needed);
    const bytes = this.bytes;
    for (let i = 0; i < text.length; i += 1) {
      const unit = text.charCodeAt(i);
      if (unit >= 0x80) return utf8.encodeInto(text, bytes).written;
      bytes[i] = unit;
    }
    return text.length;
  }

  /** SHA-256's compression of the 64-byte block at `offset` into `state` (FIPS 180-4, 6.2.2). */
  private compress(state: Uint32Array, block: Uint8Array, offset: number): void {
    const w = this.schedule;
    for (let t = 0; t < 16; t += 1) {
      const at = offset + t * 4;
      w[t] =
        ((block[at] as number) << 24) |
        ((block[at + 1] as number) << 16) |
        ((block[at + 2] as number) << 8) |
        (block[at + 3] as number);
    }
    for (let t = 16; t < 64; t += 1) {
      const x = w[t - 15] as number;
      const y = w[t - 2] as number;
      const s0 = ((x >>> 7) | (x << 25)) ^ ((x >>> 18) | (x << 14)) ^ (x >>> 3);
      const s1 = ((y >>> 17) | (y << 15)) ^ ((y >>> 19) | (y << 13)) ^ (y >>> 10);
      w[t] = ((w[t - 16] as number) + s0 + (w[t - 7] as number) + s1) | 0;
    }
    let a = state[0] as number;
    let b = state[1] as number;
    let c = state[2] as number;
    let d = state[3] as number;
    let e = state[4] as number;
    let f = state[5] as number;
    let g = state[6] as number;
    let h = state[7] as number;
    for (let t = 0; t < 64; t += 1) {
      const s1 = ((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7));
      const choose = (e & f) ^ (~e & g);
      const t1 = (h + s1 + choose + (K[t] as number) + (w[t] as number)) | 0;
      const s0 = ((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10));
      const majority = (a & b) ^ (a & c) ^ (b & c);
      const t2 = (s0 + majority) | 0;
      h = g;
      g = f;
      f = e;
      e = (d + t1) | 0;
      d = c;
      c = b;
      b = a;
      a = (t1 + t2) | 0;
    }
    state[0] = ((state[0] as number) + a) | 0;
    state[1] = ((state[1] as number) + b) | 0;
    state[2] = ((state[2] as number) + c) | 0;
    state[3] = ((state[3] as number) + d) | 0;
    state[4] = ((state[4] as number) + e) | 0;
    state[5] = ((state[5] as number) + f) | 0;
    state[6] = ((state[6] as number) + g) | 0;
    state[7] = ((state[7] as number) + h) | 0;
  }
}
