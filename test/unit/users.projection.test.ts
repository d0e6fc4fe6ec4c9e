import fc from 'fast-check';

import type { EventEnvelope } from '../../shared/event-store/envelope';
import { createKeys } from '../../shared/redis/keys';
import { partitionOf } from '../../shared/redis/partitions';
import { ASSIGNABLE_ROLES } from '../../shared/roles';
import type { UserEvent } from '../../shared/user/user.events';
import { USER_VIEW_MEMBERS, type UserView } from '../../shared/user/user-view';
import { usersProjection } from '../../shared/user/users.projection';
import {
  afterEmailBound,
  emailPrefixRange,
  higherLowerBound,
  indexMember,
  listingIndexKey,
  listingIndexKeysOf,
  userIdOfMember,
  type UserListingFilter,
  utf8Order,
} from '../../shared/user/users-index';
import { planBatch } from '../../workers/projector/batch-plan';

const keys = createKeys('users-unit:');
const USER = '6a1f7c1e-0d44-5e0b-8f3a-2b9c4d5e6f70';
const ADMIN = '0f0e0d0c-0b0a-4909-8807-060504030201';
const T0 = '2026-02-01T10:00:00.000Z';
const T1 = '2026-02-02T11:00:00.000Z';
const T2 = '2026-02-03T12:00:00.000Z';

function envelope<E extends UserEvent>(version: number, type: E['type'], data: E['data']): EventEnvelope {
  return {
    eventId: `event-${version}`,
    eventType: type,
    aggregateType: 'user',
    aggregateId: USER,
    version,
    occurredAt: T0,
    data,
    metadata: { actorUserId: ADMIN, requestId: null, correlationId: 'unit' },
  };
}

const createdData = {
  userId: USER,
  email: 'grace@example.com',
  userName: 'grace',
  userType: 'Human' as const,
  roles: ['Member' as const],
  firstName: 'Grace',
  lastName: 'Hopper',
  emailVerified: true,
  createdAt: T0,
};
/** As written before accounts had a security stamp. */
const legacyCreated = envelope(1, 'UserCreatedEvent', createdData);
const created = envelope(1, 'UserCreatedEvent', { ...createdData, securityStamp: 'stamp-1' });
const rolesSet = envelope(2, 'UserRolesSetEvent', {
  at: T1,
  byUserId: ADMIN,
  roles: ['Member', 'UserManager'],
  securityStamp: 'stamp-2',
});
const disabled = envelope(3, 'UserDisabledEvent', {
  at: T2,
  byUserId: ADMIN,
  reason: 'left the company',
  securityStamp: 'stamp-3',
});
const enabled = envelope(4, 'UserEnabledEvent', { at: T2, byUserId: ADMIN });
const passwordChanged = envelope(5, 'UserPasswordChangedEvent', {
  at: T2,
  byUserId: USER,
  securityStamp: 'stamp-4',
});
const deleted = envelope(6, 'UserDeletedEvent', {
  at: T2,
  byUserId: ADMIN,
  tombstoneId: '99999999-9999-4999-8999-999999999999',
});

const fresh: UserView = {
  id: USER,
  email: 'grace@example.com',
  userName: 'grace',
  userType: 'Human',
  roles: ['Member'],
  firstName: 'Grace',
  lastName: 'Hopper',
  emailVerified: true,
  disabled: false,
  createdAt: T0,
  updatedAt: T0,
  version: 1,
};

function fold(events: readonly EventEnvelope[], from: UserView | null = null): UserView | null {
  return events.reduce<UserView | null>((doc, event) => usersProjection.evolve(doc, event), from);
}

const member = `grace@example.com\u0000${USER}`;

