import { execFileSync } from 'node:child_process';

import { validate as isUuid, version as uuidVersion } from 'uuid';

import { keyedUserId } from '../../shared/accounts/user-ids';
import { createKeys } from '../../shared/redis/keys';
import { LOG_PARTITIONS, partitionOf, partitionTag } from '../../shared/redis/partitions';
import { legacyUserIdForEmail } from '../../shared/user/user-id';
import { PROJECT_ROOT } from '../helpers/processes';

const ids = Array.from({ length: 500 }, (_, i) => `aggregate-${i}-${(i * 7919).toString(36)}`);

/** The part of a key Redis Cluster hashes: the first non-empty `{...}`, else the whole key. */
function clusterHashTag(key: string): string {
  const open = key.indexOf('{');
  const close = open < 0 ? -1 : key.indexOf('}', open + 1);
  return close > open + 1 ? key.slice(open + 1, close) : key;
}

describe('partitionOf', () => {
  it('When another process partitions the same ids, then it gets the same partitions', () => {
    const script =
      `const { partitionOf } = require('./shared/redis/partitions.ts');` +
      `process.stdout.write(JSON.stringify(${JSON.stringify(ids)}.map(partitionOf)));`;
    const output = execFileSync(process.execPath, ['--import', 'tsx', '--eval', script], {
      cwd: PROJECT_ROOT,
      encoding: 'utf8',
    });
    expect(JSON.parse(output)).toEqual(ids.map(partitionOf));
  });

  it('When ids are partitioned, then each partition is an integer in [0, LOG_PARTITIONS) and all are used', () => {
    const seen = new Set<number>();
    for (const id of ids) {
      const partition = partitionOf(id);
      expect(Number.isInteger(partition)).toBe(true);
      expect(partition).toBeGreaterThanOrEqual(0);
      expect(partition).toBeLessThan(LOG_PARTITIONS);
      seen.add(partition);
    }
    expect(seen.size).toBe(LOG_PARTITIONS);
  });

  it('When the id differs only in case, then the partition is the same', () => {
    expect(partitionOf('0F8FAD5B-D9CB-469F-A165-70867728950E')).toBe(
      partitionOf('0f8fad5b-d9cb-469f-a165-70867728950e'),
    );
    for (const id of ids) expect(partitionOf(id.toUpperCase())).toBe(partitionOf(id));
  });

  it('When known inputs are partitioned, then they match FNV-1a 32 modulo 16 (stable across releases)', () => {
    // Published FNV-1a 32-bit vectors: "" 0x811c9dc5, "a" 0xe40c292c, "foobar" 0xbf9cf968.
    expect(partitionOf('')).toBe(0x811c9dc5 % 16);
    expect(partitionOf('a')).toBe(0xe40c292c % 16);
    expect(partitionOf('foobar')).toBe(0xbf9cf968 % 16);
    expect(partitionOf('FooBar')).toBe(0xbf9cf968 % 16);
  });
});

describe('keyedUserId', () => {
  const key = Buffer.alloc(32, 7);

  it('When the same e-mail is written in another case or with blanks, then the id is the same', () => {
    const id = keyedUserId(key, 'ada@example.com');
    expect(keyedUserId(key, 'Ada@Example.COM')).toBe(id);
    expect(keyedUserId(key, '  ada@example.com\t')).toBe(id);
    expect(keyedUserId(key, ' ADA@EXAMPLE.COM ')).toBe(id);
  });

  it('When the e-mails differ, then the ids differ', () => {
    const emails = ['ada@example.com', 'ada@example.org', 'ada.l@example.com', 'bob@example.com'];
    expect(new Set(emails.map((email) => keyedUserId(key, email))).size).toBe(emails.length);
  });

  it('When an id is derived, then it is a valid UUID version 4, not the public UUIDv5 of the e-mail', () => {
    const id = keyedUserId(key, 'ada@example.com');
    expect(isUuid(id)).toBe(true);
    expect(uuidVersion(id)).toBe(4);
    expect(id).not.toBe(legacyUserIdForEmail('ada@example.com'));
  });

  it('When the key differs, then the id of one e-mail differs', () => {
    expect(keyedUserId(Buffer.alloc(32, 8), 'ada@example.com')).not.toBe(keyedUserId(key, 'ada@example.com'));
  });

  it('When an id is derived as before ADR 0035, then it is the UUIDv5 it always was', () => {
    expect(uuidVersion(legacyUserIdForEmail('ada@example.com'))).toBe(5);
  });
});

describe('createKeys', () => {
  const keys = createKeys('test:keys:');

  it("When keys of one aggregate are built, then they share the hash tag of the aggregate's log partition", () => {
    for (const id of [...ids.slice(0, 50), keyedUserId(Buffer.alloc(32, 7), 'ada@example.com')]) {
      const tag = partitionTag(partitionOf(id));
      const log = keys.logPartition(partitionOf(id));
      expect(log).toContain(tag);
      const aggregateKeys = [
        keys.aggregateStream('user', id),
        keys.aggregateRecord('user', id),
        keys.aggregateLock('user', id),
      ];
      for (const key of aggregateKeys) {
        expect(key.startsWith('test:keys:')).toBe(true);
        expect(key).toContain(tag);
        expect(clusterHashTag(key)).toBe(clusterHashTag(log));
      }
      expect(new Set(aggregateKeys).size).toBe(3);
    }
  });

  it('When the aggregate id differs only in case, then its keys are the same', () => {
    expect(keys.aggregateStream('user', 'ABC-def')).toBe(keys.aggregateStream('user', 'abc-DEF'));
    expect(keys.aggregateLock('user', 'ABC-def')).toBe(keys.aggregateLock('user', 'abc-DEF'));
  });

  it('When two aggregate types share an id, then their streams are distinct', () => {
    expect(keys.aggregateStream('user', 'x1')).not.toBe(keys.aggregateStream('counter', 'x1'));
  });
});
