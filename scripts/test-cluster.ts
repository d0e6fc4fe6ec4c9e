import { spawn } from 'node:child_process';
import { constants } from 'node:os';
import path from 'node:path';

import { type LocalRedisCluster, startLocalRedisCluster } from './lib/redis-cluster';
import { onRunStopped } from './lib/run-stop';

/**
 * `npm run test:cluster`: the integration suite on a Redis Cluster. Starts a private three-master
 * cluster on free loopback ports (never 6379, never another run's), runs jest over
 * test/integration with the nodes in REDIS_TEST_CLUSTER_NODES (the test helpers then build cluster
 * connections, and every process they spawn gets REDIS_CLUSTER_NODES), stops the cluster whatever
 * happened, and exits with jest's code. Arguments are passed on to jest.
 */
const PROJECT_ROOT = path.resolve(__dirname, '..');

async function main(): Promise<void> {
  let cluster: LocalRedisCluster | undefined;
  let interrupted = false;
  let stopJest: ((signal: NodeJS.Signals) => void) | undefined;
  // A Ctrl-C reaches jest too (same process group); here it only means "stop the cluster after".
  // A SIGTERM to `npm test` alone ends only its shell: this process then sees its group's leader gone.
  onRunStopped((signal) => {
    interrupted = true;
    stopJest?.(signal);
  });

  // What a shell reports for a run ended by Ctrl-C, unless jest itself says otherwise.
  let exitCode = 128 + constants.signals.SIGINT;
  try {
    cluster = await startLocalRedisCluster({ masters: 3 });
    process.stderr.write(`[test:cluster] Redis Cluster up: ${cluster.nodeList}\n`);
    if (interrupted) return;
    const env: NodeJS.ProcessEnv = { ...process.env, REDIS_TEST_CLUSTER_NODES: cluster.nodeList };
    delete env.REDIS_TEST_URL;
    const jest = spawn(
      process.execPath,
      // --roots, not a path pattern, so patterns given on the command line narrow the suite instead
      // of adding to it; last, because it takes every value after it.
      [require.resolve('jest/bin/jest'), ...process.argv.slice(2), '--roots', 'test/integration'],
      { cwd: PROJECT_ROOT, env, stdio: 'inherit' },
    );
    stopJest = (signal) => jest.kill(signal);
    exitCode = await new Promise<number>((resolve) =>
      jest.once('exit', (code, signal) => resolve(code ?? 128 + (signal ? constants.signals[signal] : 0))),
    );
  } finally {
    await cluster?.stop();
    process.exitCode = exitCode;
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`[test:cluster] ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
