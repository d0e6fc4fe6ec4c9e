/**
 * An import lives and dies with its submitter (issue 29): a queued or running import re-checks,
 * between rows, that its submitter is enabled, still holds the importer's role and has the security
 * stamp it submitted with. Each change is made over HTTP by an Admin (or the submitter itself) while
 * a real worker process runs a UserManager's UserSeeding; the import then ends Failed, saying why and
 * how many rows ran, and starts no row later than the re-check interval (SUBMITTER_RECHECK_MS)
 * after the change was answered.
 */
import { randomUUID } from 'node:crypto';

import request from 'supertest';

import { importJobIdFor } from '../../../shared/importers/import-queue';
import type { ImportRecord } from '../../../shared/importers/import-results';
import { SUBMITTER_RECHECK_MS } from '../../../shared/importers/submitter-check';
import { createImportWorkersHarness, type ImportWorkersHarness } from '../../helpers/import-workers';
import { eventually } from '../../helpers/processes';
import { type SeedUser, seedUsersWithPasswords } from '../../helpers/seed-users';
import { passwordGrantToken } from '../../helpers/tokens';
import { userIdForEmail } from '../../helpers/user-ids';

/** Each costs an argon2 hash: the import runs for seconds, long enough to be changed midway. */
const ROWS = 400;
/** Rows run at once (IMPORT_COMMAND_CONCURRENCY), in the ingress and in the worker alike. */
const LANES = 4;
/**
 * The rule: no row starts later than SUBMITTER_RECHECK_MS after the change, give or take the read
 * of the submitter that finds it; this much more for that read and the event loop on a loaded
 * machine. A re-check a few times slower than the rule still fails it.
 */
const START_SLACK_MS = 1_000;
const ADMIN_PASSWORD = 'submitter-authority-admin-password';

interface Change {
  readonly by: 'admin' | 'submitter';
  readonly commandType: string;
  readonly command: (submitter: ImportWorkersHarness['manager']) => object;
}

const DISABLE: Change = {
  by: 'admin',
  commandType: 'DisableUser',
  command: ({ userId }) => ({ aggregateRootId: userId, reason: 'compromised' }),
};

/**
 * When the last row that ran started, at the earliest, from when the accounts were created (ms). A
 * lane takes its next row once its previous row ended, so the last of `created.length` rows was
 * taken after all but LANES of them had ended, each after its account was created. The rows' own
 * hashes, which come after their start and take long on a loaded machine, are not in it.
 */
function lastRowStartedAfter(created: readonly number[]): number {
  const sorted = [...created].sort((a, b) => a - b);
  return sorted.length > LANES ? (sorted[sorted.length - LANES - 1] as number) : Number.NEGATIVE_INFINITY;
}

/** The rule, checked on the rows that ran (see lastRowStartedAfter). */
function expectNoRowStartedLate(created: readonly number[], changedAt: number): void {
  expect(lastRowStartedAfter(created) - changedAt).toBeLessThanOrEqual(SUBMITTER_RECHECK_MS + START_SLACK_MS);
}

