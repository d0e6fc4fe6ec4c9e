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
 * open-addressing table kept at most half full, which starts small and doubles as it fills (a small
 * body's scan allocates a few hundred bytes, not a table for the bound), so one past the bound is
 * known at its first hash beyond it. Two strings whose hashes collide count once, which only ever
 * lets a few more through.
 */
export class DistinctHashes {
  private slots = new Uint32Array(INITIAL_SLOTS);
  private count = 0;

  constructor(readonly max: number) {}

  /** Adds `hash`; whether more than `max` different ones have now been added. */
  addPastMax(hash: number): boolean {
    // 0 marks an empty slot: hashes are stored with their lowest bit set.
    const stored = (hash | 1) >>> 0;
    if (!this.insert(this.slots, stored)) return false;
    this.count += 1;
    if (this.count * 2 > this.slots.length && this.count <= this.max) this.grow();
    return this.count > this.max;
  }

  /** Puts `stored` in `slots` unless it is there; whether it was new. */
  private insert(slots: Uint32Array, stored: number): boolean {
    const mask = slots.length - 1;
    let slot = (stored ^ (stored >>> 16)) & mask;
    for (;;) {
      const held = slots[slot];
      if (held === stored) return false;
      if (held === 0) break;
      slot = (slot + 1) & mask;
    }
    slots[slot] = stored;
    return true;
  }

  private grow(): void {
    const larger = new Uint32Array(this.slots.length * 2);
    for (const stored of this.slots) if (stored !== 0) this.insert(larger, stored);
    this.slots = larger;
  }
}

/** The table's first size: 64 slots, 256 bytes. */
const INITIAL_SLOTS = 64;
