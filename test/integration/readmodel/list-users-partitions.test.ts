import { randomUUID } from 'node:crypto';

import fc from 'fast-check';

import { UsersReader } from '../../../ingress/readmodel/list-users/users.reader';
import { createLogger } from '../../../shared/logger';
import { closeConnections, type RedisClient, waitForRedis } from '../../../shared/redis/connections';
import { createKeys, type Keys } from '../../../shared/redis/keys';
import { LOG_PARTITIONS, partitionOf } from '../../../shared/redis/partitions';
import type { AssignableRole } from '../../../shared/roles';
import type { UserView } from '../../../shared/user/user-view';
import { usersProjection } from '../../../shared/user/users.projection';
import { type UserListingFilter } from '../../../shared/user/users-index';
import { openTestRedis, uniquePrefix } from '../../helpers/app-fixture';
import { PROPERTY_REPLAY } from '../../helpers/property-seed';

/**
 * ListUsers' reader over the users projection spread on the 16 partitions (ADR 0032): each page
 * is the merge of the partitions' ranges. The accounts are written straight into the projection's
 * keys (a document and its index entries, as the projector writes them), and every answer is held
 * to the same listing computed here over all of them: e-mails sorted by their UTF-8 bytes, ties
 * (equal e-mails, as erased accounts' empty ones are) by id. Run single-server and on a cluster.
 */

const logger = createLogger({ level: 'error', processRole: 'test' });
let redis: RedisClient;

beforeAll(async () => {
  redis = openTestRedis(logger);
  await waitForRedis(redis, logger);
});
afterAll(async () => {
  await closeConnections(redis);
});

const ROLE_SETS: readonly (readonly AssignableRole[])[] = [
  ['Member'],
  ['Admin'],
  ['Member', 'UserManager'],
  ['ServiceAccount'],
];

function account(id: string, email: string, n: number): UserView {
  const roles = [...(ROLE_SETS[n % ROLE_SETS.length] ?? ['Member'])];
  return {
    id,
    email,
    userName: email,
    userType: roles[0] === 'ServiceAccount' ? 'ServiceAccount' : 'Human',
    roles,
    firstName: null,
    lastName: null,
    emailVerified: true,
    disabled: n % 3 === 0,
    createdAt: '2026-11-27T00:00:00.000Z',
    updatedAt: '2026-11-27T00:00:00.000Z',
    version: 1,
  };
}

/** Writes each account's document and index entries where the projector would. */
async function project(keys: Keys, accounts: readonly UserView[]): Promise<void> {
  await Promise.all(
    accounts.flatMap((user) => [
      redis.set(usersProjection.documentKey(keys, user.id), JSON.stringify(user)),
      ...(usersProjection.indexEntries?.(user, keys) ?? []).map((entry) =>
        entry.kind === 'zset' ? redis.zadd(entry.key, entry.score, entry.member) : Promise.resolve(0),
      ),
    ]),
  );
}

const bytes = (text: string) => Buffer.from(text, 'utf8');

interface Ask {
  readonly filter: UserListingFilter;
  readonly emailPrefix?: string;
  readonly after?: string;
  readonly skip: number;
  readonly take: number;
}

/** What ListUsers must answer for `ask` over `accounts`: the ids of the page, and the total. */
function expected(accounts: readonly UserView[], ask: Ask): { ids: string[]; totalCount: number } {
  const { role, userType, disabled } = ask.filter;
  const matches = accounts
    .filter(
      (user) =>
        (role === undefined || user.roles.includes(role)) &&
        (userType === undefined || user.userType === userType) &&
        (disabled === undefined || user.disabled === disabled) &&
        user.email.startsWith(ask.emailPrefix ?? ''),
    )
    .sort((a, b) => Buffer.compare(bytes(`${a.email}\u0000${a.id}`), bytes(`${b.email}\u0000${b.id}`)));
  const after = ask.after;
  const inPage =
    after === undefined
      ? matches
      : matches.filter((user) => Buffer.compare(bytes(user.email), bytes(after)) > 0);
  return {
    ids: inPage.slice(ask.skip, ask.skip + ask.take).map((user) => user.id),
    totalCount: matches.length,
  };
}

async function answered(reader: UsersReader, ask: Ask): Promise<{ ids: string[]; totalCount: number }> {
  const { totalCount, items } = await reader.list(
    { ...ask.filter, emailPrefix: ask.emailPrefix },
    { skip: ask.skip, take: ask.take, after: ask.after },
  );
  return { ids: items.map((item) => (JSON.parse(item) as UserView).id), totalCount };
}

