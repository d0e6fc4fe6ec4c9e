import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';

import { freePort } from '../../../scripts/lib/free-port';
import { listen, type RunningServer } from '../../../shared/http/server';
import { createTestApp, type TestApp } from '../../helpers/app-fixture';
import { InProcessImportWorker } from '../../helpers/in-process-import-worker';
import { eventually, PROJECT_ROOT } from '../../helpers/processes';
import { seedUsers } from '../../helpers/seed-users';
import { userIdForEmail } from '../../helpers/user-ids';

const PASSWORD = 'import-cli-test-password';

interface CliRun {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs scripts/import.ts through tsx, as `npm run import` runs its compiled twin, without a terminal. */
function runCli(args: readonly string[], env: Record<string, string>): Promise<CliRun> {
  // Only what the test passes: an IMPORT_* variable of the machine running the tests must not leak in.
  const inherited = Object.fromEntries(
    Object.entries(process.env).filter(([name]) => !name.startsWith('IMPORT_')),
  );
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', path.join(PROJECT_ROOT, 'scripts', 'import.ts'), ...args],
    { cwd: PROJECT_ROOT, env: { ...inherited, ...env }, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve) => child.once('close', (code) => resolve({ code, stdout, stderr })));
}

describe('npm run import (scripts/import.ts)', () => {
  let subject: TestApp;
  let server: RunningServer;
  let worker: InProcessImportWorker;
  let dir: string;

  beforeAll(async () => {
    subject = await createTestApp();
    await subject.createUser({ email: 'manager@example.com', password: PASSWORD, roles: ['UserManager'] });
    await subject.createUser({ email: 'member@example.com', password: PASSWORD, roles: ['Member'] });
    server = await listen(subject.app, 0, '127.0.0.1');
    worker = new InProcessImportWorker(subject);
    worker.start();
    dir = await mkdtemp(path.join(tmpdir(), 'import-cli-'));
  });
  afterAll(async () => {
    await worker.close();
    await server.close(1_000);
    await subject.services.importQueue.close();
    await subject.close();
    await rm(dir, { recursive: true, force: true });
  });

  const credentials = (email = 'manager@example.com', password = PASSWORD) => ({
    IMPORT_API_URL: `http://127.0.0.1:${server.port}`,
    IMPORT_EMAIL: email,
    IMPORT_PASSWORD: password,
  });
  const importFile = async (content: object) => {
    const file = path.join(dir, `${randomUUID()}.json`);
    await writeFile(file, JSON.stringify(content));
    return file;
  };
  const exists = async (email: string) =>
    (await subject.services.accounts.findById(userIdForEmail(email))) !== null;

  it('When UserSeeding data is imported with --wait, then it is queued, waited for, the users exist and the exit code is 0', async () => {
    const users = seedUsers(3);
    const file = await importFile({ enabled: true, skipIfUsersExist: false, users });

    const run = await runCli([file, '--wait'], credentials());

    expect(run).toMatchObject({ code: 0 });
    expect(run.stdout).toMatch(/\(UserSeeding, Normal priority, requestId [0-9a-f-]{36}\): Pending/);
    expect(run.stdout).toContain('Completed: Import completed successfully (3 commands, 3 events, 0 skipped');
    expect(run.stderr).toMatch(/progress 3\/3 rows \(100%\) Completed/);
    for (const user of users) expect(await exists(user.email)).toBe(true);
  });

  it('When the file is a whole request body and --priority High is given, then that importer runs and the exit code is 0', async () => {
    const users = seedUsers(1);
    const file = await importFile({
      importerType: 'UserSeeding',
      priority: 'Normal',
      importData: { users },
    });

    const run = await runCli([file, '--priority', 'High', '--wait'], credentials());

    expect(run.code).toBe(0);
    expect(run.stdout).toContain('High priority');
    expect(await exists(users[0]?.email ?? '')).toBe(true);
  });

  it('When IMPORT_REQUEST_ID is reused (a cron retry), then the second run answers the first job and imports nothing twice', async () => {
    const users = seedUsers(2);
    const file = await importFile({ users });
    const env = { ...credentials(), IMPORT_REQUEST_ID: randomUUID() };

    const first = await runCli([file, '--wait'], env);
    const second = await runCli([file, '--wait'], env);

    expect(first.code).toBe(0);
    expect(second.code).toBe(0);
    const jobId = (run: CliRun) => /^import ([0-9a-f-]{36}) /m.exec(run.stdout)?.[1];
    expect(jobId(second)).toBeDefined();
    expect(jobId(second)).toBe(jobId(first));
    expect(second.stdout).toContain('(2 commands, 2 events, 0 skipped');
  });

  it('When --dry-run is given, then the outcome is printed, nothing is created and the exit code is 0', async () => {
    const users = seedUsers(2);
    const file = await importFile({ users });

    const run = await runCli([file, '--dry-run'], credentials());

    expect(run.code).toBe(0);
    expect(run.stdout).toContain('dry run: would create 2, would skip 0');
    expect(await exists(users[0]?.email ?? '')).toBe(false);
  });

  it('When the submitter is only a Member, then the import fails, the reason is printed and the exit code is 1', async () => {
    const users = seedUsers(2);
    const file = await importFile({ users });

    const run = await runCli([file, '--wait'], credentials('member@example.com'));

    expect(run.code).toBe(1);
    expect(run.stdout).toContain('Failed: ');
    expect(run.stdout).toMatch(
      /error AGGREGATE_PROCESSING_FAILED: Import failed at aggregate .* lacks required roles to execute CreateUserCommand/,
    );
    expect(await exists(users[0]?.email ?? '')).toBe(false);
  });

  it('When a user exists already, then the row is named and the exit code is 1', async () => {
    const file = await importFile({
      users: [{ email: 'member@example.com', userType: 'Human', roles: ['Member'] }],
    });

    const run = await runCli([file, '--wait'], credentials());

    expect(run.code).toBe(1);
    expect(run.stdout).toContain('row 0 (member@example.com): USER_EXISTS');
  });

  it('When the job is still Pending when --timeout runs out, then the exit code is 4 and the job carries on', async () => {
    const queue = subject.services.importQueue.queue;
    const users = seedUsers(1);
    const file = await importFile({ users });
    await queue.pause();
    try {
      const run = await runCli([file, '--wait', '--timeout', '1'], credentials());

      expect(run.code).toBe(4);
      expect(run.stderr).toMatch(/import [0-9a-f-]{36} is still Pending after 1 s \(0\/1 rows\)/);
    } finally {
      await queue.resume();
    }
    await eventually(() => exists(users[0]?.email ?? ''), 15_000);
  });

  it('When IMPORT_EMAIL is missing, then one line names it and the exit code is 2', async () => {
    const file = await importFile({ users: seedUsers(1) });
    const { IMPORT_EMAIL: _omitted, ...env } = credentials();

    const run = await runCli([file], env);

    expect(run.code).toBe(2);
    expect(run.stderr.trim().split('\n')).toEqual([expect.stringContaining('IMPORT_EMAIL must be set')]);
    expect(run.stdout).toBe('');
  });

  it('When the file is neither a request body nor UserSeeding data, then the exit code is 2', async () => {
    const file = await importFile({ something: 'else' });

    const run = await runCli([file], credentials());

    expect(run.code).toBe(2);
    expect(run.stderr).toContain('the file must hold a request body');
  });

  it('When the password is wrong, then the HTTP status is printed and the exit code is 3', async () => {
    const file = await importFile({ users: seedUsers(1) });

    const run = await runCli([file], credentials('manager@example.com', 'not-the-password'));

    expect(run.code).toBe(3);
    expect(run.stderr).toContain('POST /api/import answered HTTP 401');
  });

  it('When the service validation refuses the data, then the status and the problem body are printed and the exit code is 3', async () => {
    const file = await importFile({
      users: [{ email: 'not-an-email', userType: 'Human', roles: ['Member'] }],
    });

    const run = await runCli([file], credentials());

    expect(run.code).toBe(3);
    expect(run.stderr).toContain('POST /api/import answered HTTP 400');
    expect(run.stderr).toContain('One or more validation errors occurred.');
  });

  it('When nothing listens at IMPORT_API_URL, then the exit code is 3', async () => {
    const file = await importFile({ users: seedUsers(1) });

    const port = await freePort();

    const run = await runCli([file], { ...credentials(), IMPORT_API_URL: `http://127.0.0.1:${port}` });

    expect(run.code).toBe(3);
    expect(run.stderr).toContain(`could not reach http://127.0.0.1:${port}/api/import (connect ECONNREFUSED`);
  });
});
