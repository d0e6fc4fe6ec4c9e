/**
 * Redis stopped while requests are in flight: fast 503 problems, no crash, full recovery when it
 * returns, and the BullMQ workers resume consuming.
 *
 * A real ingress process and a real worker process on a Redis of each test's own (AOF): Redis is
 * SIGKILLed in the middle of lanes of reads, commands, sign-ins and imports, then while a High
 * import runs inline in the ingress.
 */
import { randomUUID } from 'node:crypto';

import { importJobIdFor } from '../../shared/importers/import-queue';
import type { ImportRecord } from '../../shared/importers/import-results';
import { faultStacks } from '../helpers/fault-stack';
import { basicAuth, bearerToken, commandBody, type Exchange, exchange } from '../helpers/http-client';
import { type ImportJobView, logLines, untilImportsLogFinished } from '../helpers/import-workers';
import { eventually, isAlive } from '../helpers/processes';
import { type SeedUser, seedUsersWithPasswords } from '../helpers/seed-users';
import { userIdForEmail } from '../helpers/user-ids';

const PASSWORD = 'outage-test-password';
/** Each answer, a 503 included, must come within this bound: a caller must never hang on an outage. */
const ANSWER_BOUND_MS = 3_000;
/**
 * How long Redis stays away at least: twice ioredis' reconnect backoff cap (2 s), so every
 * connection, BullMQ's included, fails to reconnect several times before it returns.
 */
const OUTAGE_MS = 4_000;

interface Sent {
  readonly kind: string;
  /** Whether it was sent before Redis stopped, while it was away, or after it came back. */
  readonly at: 'before' | 'outage' | 'after';
  /** The statuses a normal answer of this kind may have. */
  readonly normal: readonly number[];
  readonly answer: Exchange;
  /** When the answer (or the network error) came, by Date.now(). */
  readonly answeredAt: number;
  /** For imports: the requestId, so an import answered 503 can be resent. */
  readonly requestId?: string;
}

/**
 * What is wrong with an answer: empty when it is normal or a 503 problem. Whatever met the outage
 * (sent during it, in flight when Redis stopped, or answered 503) must also have come within the bound.
 */
function faultsOf({ kind, normal, answer, at, answeredAt }: Sent, stoppedAt: number): string[] {
  if (!answer.ok) return [`${kind}: network error after ${answer.ms} ms: ${answer.error}`];
  const faults: string[] = [];
  const metOutage = at === 'outage' || (at === 'before' && answeredAt >= stoppedAt) || answer.status === 503;
  if (metOutage && answer.ms > ANSWER_BOUND_MS) faults.push(`${kind}: answered after ${answer.ms} ms`);
  if (normal.includes(answer.status)) return faults;
  if (answer.status !== 503) return [...faults, `${kind}: ${answer.status} ${JSON.stringify(answer.body)}`];
  if (!answer.contentType.startsWith('application/problem+json'))
    faults.push(`${kind}: 503 without a problem body (${answer.contentType}) ${JSON.stringify(answer.body)}`);
  if (answer.retryAfter !== '1') faults.push(`${kind}: 503 without Retry-After`);
  return faults;
}