describe('An import ends with its submitter', () => {
  let harness: ImportWorkersHarness | undefined;

  afterEach(async () => {
    await harness?.close();
    harness = undefined;
  });

  /** A fresh harness (a worker started unless `inline`) and a Bearer token for an Admin of it. */
  const setUp = async ({ worker }: { worker: boolean }) => {
    const h = await createImportWorkersHarness();
    harness = h;
    expect(h.subject.config.imports.commandConcurrency).toBe(LANES);
    if (worker) await h.startWorker({ IMPORT_COMMAND_CONCURRENCY: String(LANES) });
    const adminEmail = `authority-admin-${randomUUID().slice(0, 8)}@example.com`;
    await h.subject.createUser({ email: adminEmail, password: ADMIN_PASSWORD, roles: ['Admin'] });
    const adminToken = await passwordGrantToken(h.subject.app, adminEmail, ADMIN_PASSWORD);
    const submitterToken = await passwordGrantToken(h.subject.app, h.manager.email, h.manager.password);
    return { h, adminToken, submitterToken };
  };

  /** The record as it stands (read from Redis: a deleted submitter can no longer ask for it). */
  const record = async (h: ImportWorkersHarness, importJobId: string): Promise<ImportRecord> => {
    const found = await h.subject.services.importResults.get(importJobId);
    if (!found) throw new Error(`import ${importJobId} has no record`);
    return found;
  };

  /** Makes the change over HTTP; returns when its answer came (the change was in effect by then). */
  const makeChange = async (
    h: ImportWorkersHarness,
    change: Change,
    tokens: { adminToken: string; submitterToken: string },
  ): Promise<number> => {
    const token = change.by === 'admin' ? tokens.adminToken : tokens.submitterToken;
    const res = await request(h.subject.app)
      .post('/api/command')
      .set('Authorization', `Bearer ${token}`)
      .send({ commandType: change.commandType, command: change.command(h.manager) });
    expect({ status: res.status, success: (res.body as { success: unknown }).success }).toEqual({
      status: 200,
      success: true,
    });
    return Date.now();
  };

  /** When each seeded user that exists was created (ms), by the service's clock. */
  const creationTimes = async (h: ImportWorkersHarness, users: readonly SeedUser[]) => {
    const accounts = await Promise.all(
      users.map((user) => h.subject.services.accounts.findById(userIdForEmail(user.email))),
    );
    return accounts.flatMap((account) => (account ? [Date.parse(account.createdAt)] : []));
  };

  /** The rows-ran count of the stop message, checked against `reason`. */
  const stoppedRows = (finished: ImportRecord, reason: string): number => {
    expect(finished).toMatchObject({
      status: 'Failed',
      success: false,
      errorCode: 'AGGREGATE_PROCESSING_FAILED',
    });
    const match = /^Import stopped after (\d+) of (\d+) rows: (.*)$/.exec(finished.errorMessage ?? '');
    expect({ total: match?.[2], reason: match?.[3] }).toEqual({ total: String(ROWS), reason });
    expect(finished.message).toBe(finished.errorMessage);
    return Number(match?.[1]);
  };

  const waitUntilRunning = (h: ImportWorkersHarness, importJobId: string) =>
    eventually(
      async () => {
        const current = await record(h, importJobId);
        if (current.status !== 'Pending') throw new Error(`finished before the change: ${current.message}`);
        return current.progress.done > 0;
      },
      60_000,
      20,
    );

  /**
   * A queued import (Normal, a worker process runs it) of ROWS users; `change` once its first rows
   * ran. Returns the finished record's rows-ran count after checking the rule.
   */
  const queuedImportStoppedBy = async (change: Change, reason: (submitterId: string) => string) => {
    const { h, ...tokens } = await setUp({ worker: true });
    const users = seedUsersWithPasswords(ROWS);
    const importJobId = await h.submitSeeding(users);
    await waitUntilRunning(h, importJobId);

    const changedAt = await makeChange(h, change, tokens);

    await eventually(async () => (await record(h, importJobId)).status !== 'Pending', 30_000, 50);
    const finished = await record(h, importJobId);
    const rowsRun = stoppedRows(finished, reason(h.manager.userId));
    const created = await creationTimes(h, users);
    expect(created.length).toBeLessThan(ROWS);
    expect(finished.commandsExecuted).toBe(created.length);
    expect(rowsRun).toBe(created.length);
    expectNoRowStartedLate(created, changedAt);
  };

  it('When an Admin disables the submitter of a running 400-row UserSeeding, then the import starts no row after the re-check interval and ends Failed, saying so and how many rows ran, and the rows that ran stay', async () => {
    await queuedImportStoppedBy(DISABLE, (id) => `the submitter ${id} was disabled`);
  }, 120_000);

  it('When an Admin sets the roles of the submitter of a running UserSeeding to Member, then the import starts no row after the re-check interval and ends Failed, naming the role it lost', async () => {
    await queuedImportStoppedBy(
      {
        by: 'admin',
        commandType: 'SetUserRoles',
        command: ({ userId }) => ({ aggregateRootId: userId, roles: ['Member'] }),
      },
      (id) =>
        `the submitter ${id} no longer holds a required role. Required roles: [UserManager, Admin]. User roles: [Member].`,
    );
  }, 120_000);

  it('When an Admin deletes the submitter of a running UserSeeding, then the import starts no row after the re-check interval and ends Failed, saying the submitter was deleted', async () => {
    await queuedImportStoppedBy(
      { by: 'admin', commandType: 'DeleteUser', command: ({ userId }) => ({ aggregateRootId: userId }) },
      (id) => `the submitter ${id} was deleted`,
    );
  }, 120_000);

  it('When the submitter of a running UserSeeding changes its password, then the import starts no row after the re-check interval and ends Failed, saying its security stamp changed', async () => {
    await queuedImportStoppedBy(
      {
        by: 'submitter',
        commandType: 'ChangePassword',
        command: ({ password }) => ({ currentPassword: password, newPassword: `new-${randomUUID()}` }),
      },
      (id) => `the security stamp of the submitter ${id} changed (its password or roles were changed)`,
    );
  }, 120_000);

  it('When an Admin disables the submitter of a High UserSeeding running inline in the ingress, then it starts no row after the re-check interval and answers Failed, saying so and how many rows ran', async () => {
    const { h, ...tokens } = await setUp({ worker: false });
    const users = seedUsersWithPasswords(ROWS);
    const requestId = randomUUID();
    const answer = request(h.subject.app)
      .post('/api/import')
      .set('Authorization', h.manager.authorization)
      .send({ requestId, importerType: 'UserSeeding', priority: 'High', importData: { users } })
      .then((res) => res);
    const importJobId = importJobIdFor(h.manager.userId, requestId);
    await eventually(
      async () => (await h.subject.services.importResults.get(importJobId)) !== null,
      30_000,
      20,
    );
    await waitUntilRunning(h, importJobId);

    const changedAt = await makeChange(h, DISABLE, tokens);

    const res = await answer;
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'Failed', processedSynchronously: true, success: false });
    const finished = await record(h, importJobId);
    const rowsRun = stoppedRows(finished, `the submitter ${h.manager.userId} was disabled`);
    expect((res.body as { errorMessage: string }).errorMessage).toBe(finished.errorMessage);
    const created = await creationTimes(h, users);
    expect(created.length).toBeLessThan(ROWS);
    expect(rowsRun).toBe(created.length);
    expectNoRowStartedLate(created, changedAt);
  }, 120_000);
});
