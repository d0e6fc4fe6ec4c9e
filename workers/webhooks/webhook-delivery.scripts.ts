import path from 'node:path';

import type { Result } from 'ioredis';

import { defineScript, LOCK_SCRIPTS, type ScriptDefinition } from '../../shared/redis/scripts';

/** The dispatcher's cursor script, with the lock scripts its partition leases use. */
export const WEBHOOK_DELIVERY_SCRIPTS: readonly ScriptDefinition[] = [
  ...LOCK_SCRIPTS,
  defineScript({
    name: 'moveWebhookCursor',
    file: path.join(__dirname, 'lua', 'move-webhook-cursor-1.lua'),
    numberOfKeys: 1,
  }),
];

declare module 'ioredis' {
  interface RedisCommander<Context> {
    moveWebhookCursor(
      cursorKey: string,
      expectedCheckpoint: string,
      checkpoint: string,
      attempt: number,
      eventId: string,
      nextAt: number,
      replayId: string,
    ): Result<number, Context>;
  }
}
