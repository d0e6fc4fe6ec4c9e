/**
 * Workers scaled out from the image (docs/operators.md, "Deployment"): one ingress container and two
 * worker containers on one Redis share imports, projections and webhook deliveries, each done once,
 * and a worker lost in the middle of an import (SIGKILL, as a crashed node) loses nothing.
 */
import { randomUUID } from 'node:crypto';

import { buildTestImage } from '../../scripts/image/build';
import { podman } from '../../scripts/image/podman';
import { freePort } from '../../scripts/lib/free-port';
import { createTestApp, type TestApp, testRedisEnv, uniquePrefix } from '../helpers/app-fixture';
import { type Container, removeContainers, runContainer } from '../helpers/containers';
import { bearerToken, commandBody, exchange } from '../helpers/http-client';
import type { ImportJobView } from '../helpers/import-workers';
import { logLines, untilImportsLogFinished } from '../helpers/import-workers';
import { eventually } from '../helpers/processes';
import { type SeedUser, seedUsers, seedUsersWithPasswords } from '../helpers/seed-users';
import { userIdForEmail } from '../helpers/user-ids';
import { parsedDeliveries, startReceiver, type WebhookReceiver } from '../helpers/webhooks';

const ADMIN = { email: 'scaled-admin@example.com', password: 'scaled-admin-password' };
const WORKER = ['node', 'dist/workers/main.js'] as const;

