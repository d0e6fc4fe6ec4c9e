/**
 * A test run that is stopped stops every process it started, its private redis-servers first
 * (they run in their own process groups, so no signal to the run reaches them). The run is jest or
 * `npm run test:cluster` over a fixture test that waits, in its own process group as a terminal
 * runs `npm test`; it is stopped as a terminal's Ctrl-C does (SIGINT to the whole group) and as a
 * process manager does (SIGTERM to the top process only).
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';

import { commandName, descendantsOf, isRunning } from '../../scripts/lib/run-stop';
import { eventually, processTreeFixture, PROJECT_ROOT } from '../helpers/processes';

const FIXTURE = ['--roots', 'test/fixtures', '--testMatch', '**/waits-until-interrupted.fixture.ts'];

const RUNS = {
  jest: { command: ['npx', 'jest', ...FIXTURE], redisServers: 1 },
  'npm run test:cluster': { command: ['npm', 'run', 'test:cluster', '--', ...FIXTURE], redisServers: 3 },
} as const;

describe('A test run that is stopped stops every process it started', () => {
  const tree = processTreeFixture('fts-interrupted-run-');

  it.each([
    ['jest', 'Ctrl-C reaches its whole process group'],
    ['jest', 'only its top process gets SIGTERM'],
    ['npm run test:cluster', 'Ctrl-C reaches its whole process group'],
    ['npm run test:cluster', 'only its top process gets SIGTERM'],
  ] as const)(
    'When %s runs and %s, then its redis-servers and every other process it started stop',
    async (run, how) => {
      const ready = path.join(tree.scratch, 'ready');
      const env: NodeJS.ProcessEnv = { ...process.env, INTERRUPTED_RUN_READY_FILE: ready };
      // This run's own Redis and worker id must not leak into the run under test.
      delete env.REDIS_TEST_URL;
      delete env.REDIS_TEST_CLUSTER_NODES;
      delete env.JEST_WORKER_ID;
      const [file, ...args] = RUNS[run].command;
      const top = spawn(file, args, { cwd: PROJECT_ROOT, env, stdio: 'ignore', detached: true });
      tree.started.push(top);
      const topPid = top.pid ?? 0;

      await eventually(() => existsSync(ready), 60_000, 100);
      const processes = descendantsOf(topPid);
      tree.found.push(...processes);
      const redisServers = processes.filter((pid) => commandName(pid) === 'redis-server');
      expect(redisServers).toHaveLength(RUNS[run].redisServers);

      if (how === 'Ctrl-C reaches its whole process group') process.kill(-topPid, 'SIGINT');
      else process.kill(topPid, 'SIGTERM');

      await eventually(() => [topPid, ...processes].every((pid) => !isRunning(pid)), 30_000, 100);
    },
    120_000,
  );
});
