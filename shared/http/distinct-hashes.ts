import { randomBytes } from 'node:crypto';

/**
 * The seed of every string hash of this process: random, so that nobody can prepare, away from the
 * service, many different strings that hash alike and slip past a bound on distinct ones.
 */
const SEED = randomBytes(4).readUInt32LE(0);

/** FNV-1a's 32-bit prime: a multiply and a xor a byte, cheap enough to run over every string byte. */
const PRIME = 0x01000193;

/** The hash a string's bytes start from. */
export function hashStart(): number {
  return SEED;
}

/** The hash after one more byte. */
export function hashByte(hash: number, byte: number): number {
  return Math.imul(hash ^ byte, PRIME);
}

/**
 * How many different 32-bit hashes were added, counted up to `max` and one past it: an
 * open-addressing table twice the bound's size, so a body that stays within the bound never
 * fills it and one past it is known at its first hash beyond the bound. Two strings whose hashes
 * collide count once, which only ever lets a few more through.
 */
export class DistinctHashes {
  private readonly slots: Uint32Array;
  private readonly mask: number;
  private count = 0;

  constructor(readonly max: number) {
    let capacity = 16;
    while (capacity < 2 * (max + 1)) capacity *= 2;
    this.slots = new Uint32Array(capacity);
    this.mask = capacity - 1;
  }

  /** Adds `hash`; whether more than `max` different ones have now been added. */
  addPastMax(hash: number): boolean {
    // 0 marks an empty slot: hashes are stored with their lowest bit set.
    const stored = (hash | 1) >>> 0;
    let slot = (stored ^ (stored >>> 16)) & this.mask;
    for (;;) {
      const held = this.slots[slot];
      if (held === stored) return false;
      if (held === 0) break;
      slot = (slot + 1) & this.mask;
    }
    this.slots[slot] = stored;
    return ++this.count > this.max;
  }
}
