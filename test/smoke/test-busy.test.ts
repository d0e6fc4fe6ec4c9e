/**
 * `npm run test:busy`: jest (here over a selection; `npm test` without arguments) while stress-ng
 * keeps both cores half busy, and the load stops when the run ends, however it ends. The cases that
 * need stress-ng are skipped where it is not installed (`.ci/run` does not install it).
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

import { commandName, descendantsOf, isRunning } from '../../scripts/lib/run-stop';
import { eventually, processTreeFixture, PROJECT_ROOT } from '../helpers/processes';

const SCRIPT = path.join(PROJECT_ROOT, 'scripts', 'test-busy.ts');
const WAITING_FIXTURE = ['--roots', 'test/fixtures', '--testMatch', '**/waits-until-interrupted.fixture.ts'];
const stressNgInstalled = spawnSync('stress-ng', ['--version'], { stdio: 'ignore' }).status === 0;

interface Run {
  readonly child: ChildProcess;
  output(): string;
  exited: Promise<number | null>;
}

function testBusy(args: string[], env: NodeJS.ProcessEnv, detached = false): Run {
  const child = spawn(process.execPath, ['--import', 'tsx', SCRIPT, ...args], {
    cwd: PROJECT_ROOT,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
    detached,
  });
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  return {
    child,
    output: () => output,
    exited: new Promise((resolve) => child.once('exit', (code) => resolve(code))),
  };
}

/** The environment of a run under test: not this run's Redis, nor its worker id. */
function runEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, ...extra };
  delete env.REDIS_TEST_URL;
  delete env.REDIS_TEST_CLUSTER_NODES;
  delete env.JEST_WORKER_ID;
  return env;
}

/** The pid of stress-ng as the run's first line names it. */
function loadPid(output: string): number {
  return Number(/\[test:busy\] stress-ng --cpu 2 --cpu-load 50 \(pid (\d+)\)/.exec(output)?.[1]);
}

/** Every running process of process group `pgid` (stress-ng and the stressors it forked). */
function groupMembers(pgid: number): number[] {
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .filter((entry) => {
      try {
        const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
        const [state, , pgrp] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
        return state !== 'Z' && Number(pgrp) === pgid;
      } catch {
        return false;
      }
    })
    .map(Number);
}

describe('`npm run test:busy` runs the tests under a background load that stops with them', () => {
  const tree = processTreeFixture('fts-test-busy-');

  it('When stress-ng is not installed, then it says so in one line and exits 1 without running anything', async () => {
    // Only this Node's own folder on the PATH: no stress-ng, and no npm test either.
    const run = testBusy([], runEnv({ PATH: path.dirname(process.execPath) }));
    tree.started.push(run.child);
    expect(await run.exited).toBe(1);
    expect(run.output()).toBe(
      '[test:busy] stress-ng is not installed: install it (apt-get install stress-ng, brew install stress-ng) to run the suite under load, or run npm test\n',
    );
  });

  (stressNgInstalled ? it : it.skip)(
    "When it runs a jest selection to its end, then stress-ng ran beside it and is stopped, and the run exits with jest's code",
    async () => {
      const run = testBusy(['test/unit/roles.test.ts'], runEnv());
      tree.started.push(run.child);
      await eventually(() => loadPid(run.output()) > 0, 30_000, 50);
      const load = loadPid(run.output());
      tree.found.push(load);
      expect(await run.exited).toBe(0);
      expect(run.output()).toContain('Tests:');
      expect(run.output().trimEnd().split('\n').at(-1)).toBe('[test:busy] background load stopped');
      expect(groupMembers(load)).toEqual([]);
    },
    120_000,
  );

  (stressNgInstalled ? it.each : it.skip.each)([
    ['Ctrl-C reaches its whole process group'],
    ['only its top process gets SIGTERM'],
  ])(
    "When it runs and %s, then the load, jest and jest's Redis all stop",
    async (how) => {
      const ready = path.join(tree.scratch, 'ready');
      const run = testBusy(WAITING_FIXTURE, runEnv({ INTERRUPTED_RUN_READY_FILE: ready }), true);
      tree.started.push(run.child);
      const top = run.child.pid ?? 0;
      // Both, not the file alone: the run's first line may still be on its way when jest is ready.
      await eventually(() => existsSync(ready) && loadPid(run.output()) > 0, 60_000, 100).catch(
        (error: unknown) => {
          throw new Error(`not ready, or no load named; the run printed:\n${run.output()}`, { cause: error });
        },
      );
      const load = loadPid(run.output());
      const processes = [...descendantsOf(top), ...groupMembers(load)];
      tree.found.push(...processes);
      expect(processes).toContain(load);
      expect(groupMembers(load).length).toBeGreaterThan(1);
      expect(processes.filter((pid) => commandName(pid) === 'redis-server')).toHaveLength(1);

      if (how === 'Ctrl-C reaches its whole process group') process.kill(-top, 'SIGINT');
      else process.kill(top, 'SIGTERM');

      await eventually(() => [top, ...processes].every((pid) => !isRunning(pid)), 30_000, 100);
      expect(groupMembers(load)).toEqual([]);
    },
    120_000,
  );
});