describe('ListUsers over the 16 partitions', () => {
  // Few characters, so e-mails share prefixes; one above U+FFFF (UTF-16 surrogates) and one from
  // U+E000 to U+FFFF, which JavaScript orders the other way round from UTF-8.
  const CHARACTERS = ['a', 'b', '.', 'é', '\uff41', '\u{1f600}'];
  const text = (max: number) =>
    fc.array(fc.constantFrom(...CHARACTERS), { maxLength: max }).map((chars) => chars.join(''));
  const filterArbitrary = fc.record(
    {
      role: fc.constantFrom<AssignableRole>('Member', 'Admin', 'UserManager', 'ServiceAccount'),
      userType: fc.constantFrom<'Human' | 'ServiceAccount'>('Human', 'ServiceAccount'),
      disabled: fc.boolean(),
    },
    { requiredKeys: [] },
  );
  const askArbitrary = fc.record({
    filter: filterArbitrary,
    emailPrefix: fc.option(
      text(1).filter((prefix) => prefix !== ''),
      { nil: undefined, freq: 1 },
    ),
    after: fc.option(text(2), { nil: undefined, freq: 1 }),
    skip: fc.oneof({ arbitrary: fc.constant(0), weight: 2 }, fc.nat(12), fc.nat(40)),
    take: fc.integer({ min: 1, max: 25 }),
  });

  it('When accounts spread over the partitions (some empty) are listed with any filter, prefix, skip, after and take, then each page is exactly the merged listing, shallow or deep, whether the first reads sufficed or not', async () => {
    let asked = 0;
    let nonEmpty = 0;
    await fc.assert(
      fc.asyncProperty(
        // E-mails drawn from a few characters repeat: equal e-mails in different partitions are ties.
        fc.uniqueArray(fc.tuple(fc.uuid(), text(4)), {
          minLength: 10,
          maxLength: 120,
          selector: ([id]) => id,
        }),
        fc.array(askArbitrary, { minLength: 1, maxLength: 8 }),
        async (drawn, asks) => {
          const keys = createKeys(uniquePrefix());
          const accounts = drawn.map(([id, local], n) => account(id, local === '' ? '' : `${local}@x`, n));
          await project(keys, accounts);
          const readers = [
            new UsersReader(redis, keys),
            new UsersReader(redis, keys, { shallowSkip: 0 }),
            // Every partition's first read too short: the merge must read on where it matters.
            new UsersReader(redis, keys, { headLength: () => 1 }),
            new UsersReader(redis, keys, { shallowSkip: 0, headLength: (need) => Math.ceil(need / 16) }),
          ];
          for (const ask of asks) {
            const want = expected(accounts, ask);
            for (const reader of readers) expect([ask, await answered(reader, ask)]).toEqual([ask, want]);
            asked += 1;
            if (want.ids.length > 0) nonEmpty += 1;
          }
        },
      ),
      { numRuns: 40 },
    );
    // Not vacuous: many asks found a page.
    expect([PROPERTY_REPLAY, nonEmpty > asked / 10]).toEqual([PROPERTY_REPLAY, true]);
  });

  it('When a partition holds every account (the others empty), then pages and counts are as from one set', async () => {
    const keys = createKeys(uniquePrefix());
    const ids: string[] = [];
    while (ids.length < 30) {
      const id = randomUUID();
      if (partitionOf(id) === 5) ids.push(id);
    }
    const accounts = ids.map((id, n) => account(id, `solo${String(n).padStart(2, '0')}@example.com`, n));
    await project(keys, accounts);
    const reader = new UsersReader(redis, keys);
    for (const ask of [
      { filter: {}, skip: 0, take: 10 },
      { filter: {}, skip: 25, take: 10 },
      { filter: {}, after: 'solo09@example.com', skip: 0, take: 3 },
      { filter: { role: 'Member' as const }, skip: 1, take: 100 },
    ]) {
      expect(await answered(reader, ask)).toEqual(expected(accounts, ask));
    }
  });

  it('When the table holds thousands of accounts, then a deep skip and an after cursor answer the page that skip 0 reaches by paging, and no partition holds more than an eighth of the projection', async () => {
    const keys = createKeys(uniquePrefix());
    const accounts = Array.from({ length: 4000 }, (_, n) =>
      account(randomUUID(), `deep.${String((n * 7919) % 4000).padStart(4, '0')}@example.com`, n),
    );
    for (let i = 0; i < accounts.length; i += 500) await project(keys, accounts.slice(i, i + 500));
    const reader = new UsersReader(redis, keys);
    for (const ask of [
      { filter: {}, skip: 1001, take: 100 },
      { filter: {}, skip: 2500, take: 1000 },
      { filter: {}, skip: 3950, take: 100 },
      { filter: {}, skip: 4000, take: 100 },
      { filter: { role: 'Member' as const }, skip: 1500, take: 50 },
      { filter: {}, emailPrefix: 'deep.3', skip: 1200, take: 100 },
      { filter: {}, after: 'deep.1999@example.com', skip: 1100, take: 100 },
    ]) {
      expect([ask, await answered(reader, ask)]).toEqual([ask, expected(accounts, ask)]);
    }
    // Paging by `after` walks the whole table in order.
    const walked: string[] = [];
    let after: string | undefined;
    for (;;) {
      const { items } = await reader.list({}, { skip: 0, take: 1000, after });
      if (items.length === 0) break;
      const page = items.map((item) => JSON.parse(item) as UserView);
      walked.push(...page.map((user) => user.id));
      after = page.at(-1)?.email;
    }
    expect(walked).toEqual(expected(accounts, { filter: {}, skip: 0, take: 4000 }).ids);

    // Each partition's share of the documents and of the every-account index.
    const documents = await Promise.all(
      Array.from({ length: LOG_PARTITIONS }, (_, partition) =>
        redis.zcard(keys.users.byEmail(partition, 'all', 'all', 'all')),
      ),
    );
    expect(documents.reduce((sum, count) => sum + count, 0)).toBe(accounts.length);
    expect(Math.max(...documents)).toBeLessThanOrEqual(accounts.length / 8);
  });
});