describe('Redis stopped while requests are in flight', () => {
  const stacks = faultStacks();
  afterEach(() => stacks.stop());

  it('When Redis stops during a burst of reads, commands, sign-ins and imports, then each answer is normal or a 503 problem within 3 s, no process dies, and once Redis is back everything works and the same worker consumes a new import', async () => {
    const { redis, ingress, worker } = await stacks.start(
      {
        JWT_SECRET: 'outage-test-secret-outage-test-secret-0123',
        // The burst queues far more imports than a worker stopped by the outage can finish meanwhile.
        MAX_PENDING_IMPORTS_PER_USER: '1000',
      },
      async (checker) => {
        await checker.createUser({ email: 'member@example.com', password: PASSWORD });
        await checker.createUser({
          email: 'manager@example.com',
          password: PASSWORD,
          roles: ['UserManager'],
        });
      },
    );
    const pids = { ingress: ingress.process.child.pid, worker: worker.child.pid };
    const { baseUrl } = ingress;
    const bearer = await bearerToken(baseUrl, 'member@example.com', PASSWORD);
    const memberBasic = basicAuth('member@example.com', PASSWORD);
    const managerBasic = basicAuth('manager@example.com', PASSWORD);

    const command = (type: string, fields: Record<string, unknown>) =>
      exchange(baseUrl, 'POST', '/api/command', { authorization: bearer, body: commandBody(type, fields) });
    const query = (authorization: string, fields: Record<string, unknown>) =>
      exchange(baseUrl, 'POST', '/api/readmodel', { authorization, body: { query: fields } });
    const usersOf = (requestId: string) => {
      // Without passwords: no argon2 hash per user, so the worker keeps up with a lane of imports.
      const users =
        importedUsers.get(requestId) ?? seedUsersWithPasswords(1).map(({ password: _, ...user }) => user);
      importedUsers.set(requestId, users);
      return users;
    };
    // An import resent after a 503 carries the same requestId and data, as a client's retry would.
    const importedUsers = new Map<string, Omit<SeedUser, 'password'>[]>();
    const submitImport = (requestId: string) =>
      exchange(baseUrl, 'POST', '/api/import', {
        authorization: managerBasic,
        body: {
          requestId,
          importerType: 'UserSeeding',
          priority: 'Normal',
          importData: { enabled: true, skipIfUsersExist: false, users: usersOf(requestId) },
        },
      });
    const jobResult = async (importJobId: string) => {
      const answer = await query(managerBasic, { queryType: 'GetImportJobResult', importJobId });
      return answer.ok && answer.status === 200
        ? ((answer.body as { results: ImportJobView[] }).results[0] ?? null)
        : null;
    };
    const completed = async (importJobId: string) => {
      try {
        // A job that was running when Redis stopped is taken again once its lock (IMPORT_JOB_LOCK_MS,
        // 30 s) lapses and the stalled check sees it: up to 45 s after Redis is back.
        await eventually(async () => (await jobResult(importJobId))?.status === 'Completed', 60_000, 200);
      } catch (error) {
        // Say where it stopped: still Pending (nobody finishes it) or Failed (and why).
        const last = await jobResult(importJobId);
        throw new Error(`import ${importJobId} not Completed within 60 s: ${JSON.stringify(last)}`, {
          cause: error,
        });
      }
    };

    // Before the outage: a team exists and the worker consumes imports.
    const teamId = randomUUID();
    const created = await command('CreateFantasyTeam', { aggregateRootId: teamId, name: 'Outage' });
    expect(created).toMatchObject({ ok: true, status: 200 });
    const before = await submitImport(randomUUID());
    expect(before).toMatchObject({ ok: true, status: 200, body: { status: 'Pending' } });
    await completed((before as { body: { importJobId: string } }).body.importJobId);
    await eventually(async () => {
      const team = await query(bearer, { queryType: 'GetFantasyTeam', id: teamId });
      return team.ok && team.status === 200;
    });

    // Every kind of request, with the statuses a normal answer of it has.
    const kinds: [string, readonly number[], (requestId: string) => Promise<Exchange>][] = [
      ['readyz', [200], () => exchange(baseUrl, 'GET', '/readyz')],
      ['CurrentUser by Basic', [200], () => query(memberBasic, { queryType: 'CurrentUser' })],
      ['CurrentUser by Bearer', [200], () => query(bearer, { queryType: 'CurrentUser' })],
      ['GetFantasyTeam', [200], () => query(bearer, { queryType: 'GetFantasyTeam', id: teamId })],
      [
        'token',
        [200],
        () =>
          exchange(baseUrl, 'POST', '/api/auth/token', {
            body: { grant_type: 'password', username: 'member@example.com', password: PASSWORD },
          }),
      ],
      [
        'CreateFantasyTeam',
        [200],
        () => command('CreateFantasyTeam', { aggregateRootId: randomUUID(), name: 'Burst' }),
      ],
      // All lanes on one team: the lock makes some wait, and a link of a linked team is a 400.
      [
        'LinkFantasyTeam',
        [200, 400],
        () =>
          command('LinkFantasyTeam', { aggregateRootId: teamId, fantasyTeamExternalId: 7, fantasyUserId: 8 }),
      ],
      ['import', [200], (requestId) => submitImport(requestId)],
    ];
    // Lanes of back-to-back requests, each starting at another kind, so every kind is in flight
    // at every moment, the moment Redis stops included.
    const sent: Sent[] = [];
    let phase: 'before' | 'outage' | 'after' | 'done' = 'before';
    const lanes = Array.from({ length: kinds.length }, async (_, lane) => {
      for (let i = lane; phase !== 'done'; i++) {
        const [kind, normal, send] = kinds[i % kinds.length] as (typeof kinds)[number];
        const requestId = randomUUID();
        const at = phase;
        const answer = await send(requestId);
        sent.push({
          kind,
          normal,
          answer,
          at,
          answeredAt: Date.now(),
          ...(kind === 'import' ? { requestId } : {}),
        });
        // Paced while Redis is away: each answer is fast, and the point is its shape, not a flood.
        if (phase === 'outage') await new Promise((resolve) => setTimeout(resolve, 100));
      }
    });
    const answered = (at: Sent['at'], status: (status: number) => boolean) =>
      new Set(sent.filter((s) => s.at === at && s.answer.ok && status(s.answer.status)).map((s) => s.kind));
    let stoppedAt = Number.POSITIVE_INFINITY;
    try {
      // Traffic flows: every kind has been answered normally.
      await eventually(() => answered('before', (status) => status < 500).size === kinds.length, 20_000, 20);
      phase = 'outage';
      stoppedAt = Date.now();
      await redis.stop('SIGKILL');
      // Redis stays away until every kind has met the outage, and at least OUTAGE_MS: a blip that
      // ends before the first reconnect attempt would not show whether BullMQ's worker comes back.
      await eventually(
        () =>
          answered('outage', (status) => status === 503).size === kinds.length &&
          Date.now() - stoppedAt > OUTAGE_MS,
        20_000,
        50,
      );
      expect({ ingress: isAlive(ingress.process), worker: isAlive(worker) }).toEqual({
        ingress: true,
        worker: true,
      });
      phase = 'after';
      await redis.resume();
      // Until every kind has been answered normally again, by the same processes.
      await eventually(() => answered('after', (status) => status < 500).size === kinds.length, 20_000, 50);
    } finally {
      phase = 'done';
      await Promise.all(lanes);
    }

    expect(sent.flatMap((one) => faultsOf(one, stoppedAt))).toEqual([]);
    expect(answered('outage', (status) => status === 503).size).toBe(kinds.length);
    // Some requests were on their way when Redis stopped (sent before, answered after).
    expect(
      sent.filter(({ at, answeredAt }) => at === 'before' && answeredAt >= stoppedAt).length,
    ).toBeGreaterThan(0);

    // The same processes answer normally: a command, a read, and a new import consumed by the worker.
    const after = await command('CreateFantasyTeam', { aggregateRootId: randomUUID(), name: 'After' });
    expect(after).toMatchObject({ ok: true, status: 200, body: { success: true } });
    expect(await query(memberBasic, { queryType: 'CurrentUser' })).toMatchObject({ ok: true, status: 200 });
    const afterImport = await submitImport(randomUUID());
    expect(afterImport).toMatchObject({ ok: true, status: 200, body: { status: 'Pending' } });
    const afterJobId = (afterImport as { body: { importJobId: string } }).body.importJobId;
    await completed(afterJobId);
    await untilImportsLogFinished(() => worker.stdout(), [afterJobId]);
    expect(logLines(worker.stdout(), 'import finished')).toContainEqual(
      expect.objectContaining({ importJobId: afterJobId, status: 'Completed' }),
    );

    // Nothing sent during the outage is lost: imports accepted then complete, and one refused with
    // a 503 goes through when resent with its requestId.
    const importJobIds = await Promise.all(
      sent
        .filter(({ kind, answer }) => kind === 'import' && answer.ok)
        .map(async ({ answer, requestId = '' }) => {
          if (answer.ok && answer.status === 200) return (answer.body as { importJobId: string }).importJobId;
          const resent = await submitImport(requestId);
          expect(resent).toMatchObject({ ok: true, status: 200 });
          return (resent as { body: { importJobId: string } }).body.importJobId;
        }),
    );
    await Promise.all(importJobIds.map(completed));

    expect({
      ingress: isAlive(ingress.process),
      worker: isAlive(worker),
      pids: { ingress: ingress.process.child.pid, worker: worker.child.pid },
    }).toEqual({ ingress: true, worker: true, pids });
    // Losing Redis is logged once per connection, not once per reconnect attempt (docs/operators.md,
    // Operations: Redis outages); each failed request is logged once with its own requestId.
    for (const output of [ingress.process.stdout(), worker.stdout()]) {
      const lost = logLines(output, 'redis connection unavailable').map((line) => line.connection);
      expect(lost.length).toBeGreaterThan(0);
      expect(new Set(lost).size).toBe(lost.length);
      const retryNoise = output
        .split('\n')
        .filter((line) => line.includes('"level":"warn"') && /ECONNREFUSED|ECONNRESET|EPIPE/.test(line))
        .filter(
          (line) =>
            !/"message":"(redis connection unavailable|request failed: redis unavailable)"/.test(line),
        );
      expect(retryNoise).toEqual([]);
    }
    expect(ingress.process.stdout()).not.toContain('"status":500');
    expect({ ingress: ingress.process.stderr(), worker: worker.stderr() }).toEqual({
      ingress: '',
      worker: '',
    });
  }, 120_000);

  it('When Redis stops while a High import runs inline in the ingress, then its caller gets a 503 problem within 3 s, and once Redis is back the workers finish it, every user created once, without a resend', async () => {
    const {
      redis: durable,
      inspector,
      ingress,
      worker,
    } = await stacks.start(
      {
        JWT_SECRET: 'outage-test-secret-outage-test-secret-0123',
        // One user at a time: the inline run lasts long enough to be caught in the middle.
        IMPORT_COMMAND_CONCURRENCY: '1',
      },
      async (checker) => {
        await checker.createUser({
          email: 'manager@example.com',
          password: PASSWORD,
          roles: ['UserManager'],
        });
      },
    );
    const { baseUrl } = ingress;
    const managerBasic = basicAuth('manager@example.com', PASSWORD);
    const users = seedUsersWithPasswords(40);
    const requestId = randomUUID();
    const submit = () =>
      exchange(baseUrl, 'POST', '/api/import', {
        authorization: managerBasic,
        body: {
          requestId,
          importerType: 'UserSeeding',
          priority: 'High',
          importData: { enabled: true, skipIfUsersExist: false, users },
        },
      });
    const progress = async () => {
      const [stored] = await inspector.redis
        .mget(
          inspector.services.keys.importProgress(
            importJobIdFor(userIdForEmail('manager@example.com'), requestId),
          ),
        )
        .catch(() => [null]);
      return stored ? (JSON.parse(stored) as { done: number }).done : 0;
    };

    const inline = submit();
    // Stop Redis once the inline run has created a few users and has more to go.
    await eventually(async () => (await progress()) >= 3, 30_000, 20);
    await durable.stop('SIGKILL');
    const interrupted = await inline;
    expect(
      faultsOf({ kind: 'inline import', normal: [], answer: interrupted, at: 'outage', answeredAt: 0 }, 0),
    ).toEqual([]);
    expect(interrupted).toMatchObject({ ok: true, status: 503 });

    await durable.resume();
    await eventually(async () => {
      const ready = await exchange(baseUrl, 'GET', '/readyz');
      return ready.ok && ready.status === 200;
    });
    // Nobody resends: the ingress hands the job to the workers, which finish it.
    const importJobId = importJobIdFor(userIdForEmail('manager@example.com'), requestId);
    let record: ImportRecord | null = null;
    await eventually(
      async () => {
        // The inspector's own connection may come back after the ingress's: not an answer yet.
        const read = await inspector.services.importResults.get(importJobId).catch(() => undefined);
        if (read === undefined) return false;
        record = read;
        return record?.status !== 'Pending';
      },
      30_000,
      200,
    );
    expect(record).toMatchObject({ status: 'Completed', success: true, commandsExecuted: 40 });
    expect(logLines(ingress.process.stdout(), 'inline import handed to the workers')).toEqual([
      expect.objectContaining({ importJobId }),
    ]);
    await untilImportsLogFinished(() => worker.stdout(), [importJobId]);
    expect(logLines(worker.stdout(), 'import finished')).toEqual([
      expect.objectContaining({ importJobId, status: 'Completed', commandsExecuted: 40 }),
    ]);
    // A resend with its requestId is answered the finished import, and imports nothing again.
    const resent = await submit();
    expect(resent).toMatchObject({ ok: true, status: 200, body: { importJobId, status: 'Completed' } });
    const streams = await Promise.all(
      users.map((user) => inspector.services.store.streamLength('user', userIdForEmail(user.email))),
    );
    expect(streams.filter((length) => length !== 1)).toEqual([]);
    expect({ ingress: isAlive(ingress.process), worker: isAlive(worker) }).toEqual({
      ingress: true,
      worker: true,
    });
  }, 60_000);
});
