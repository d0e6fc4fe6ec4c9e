import path from 'node:path';

import type { Result } from 'ioredis';

import { defineScript, LOCK_SCRIPTS, type ScriptDefinition } from '../redis/scripts';

/** The event store's scripts (lua/), with the lock's own that it releases. */
export const EVENT_STORE_SCRIPTS: readonly ScriptDefinition[] = [
  ...LOCK_SCRIPTS,
  defineScript({
    name: 'appendEvents',
    file: path.join(__dirname, 'lua', 'append-events-6.lua'),
    numberOfKeys: 6,
  }),
  defineScript({
    name: 'lockAndLoad',
    file: path.join(__dirname, 'lua', 'lock-and-load-3.lua'),
    numberOfKeys: 3,
  }),
  // The same two scripts for a command without a request id: its request-id keys are not declared
  // (the scripts read them only for a request id).
  defineScript({
    name: 'appendEventsWithoutRequestId',
    file: path.join(__dirname, 'lua', 'append-events-6.lua'),
    numberOfKeys: 4,
    withoutOptionalKeys: true,
  }),
  defineScript({
    name: 'lockAndLoadWithoutRequestId',
    file: path.join(__dirname, 'lua', 'lock-and-load-3.lua'),
    numberOfKeys: 2,
    withoutOptionalKeys: true,
  }),
  defineScript({
    name: 'rewriteSnapshot',
    file: path.join(__dirname, 'lua', 'rewrite-snapshot-1.lua'),
    numberOfKeys: 1,
  }),
  defineScript({
    name: 'rewriteStream',
    file: path.join(__dirname, 'lua', 'rewrite-stream-2.lua'),
    numberOfKeys: 2,
  }),
  defineScript({
    name: 'logPartitionCounters',
    file: path.join(__dirname, 'lua', 'log-partition-counters-1.lua'),
    numberOfKeys: 1,
  }),
  defineScript({
    name: 'trimLogPartition',
    file: path.join(__dirname, 'lua', 'trim-log-partition-2.lua'),
    numberOfKeys: 2,
  }),
  defineScript({
    name: 'swapLogPartition',
    file: path.join(__dirname, 'lua', 'swap-log-partition-2.lua'),
    numberOfKeys: 2,
  }),
];

declare module 'ioredis' {
  interface RedisCommander<Context> {
    appendEvents(...keysThenArgs: (string | number)[]): Result<number, Context>;
    appendEventsWithoutRequestId(...keysThenArgs: (string | number)[]): Result<number, Context>;
    lockAndLoad(
      lockKey: string,
      recordKey: string,
      requestsKey: string,
      token: string,
      ttlMs: number,
      requestId: string,
    ): Result<[0] | [1, string | null, string | null, string | null, string | null], Context>;
    lockAndLoadWithoutRequestId(
      lockKey: string,
      recordKey: string,
      token: string,
      ttlMs: number,
    ): Result<[0] | [1, string | null, string | null, string | null, string | null], Context>;
    rewriteSnapshot(
      recordKey: string,
      version: number,
      state: string,
      stateVersion: number,
    ): Result<number, Context>;
    rewriteStream(...keysThenArgs: (string | number)[]): Result<number, Context>;
    logPartitionCounters(partitionKey: string): Result<[lastId: string, entriesAdded: number], Context>;
    trimLogPartition(partitionKey: string, trimmedThroughKey: string, minId: string): Result<number, Context>;
    swapLogPartition(
      partitionKey: string,
      copyKey: string,
      lastCopiedId: string,
      maxTail: number,
    ): Result<number, Context>;
  }
}