describe('Two worker containers and one ingress container', () => {
  let observer: TestApp;
  let receiver: WebhookReceiver;
  let ingress: Container;
  let workers: Container[];
  let baseUrl: string;
  let authorization: string;
  let env: Record<string, string>;

  const send = (path: string, body: unknown) => exchange(baseUrl, 'POST', path, { authorization, body });
  const ok = async (path: string, body: unknown) => {
    const answer = await send(path, body);
    if (!answer.ok || answer.status !== 200) throw new Error(`${path} answered ${JSON.stringify(answer)}`);
    return answer.body as Record<string, unknown>;
  };
  const startWorker = async () => {
    const worker = runContainer({ image: await buildTestImage(), command: WORKER, env });
    await worker.waitForOutput('worker ready', 120_000);
    return worker;
  };
  const importUsers = async (users: readonly SeedUser[]) =>
    (
      await ok('/api/import', {
        requestId: randomUUID(),
        importerType: 'UserSeeding',
        priority: 'Normal',
        importData: { enabled: true, skipIfUsersExist: false, users },
      })
    ).importJobId as string;
  const jobResult = async (importJobId: string) =>
    (
      (await ok('/api/readmodel', { query: { queryType: 'GetImportJobResult', importJobId } }))
        .results as ImportJobView[]
    )[0]!;
  const untilFinished = async (importJobId: string) => {
    let job: ImportJobView | undefined;
    await eventually(async () => (job = await jobResult(importJobId)).status !== 'Pending', 120_000, 250);
    return job!;
  };
  /** How many events each user's stream holds (exactly one each when no row ran twice or was lost). */
  const streamLengths = (users: readonly SeedUser[]) =>
    Promise.all(
      users.map((user) => observer.services.store.streamLength('user', userIdForEmail(user.email))),
    );
  /** The (aggregate, version) pairs delivered for `aggregateIds`, and the webhook-id of every delivery. */
  const deliveriesOf = (aggregateIds: ReadonlySet<string>) => {
    const delivered = parsedDeliveries(receiver).filter(({ payload }) =>
      aggregateIds.has(payload.data.aggregateId),
    );
    const ids = delivered.map(({ id }) => id);
    return {
      events: new Set(delivered.map(({ payload }) => `${payload.data.aggregateId}@${payload.data.version}`)),
      ids,
    };
  };

  beforeAll(async () => {
    const image = await buildTestImage();
    const prefix = uniquePrefix();
    const port = await freePort();
    baseUrl = `http://127.0.0.1:${port}`;
    receiver = await startReceiver();
    env = {
      ...testRedisEnv(),
      REDIS_KEY_PREFIX: prefix,
      JWT_SECRET: 'scaled-workers-test-jwt-secret-0123456789',
      ADMIN_EMAIL: ADMIN.email,
      ADMIN_PASSWORD: ADMIN.password,
      // The receiver listens on this host's loopback, over http.
      WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
      // A killed worker's import is taken over once its lock lapses: 3 s instead of 30.
      IMPORT_JOB_LOCK_MS: '3000',
      // One import at a time per worker: six imports at once must go to both.
      WORKER_CONCURRENCY: '1',
    };
    observer = await createTestApp({ REDIS_KEY_PREFIX: prefix });
    ingress = runContainer({ image, env: { ...env, PORT: String(port), HOST: '127.0.0.1' } });
    await ingress.waitForOutput('"message":"ingress listening"', 120_000);
    workers = await Promise.all([startWorker(), startWorker()]);
    authorization = await bearerToken(baseUrl, ADMIN.email, ADMIN.password);
    await ok(
      '/api/command',
      commandBody('CreateWebhookSubscription', {
        aggregateRootId: randomUUID(),
        url: receiver.url,
        eventTypes: ['*'],
      }),
    );
  }, 600_000);

  afterAll(async () => {
    await removeContainers(ingress, ...(workers ?? []));
    await receiver?.stop();
    await observer?.close();
  });

  it('When imports and team commands arrive together, then both workers take imports, and every row, projection and webhook delivery is done once', async () => {
    const batches = Array.from({ length: 6 }, (_, i) => seedUsers(100, { label: `shared-${i}` }));
    const importJobIds = await Promise.all(batches.map((users) => importUsers(users)));
    const teams = Array.from({ length: 20 }, () => randomUUID());
    for (const [i, teamId] of teams.entries()) {
      await ok(
        '/api/command',
        commandBody('CreateFantasyTeam', { aggregateRootId: teamId, name: `Scaled ${i}` }),
      );
      await ok(
        '/api/command',
        commandBody('LinkFantasyTeam', {
          aggregateRootId: teamId,
          fantasyTeamExternalId: i + 1,
          fantasyUserId: i + 1,
        }),
      );
    }

    const finished = await Promise.all(importJobIds.map((importJobId) => untilFinished(importJobId)));
    expect(finished.map((job) => [job.status, job.commandsExecuted])).toEqual(
      importJobIds.map(() => ['Completed', 100]),
    );
    const users = batches.flat();
    expect((await streamLengths(users)).filter((length) => length !== 1)).toEqual([]);
    // Each import ran on one worker, once; between them, the two workers ran them all.
    await untilImportsLogFinished(() => workers.map((worker) => worker.stdout()).join('\n'), importJobIds);
    const ranBy = workers.map((worker) =>
      logLines(worker.stdout(), 'import finished').map((line) => line.importJobId),
    );
    expect(ranBy.flat().sort()).toEqual([...importJobIds].sort());
    expect(ranBy.every((ran) => ran.length > 0)).toBe(true);

    // Projected once each: every team reads at the version of its last command.
    for (const teamId of teams) {
      const read = await ok('/api/readmodel', {
        query: { queryType: 'GetFantasyTeam', id: teamId, minVersion: 2 },
      });
      expect(read.results).toEqual([expect.objectContaining({ id: teamId, version: 2 })]);
    }

    // Delivered once each: 600 creations and 40 team events, no webhook-id twice.
    const aggregates = new Set([...users.map((user) => userIdForEmail(user.email)), ...teams]);
    await eventually(
      () => deliveriesOf(aggregates).events.size === users.length + 2 * teams.length,
      60_000,
      250,
    );
    const { events, ids } = deliveriesOf(aggregates);
    expect(events.size).toBe(640);
    expect(ids).toHaveLength(640);
    expect(new Set(ids).size).toBe(640);
  }, 300_000);

  it('When the worker running an import is killed (SIGKILL) in the middle of it, then the other worker finishes it and no row is lost or run twice', async () => {
    // Passwords make each row cost an argon2 hash: the import lasts long enough to be interrupted.
    const users = seedUsersWithPasswords(300, undefined, { label: 'killed' });
    const importJobId = await importUsers(users);
    let holder: Container | undefined;
    await eventually(
      async () => {
        holder = workers.find((worker) =>
          logLines(worker.stdout(), 'import started').some((line) => line.importJobId === importJobId),
        );
        const job = await jobResult(importJobId);
        if (job.status !== 'Pending')
          throw new Error(`finished before it could be interrupted: ${job.message}`);
        return holder !== undefined && job.progress.done > 30;
      },
      60_000,
      50,
    );
    await podman(['kill', '--signal', 'KILL', holder!.name]);
    expect(await holder!.exited).not.toBe(0);
    const survivor = workers.find((worker) => worker !== holder)!;
    workers = [survivor];

    const finished = await untilFinished(importJobId);
    expect(finished).toMatchObject({
      status: 'Completed',
      commandsExecuted: 300,
      progress: { done: 300, total: 300 },
    });
    expect((await streamLengths(users)).filter((length) => length !== 1)).toEqual([]);
    // Every creation delivered; a delivery the killed worker had in flight may come again, under
    // the same webhook-id, which a receiver drops (Standard Webhooks).
    const aggregates = new Set(users.map((user) => userIdForEmail(user.email)));
    await eventually(() => deliveriesOf(aggregates).events.size === 300, 60_000, 250);
    const { ids } = deliveriesOf(aggregates);
    expect(new Set(ids).size).toBe(300);
  }, 300_000);
});
