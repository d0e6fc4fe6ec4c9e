import type { RoleClass } from '../../shared/roles';

/** The bounds on what is held at once: in all, by the accounts of one role class, by one account. */
export interface SlotBounds {
  readonly total: number;
  readonly perRoleClass: number;
  readonly perAccount: number;
}

/** Who holds a slot: its account and the account's role class (roleClassOf). */
export interface SlotHolder {
  readonly userId: string;
  readonly roleClass: RoleClass;
}

/** Which bound refused a slot. */
export type FullBound = 'total' | 'roleClass' | 'account';

/**
 * Slots held at once by requests that outlive their answer's start (open event streams, reads
 * waiting for a version), bounded in all, per role class and per account, so no one account, and
 * no one class of accounts (however many one UserManager mints), can take every slot (ADR 0023).
 * Counted from take() on, before any await, so a burst cannot overshoot.
 */
export class HeldSlots {
  private held = 0;
  private readonly heldByClass = new Map<RoleClass, number>();
  private readonly heldByAccount = new Map<string, number>();

  constructor(private readonly bounds: SlotBounds) {}

  /** Slots held now. */
  get size(): number {
    return this.held;
  }

  /** Takes a slot for `holder`; the bound that refused it (checked in that order), else undefined. */
  take(holder: SlotHolder): FullBound | undefined {
    if (this.held >= this.bounds.total) return 'total';
    if ((this.heldByClass.get(holder.roleClass) ?? 0) >= this.bounds.perRoleClass) return 'roleClass';
    if ((this.heldByAccount.get(holder.userId) ?? 0) >= this.bounds.perAccount) return 'account';
    this.count(holder, +1);
    return undefined;
  }

  /** Gives back a slot take() gave `holder`. */
  give(holder: SlotHolder): void {
    this.count(holder, -1);
  }

  private count({ userId, roleClass }: SlotHolder, delta: 1 | -1): void {
    this.held += delta;
    countIn(this.heldByClass, roleClass, delta);
    countIn(this.heldByAccount, userId, delta);
  }
}

function countIn<K>(counts: Map<K, number>, key: K, delta: 1 | -1): void {
  const total = (counts.get(key) ?? 0) + delta;
  if (total > 0) counts.set(key, total);
  else counts.delete(key);
}
