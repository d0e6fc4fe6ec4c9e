import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

import { loadConfigOrExit } from '../shared/lifecycle';
import { RECOMMENDED_REDIS_SERVER_ARGS } from '../workers/redis-memory-settings';
import { runningSupervisorOf, stopLeftoverRedis, supervisorPidFile } from './lib/leftover-redis';
import { workerMetricsPort } from './lib/metrics-ports';
import { watchParent } from './lib/parent-watch';
import { chooseRedis, redisChoiceLine } from './lib/redis-choice';
import { type LocalRedis, redisServerOnPath, startLocalRedis } from './lib/redis-server';

/**
 * `npm start`: the whole service on one machine, in one terminal. Uses the Redis it was given
 * (REDIS_CLUSTER_NODES, else REDIS_URL), else a private redis-server it starts under
 * PRIVATE_REDIS_DIR, and says which in one line; then runs the ingress and one worker as child
 * processes whose JSON log lines carry a `process` tag. SIGINT or SIGTERM to it, or its parent's
 * exit (npm, an IDE, a process manager), drains both, then stops the private Redis; the children
 * stop by themselves if it dies (ADR 0027). Both children get WEBHOOK_ALLOW_PRIVATE_TARGETS as the
 * ingress reads it: the worker binds nothing, so only this supervisor, which starts the ingress
 * beside it, knows that the worker runs where the ingress listens.
 */
async function startRedis(dataDir: string): Promise<LocalRedis> {
  if (!redisServerOnPath()) {
    process.stderr.write(
      'redis-server is not installed: install it (apt-get install redis-server, brew install redis), or set REDIS_URL to a Redis of yours.\n',
    );
    process.exit(1);
  }
  const pidFile = path.join(dataDir, 'redis-server.pid');
  const running = runningSupervisorOf(pidFile);
  if (running !== undefined) {
    // Two servers must never share one AOF folder, and stopping it would take the other start's data away.
    process.stderr.write(
      `[start] another start (pid ${running}) runs the private redis-server in ${dataDir}: stop that one first, or give this one its own PRIVATE_REDIS_DIR or a REDIS_URL\n`,
    );
    process.exit(1);
  }
  const leftover = await stopLeftoverRedis(pidFile);
  if (leftover !== undefined) {
    process.stderr.write(
      `[start] stopped the private redis-server (pid ${leftover}) an earlier start left running\n`,
    );
  }
  mkdirSync(dataDir, { recursive: true });
  writeFileSync(supervisorPidFile(pidFile), `${process.pid}\n`);
  // Set as docs/operators.md asks of a production Redis (AOF and noeviction come with startLocalRedis),
  // so that the worker's start-up check has nothing to warn about.
  return startLocalRedis({ dataDir, pidFile, extraArgs: [...RECOMMENDED_REDIS_SERVER_ARGS] });
}

function startChild(entry: string, env: NodeJS.ProcessEnv): ChildProcess {
  // Same runtime flags as this process, so `tsx scripts/start-all.ts` runs TypeScript children too.
  const extension = path.extname(__filename);
  const file = path.join(__dirname, '..', entry + extension);
  const exitWithSupervisor = pathToFileURL(
    path.join(__dirname, 'lib', `exit-with-supervisor${extension}`),
  ).href;
  // Own process group: a terminal Ctrl-C reaches only this supervisor, which sends each child
  // exactly one SIGTERM (a second signal would make a child skip its graceful drain). The IPC
  // channel closes when this process dies, however it dies: the preload then stops the child.
  return spawn(process.execPath, [...process.execArgv, '--import', exitWithSupervisor, file], {
    stdio: ['inherit', 'inherit', 'inherit', 'ipc'],
    env,
    detached: true,
  });
}

async function main(): Promise<void> {
  // The children check the same settings, but only after a private Redis was started for them: a
  // bad one (JWT_SECRET missing with NODE_ENV=production) stops here first, with the same line.
  // Read as the ingress reads them, so that the worker is told the ingress's webhook default.
  const config = loadConfigOrExit('ingress', 'start');
  let stopping = false;
  let exitCode = 0;
  const children: ChildProcess[] = [];
  function stopAll(signal: NodeJS.Signals): void {
    if (stopping) return;
    stopping = true;
    for (const child of children) if (child.exitCode === null) child.kill(signal);
  }
  // Installed before Redis starts, so a Ctrl-C during start-up still stops the private Redis.
  process.on('SIGINT', () => stopAll('SIGTERM'));
  process.on('SIGTERM', () => stopAll('SIGTERM'));
  watchParent(() => {
    process.stderr.write('[start] the process that started this one has exited; stopping\n');
    stopAll('SIGTERM');
  });

  const choice = chooseRedis(process.env, path.resolve(config.privateRedisDir));
  const privateRedis = choice.kind === 'private' ? await startRedis(choice.dataDir) : undefined;
  process.stdout.write(`${redisChoiceLine(choice, privateRedis)}\n`);
  if (stopping) {
    await privateRedis?.stop();
    process.exit(0);
  }
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    ...(privateRedis === undefined ? {} : { REDIS_URL: privateRedis.url }),
    WEBHOOK_ALLOW_PRIVATE_TARGETS: String(config.webhooks.allowPrivateTargets),
  };
  const workerEnv = { ...env, METRICS_PORT: workerMetricsPort(env.METRICS_PORT) };
  children.push(startChild('ingress/main', env), startChild('workers/main', workerEnv));

  const exits = children.map(
    (child) =>
      new Promise<void>((resolve) =>
        child.once('exit', (code, signal) => {
          if (!stopping) {
            // One process died on its own: the service is incomplete, so stop the rest.
            exitCode = code || 1;
            process.stderr.write(
              `[start] a child exited unexpectedly (code ${code}, signal ${signal}); stopping\n`,
            );
            stopAll('SIGTERM');
          }
          resolve();
        }),
      ),
  );

  await Promise.all(exits);
  await privateRedis?.stop();
  process.exit(exitCode);
}

main().catch((error: unknown) => {
  process.stderr.write(`[start] ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