describe('The users projection (pure)', () => {
  it('When an account is created, then its document is the ListUsers item: exactly the documented members, no stamp, no hash, no key', () => {
    const view = fold([created]);
    expect(view).toEqual(fresh);
    expect(Object.keys(view ?? {})).toEqual([...USER_VIEW_MEMBERS]);
    expect(JSON.stringify(view)).not.toMatch(/stamp|credential|hash|personalDataKey|disabledReason/i);
  });

  it('When a UserCreatedEvent was written before accounts had a security stamp, then it projects the same', () => {
    expect(fold([legacyCreated])).toEqual(fold([created]));
  });

  it('When roles are set, the account is disabled, enabled and its password changed, then the document follows each step and keeps no stamp', () => {
    const withRoles = fold([created, rolesSet]);
    expect(withRoles).toEqual({ ...fresh, roles: ['Member', 'UserManager'], updatedAt: T1, version: 2 });
    const off = fold([disabled], withRoles);
    expect(off).toEqual({ ...withRoles, disabled: true, updatedAt: T2, version: 3 });
    expect(JSON.stringify(off)).not.toContain('left the company');
    const on = fold([enabled], off);
    expect(on).toEqual({ ...withRoles, disabled: false, updatedAt: T2, version: 4 });
    expect(fold([passwordChanged], on)).toEqual({ ...on, version: 5 });
  });

  it('When the account is deleted, then it has no document (and so no index entry)', () => {
    expect(fold([created, rolesSet, deleted])).toBeNull();
  });

  it('When a deleted e-mail is registered again, then the new account starts afresh under the same id', () => {
    const again = envelope(7, 'UserCreatedEvent', {
      ...createdData,
      roles: ['ServiceAccount'],
      userType: 'ServiceAccount',
      firstName: null,
      lastName: null,
      createdAt: T2,
      securityStamp: 'stamp-5',
    });
    expect(fold([created, deleted, again])).toEqual({
      ...fresh,
      userType: 'ServiceAccount',
      roles: ['ServiceAccount'],
      firstName: null,
      lastName: null,
      createdAt: T2,
      updatedAt: T2,
      version: 7,
    });
  });

  it('When an event at or below the document version arrives again, then the document is unchanged', () => {
    const view = fold([created, rolesSet]);
    expect(usersProjection.evolve(view, rolesSet)).toBe(view);
    expect(usersProjection.evolve(view, disabled)).not.toBe(view);
  });

  it('When a Member is indexed, then it is in the 8 sets of its combinations in its partition (role Member or all, Human or all, enabled or all), member <email>\\0<id>, score 0', () => {
    const entries = usersProjection.indexEntries?.(fresh, keys) ?? [];
    const sets = (role: string, type: string, state: string) =>
      `users-unit:{p${partitionOf(USER)}}:users:by-email:${role}:${type}:${state}`;
    expect(entries).toEqual(
      ['all', 'Member'].flatMap((role) =>
        ['all', 'Human'].flatMap((type) =>
          ['all', 'enabled'].map((state) => ({
            kind: 'zset',
            key: sets(role, type, state),
            member,
            score: 0,
          })),
        ),
      ),
    );
    expect(userIdOfMember(member)).toBe(USER);
  });

  it('When an e-mail holds upper case, then its member is lower case, so the order and prefixes are case-insensitive', () => {
    expect(indexMember({ ...fresh, email: 'Grace@Example.COM' })).toBe(member);
  });

  it('When any filter combination is asked for, then the account is in its set exactly when it matches (role as assigned, not as the hierarchy expands it)', () => {
    const accounts: UserView[] = [
      fresh,
      { ...fresh, roles: ['Admin'], disabled: true },
      { ...fresh, roles: [], userType: 'ServiceAccount' },
      { ...fresh, roles: ['ServiceAccount', 'UserManager'], userType: 'ServiceAccount' },
    ];
    const filters: UserListingFilter[] = [];
    for (const role of [undefined, ...ASSIGNABLE_ROLES])
      for (const userType of [undefined, 'Human', 'ServiceAccount'] as const)
        for (const disabledFilter of [undefined, false, true])
          filters.push({ role, userType, disabled: disabledFilter });
    expect(filters).toHaveLength(45);
    for (const account of accounts) {
      const sets = new Set(listingIndexKeysOf(keys, account));
      for (const filter of filters) {
        const matches =
          (filter.role === undefined || account.roles.includes(filter.role)) &&
          (filter.userType === undefined || account.userType === filter.userType) &&
          (filter.disabled === undefined || account.disabled === filter.disabled);
        const partition = partitionOf(account.id);
        expect([filter, sets.has(listingIndexKey(keys, filter, partition))]).toEqual([filter, matches]);
      }
    }
    // An Admin holding only Admin is not listed under Member or UserManager.
    const admin = new Set(listingIndexKeysOf(keys, { ...fresh, roles: ['Admin'] }));
    const partition = partitionOf(fresh.id);
    expect(admin.has(listingIndexKey(keys, { role: 'Member' }, partition))).toBe(false);
    expect(admin.has(listingIndexKey(keys, { role: 'UserManager' }, partition))).toBe(false);
    expect(admin.has(listingIndexKey(keys, { role: 'Admin' }, partition))).toBe(true);
    expect(admin.has(listingIndexKey(keys, { role: 'Admin' }, (partition + 1) % 16))).toBe(false);
  });

  it('When a prefix is given, then the range runs from it to it followed by the byte 0xFF (no UTF-8 text holds 0xFF); without one, everything', () => {
    expect(emailPrefixRange(undefined)).toEqual(['-', '+']);
    const [min, max] = emailPrefixRange('zoë');
    expect(min).toBe('[zoë');
    expect(Buffer.isBuffer(max)).toBe(true);
    expect([...(max as Buffer)]).toEqual([...Buffer.from('(zoë', 'utf8'), 0xff]);
    // Every member that starts with the prefix lies in the range, and a following name does not.
    const inRange = (text: string) => {
      const bytes = Buffer.from(text, 'utf8');
      return (
        Buffer.compare(bytes, Buffer.from('zoë')) >= 0 &&
        Buffer.compare(bytes, (max as Buffer).subarray(1)) < 0
      );
    };
    expect(inRange(`zoë@example.com\u0000${USER}`)).toBe(true);
    expect(inRange(`zoë\u0000${USER}`)).toBe(true);
    expect(inRange(`zoëy\u{1F600}@example.com\u0000${USER}`)).toBe(true);
    expect(inRange(`zof@example.com\u0000${USER}`)).toBe(false);
    expect(inRange(`zoe@example.com\u0000${USER}`)).toBe(false);
  });

  it('When a batch creates and deletes an account, then nothing of it is written; when the deletion comes in a later batch, then the document and every index entry are removed', () => {
    const docKey = usersProjection.documentKey(keys, USER);
    const writesOf = (events: EventEnvelope[], stored: string | null) => {
      const [count, ...rest] = planBatch(
        usersProjection,
        keys,
        2,
        events,
        new Map([[docKey, stored]]),
      ).scriptArguments('0-0', '1-1', events.length);
      const scriptKeys = rest.slice(0, count);
      const writes = JSON.parse(rest[count + 2] ?? '[]') as [string, number, ...string[]][];
      return writes.map(([op, index, ...args]) => [op, scriptKeys[index - 1], ...args]);
    };
    expect(writesOf([created, deleted], null)).toEqual([]);

    const stored = JSON.stringify(fold([created, rolesSet]));
    const removal = writesOf([deleted], stored);
    expect(removal[0]).toEqual(['del', docKey]);
    const removed = removal.slice(1);
    expect(removed).toHaveLength(12); // (1 + 2 roles) x 2 x 2
    expect(removed.every(([op, , value]) => op === 'zrem' && value === member)).toBe(true);
  });

  it('When roles change, then only the sets of the roles lost and gained change', () => {
    const docKey = usersProjection.documentKey(keys, USER);
    const [count, ...rest] = planBatch(
      usersProjection,
      keys,
      2,
      [rolesSet],
      new Map([[docKey, JSON.stringify(fresh)]]),
    ).scriptArguments('0-0', '1-1', 1);
    const scriptKeys = rest.slice(0, count);
    const writes = (JSON.parse(rest[count + 2] ?? '[]') as [string, number, ...string[]][]).map(
      ([op, index]) => [op, scriptKeys[index - 1]],
    );
    expect(writes).toEqual([
      ['set', docKey],
      ...['all', 'Human'].flatMap((type) =>
        ['all', 'enabled'].map((state) => [
          'zadd',
          `users-unit:{p${partitionOf(USER)}}:users:by-email:UserManager:${type}:${state}`,
        ]),
      ),
    ]);
  });
});

