/**
 * Every key a command touches lives in its aggregate's partition or its caller's (ADR 0030), so a
 * master's failure stalls only the commands with something on it. Recorded, not listed: every
 * command Redis receives while a command request runs is read from MONITOR on each master, so a
 * new key on the command path is checked without anyone naming it here.
 */
import { randomUUID } from 'node:crypto';

import request from 'supertest';

import { keyHoldingNodes } from '../../../shared/redis/connections';
import { partitionOf, partitionTag } from '../../../shared/redis/partitions';
import { createTestApp, type TestApp } from '../../helpers/app-fixture';
import { monitorRedis, type RedisMonitor } from '../../helpers/redis-monitor';
import { passwordGrantToken } from '../../helpers/tokens';

const PASSWORD = 'command-path-keys-password';
/** Commands that name channels, not keys. */
const CHANNEL_COMMANDS = new Set(['publish', 'spublish', 'subscribe', 'ssubscribe', 'psubscribe']);
/** Commands whose keys are counted after the script (EVALSHA sha 2 k1 k2 ...). */
const SCRIPT_COMMANDS = new Set(['eval', 'evalsha', 'eval_ro', 'evalsha_ro', 'fcall', 'fcall_ro']);

/** The hash tag Redis Cluster places a key by: the first non-empty `{...}`, else none. */
function hashTag(key: string): string | null {
  const open = key.indexOf('{');
  const close = open < 0 ? -1 : key.indexOf('}', open + 1);
  return close > open + 1 ? key.slice(open, close + 1) : null;
}

/** The keys of one command as MONITOR shows it (arguments after the name). */
function keysOf([name = '', ...args]: string[], prefix: string): string[] {
  const command = name.toLowerCase();
  if (CHANNEL_COMMANDS.has(command)) return [];
  // Other tests share the server: only this test's keys (its prefix) count.
  const keys = SCRIPT_COMMANDS.has(command) ? args.slice(2, 2 + Number(args[1])) : args;
  return keys.filter((arg) => arg.startsWith(prefix));
}

describe('The keys of the command path', () => {
  let subject: TestApp;
  const monitors: RedisMonitor[] = [];
  let seen: string[][] = [];

  beforeAll(async () => {
    subject = await createTestApp({ JWT_SECRET: 'command-path-keys-test-jwt-secret-32-chars' });
    // One MONITOR per master: it shows every command the server runs, scripts' keys included.
    for (const node of keyHoldingNodes(subject.redis)) {
      const { host = '127.0.0.1', port = 6379 } = node.options;
      monitors.push(await monitorRedis({ host, port }, (args) => seen.push(args)));
    }
  });
  afterAll(async () => {
    for (const monitor of monitors) monitor.close();
    await subject.close();
  });

  const account = async (roles: string[]) => {
    const email = `keys-${randomUUID().slice(0, 8)}@example.com`;
    const userId = await subject.createUser({ email, password: PASSWORD, roles: roles as never });
    return { userId, token: await passwordGrantToken(subject.app, email, PASSWORD) };
  };

  /** Resolves once MONITOR has reported nothing new for 200 ms (or after 5 s of steady traffic). */
  const monitorQuiet = async () => {
    let count = -1;
    const until = Date.now() + 5_000;
    while (count !== seen.length && Date.now() < until) {
      count = seen.length;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  };

  /** Sends the command and returns the keys Redis saw for it (the test's prefix only). */
  const keysTouchedBy = async (token: string, body: object): Promise<string[]> => {
    // Warm: the caller's account is read once into the cache, then the command alone is recorded.
    // MONITOR lags behind under load: what came before (the sign-in's keys) is let in first.
    await monitorQuiet();
    seen = [];
    const res = await request(subject.app)
      .post('/api/command')
      .set('Authorization', `Bearer ${token}`)
      .send(body);
    expect(res.status).toBeLessThan(500);
    await monitorQuiet();
    const prefix = subject.config.redisKeyPrefix;
    return seen.flatMap((args) => keysOf(args, prefix));
  };

  const expectInPartitions = (
    keys: string[],
    callerUserId: string,
    aggregateId: string,
    exceptions: readonly string[] = [],
  ) => {
    expect(keys.length).toBeGreaterThan(0);
    const allowed = [partitionTag(partitionOf(callerUserId)), partitionTag(partitionOf(aggregateId))];
    const outside = keys.filter(
      (key) => !allowed.includes(hashTag(key) ?? 'none') && !exceptions.includes(key),
    );
    expect({ allowed, outside }).toEqual({ allowed, outside: [] });
  };

  it('When a Member creates, changes and retries team commands with request ids, then every key is in the team’s or the caller’s partition', async () => {
    const member = await account(['Member']);
    const teamId = randomUUID();
    const requestId = randomUUID();
    const create = {
      commandType: 'CreateFantasyTeam',
      command: { aggregateRootId: teamId, name: 'Keys' },
      requestId,
    };
    const link = {
      commandType: 'LinkFantasyTeam',
      command: { aggregateRootId: teamId, fantasyTeamExternalId: 5, fantasyUserId: 6 },
      requestId: randomUUID(),
    };
    const refused = {
      commandType: 'CreateFantasyTeam',
      command: { aggregateRootId: teamId, name: 'Again' },
      requestId: randomUUID(),
    };
    for (const body of [create, create, link, refused, refused, { ...link, requestId }]) {
      expectInPartitions(await keysTouchedBy(member.token, body), member.userId, teamId);
    }
  });

  it('When a Member changes its password with a request id, then every key is in its own partition', async () => {
    const member = await account(['Member']);
    const body = {
      commandType: 'ChangePassword',
      command: { currentPassword: PASSWORD, newPassword: 'a-brand-new-password-1' },
      requestId: randomUUID(),
    };
    expectInPartitions(await keysTouchedBy(member.token, body), member.userId, member.userId);
    expectInPartitions(await keysTouchedBy(member.token, body), member.userId, member.userId);
  });

  it('When an Admin disables an account with a request id, then every key is in that account’s or the caller’s partition', async () => {
    const admin = await account(['Admin']);
    const member = await account(['Member']);
    const body = {
      commandType: 'DisableUser',
      command: { aggregateRootId: member.userId },
      requestId: randomUUID(),
    };
    expectInPartitions(await keysTouchedBy(admin.token, body), admin.userId, member.userId);
  });

  it('When an Admin creates a webhook subscription with a request id, then every key is in the subscription’s or the caller’s partition', async () => {
    const admin = await account(['Admin']);
    const subscriptionId = randomUUID();
    const body = {
      commandType: 'CreateWebhookSubscription',
      command: {
        aggregateRootId: subscriptionId,
        url: 'https://hooks.example.com/fantasy',
        eventTypes: ['FantasyTeamLinkedEvent'],
      },
      requestId: randomUUID(),
    };
    // The one known exception (ADR 0030): the set the delivery engine finds subscriptions in, added
    // to by an Admin's create only.
    const known = [subject.services.keys.webhookSubscriptions()];
    expectInPartitions(await keysTouchedBy(admin.token, body), admin.userId, subscriptionId, known);
  });
});
