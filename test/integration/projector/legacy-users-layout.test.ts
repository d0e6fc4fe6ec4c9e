import { randomUUID } from 'node:crypto';

import { createLogger } from '../../../shared/logger';
import { partitionOf } from '../../../shared/redis/partitions';
import { usersProjection } from '../../../shared/user/users.projection';
import { checkLegacyUsersLayout } from '../../../workers/projector/legacy-users-layout';
import { rebuildProjection } from '../../../workers/projector/rebuild';
import { CapturedLogs, createTestApp, type TestApp } from '../../helpers/app-fixture';

/**
 * The upgrade from the users projection under one `{users}` tag to its accounts' partitions (ADR
 * 0032): a worker's start finds the old layout and says what to run; the rebuild moves the
 * projection and deletes the old keys.
 */
describe('Upgrading the users projection from the {users} layout', () => {
  let subject: TestApp;
  beforeAll(async () => {
    subject = await createTestApp();
  });
  afterAll(async () => {
    await subject?.close();
  });

  it('When keys of the old layout are found at start, then a warning names the rebuild, and the rebuild moves every account into its partition and deletes the old keys', async () => {
    const { redis, services } = subject;
    const { keys } = services;
    const ids: string[] = [];
    for (const name of ['ada', 'alan', 'grace']) {
      ids.push(await subject.createUser({ email: `legacy-${name}-${randomUUID().slice(0, 6)}@example.com` }));
    }
    // What the layout before ADR 0032 left: documents, indexes and checkpoints under {users}.
    const legacy = [
      ...ids.map((id) => `${keys.prefix}{users}:user:${id}`),
      keys.users.legacyIndex(),
      `${keys.prefix}{users}:users:by-email:Member:Human:enabled`,
      `${keys.prefix}{users}:checkpoint:users:3`,
    ];
    for (const key of legacy) {
      if (key.includes(':by-email:')) await redis.zadd(key, 0, `someone@example.com\u0000${ids[0] ?? ''}`);
      else await redis.set(key, '{}');
    }

    const warningsAtStart = async () => {
      const logs = new CapturedLogs();
      const logger = createLogger({ level: 'info', processRole: 'test', stream: logs.stream });
      const found = await checkLegacyUsersLayout(redis, keys, logger);
      await new Promise((resolve) => setImmediate(resolve));
      logger.close();
      return { found, warnings: logs.lines.filter((line) => line.level === 'warn').map((line) => line.run) };
    };
    expect(await warningsAtStart()).toEqual({
      found: true,
      warnings: ['npm run projections:rebuild -- users'],
    });

    await rebuildProjection(redis, keys, usersProjection);
    const remaining = await Promise.all(legacy.map((key) => redis.exists(key)));
    expect(remaining).toEqual(legacy.map(() => 0));
    for (const id of ids) {
      const document = await redis.get(keys.users.user(id));
      expect(JSON.parse(document ?? 'null')).toMatchObject({ id });
      expect(keys.users.user(id).startsWith(`${keys.prefix}{p${partitionOf(id)}}:users:user:`)).toBe(true);
    }
    expect(await warningsAtStart()).toEqual({ found: false, warnings: [] });
  });
});