describe('The order ListUsers merges the partitions by', () => {
  it('When any two strings are compared, then utf8Order orders them as their UTF-8 bytes are (as Redis orders index members)', () => {
    const sign = (value: number) => Math.sign(value);
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme' }), fc.string({ unit: 'grapheme' }), (a, b) => {
        expect(sign(utf8Order(a, b))).toBe(sign(Buffer.compare(Buffer.from(a), Buffer.from(b))));
      }),
    );
    // Where JavaScript's own order is wrong: U+FF41 sorts before U+1F600 in UTF-8, after it in UTF-16.
    expect('\u{1f600}' < '\uff41').toBe(true);
    expect(utf8Order('\u{1f600}', '\uff41')).toBeGreaterThan(0);
  });

  it('When a page starts after an e-mail, then its bound lies above every member of that e-mail and at or below every greater one', () => {
    const bound = afterEmailBound('bo@x').slice(1);
    const members = [
      'bo@x\u0000id-1',
      'bo@x\u0000zz',
      'bo@x.uk\u0000id-2',
      'bo@y\u0000id-3',
      'bo@w\u0000id-4',
    ];
    expect(members.filter((member) => utf8Order(member, bound) >= 0)).toEqual([
      'bo@x.uk\u0000id-2',
      'bo@y\u0000id-3',
    ]);
    expect(higherLowerBound('-', '[b')).toBe('[b');
    expect(higherLowerBound('[bo', '[bo@x\u0001')).toBe('[bo@x\u0001');
    expect(higherLowerBound('[c', '[bo@x\u0001')).toBe('[c');
  });
});
