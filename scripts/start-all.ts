import { type ChildProcess, spawn } from 'node:child_process';
import path from 'node:path';

import { loadConfigOrExit } from '../shared/lifecycle';
import { workerMetricsPort } from './lib/metrics-ports';
import { type LocalRedis, redisAnswers, redisServerOnPath, startLocalRedis } from './lib/redis-server';

/**
 * `npm start`: the whole service on one machine, in one terminal. Finds Redis (REDIS_CLUSTER_NODES,
 * else REDIS_URL, else a Redis on 127.0.0.1:6379, else a private redis-server it starts), then runs the ingress and one
 * worker as child processes whose JSON log lines carry a `process` tag. Ctrl-C drains both, then
 * stops the private Redis if it started one. Both children get WEBHOOK_ALLOW_PRIVATE_TARGETS as the
 * ingress reads it: the worker binds nothing, so only this supervisor, which starts the ingress
 * beside it, knows that the worker runs where the ingress listens.
 */
const DEFAULT_REDIS_PORT = 6379;
const PRIVATE_REDIS_DIR = path.resolve('var', 'redis');

async function resolveRedis(): Promise<{ url?: string; privateRedis?: LocalRedis }> {
  // A cluster is the operator's to run: the children read REDIS_CLUSTER_NODES, which wins anyway.
  if (process.env.REDIS_CLUSTER_NODES) return {};
  if (process.env.REDIS_URL) return { url: process.env.REDIS_URL };
  const password = process.env.REDIS_PASSWORD || undefined;
  if (await redisAnswers(DEFAULT_REDIS_PORT, '127.0.0.1', 500, password)) {
    return { url: `redis://127.0.0.1:${DEFAULT_REDIS_PORT}` };
  }
  if (!redisServerOnPath()) {
    process.stderr.write(
      'No Redis answers at 127.0.0.1:6379 and redis-server is not installed: install it (apt-get install redis-server, brew install redis) or set REDIS_URL.\n',
    );
    process.exit(1);
  }
  const privateRedis = await startLocalRedis({ dataDir: PRIVATE_REDIS_DIR });
  process.stderr.write(
    `[start] started a private redis-server at ${privateRedis.url} (data in ${PRIVATE_REDIS_DIR})\n`,
  );
  return { url: privateRedis.url, privateRedis };
}

function startChild(entry: string, env: NodeJS.ProcessEnv): ChildProcess {
  // Same runtime flags as this process, so `tsx scripts/start-all.ts` runs TypeScript children too.
  const extension = path.extname(__filename);
  const file = path.join(__dirname, '..', entry + extension);
  // Own process group: a terminal Ctrl-C reaches only this supervisor, which sends each child
  // exactly one SIGTERM (a second signal would make a child skip its graceful drain).
  return spawn(process.execPath, [...process.execArgv, file], { stdio: 'inherit', env, detached: true });
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

  const { url, privateRedis } = await resolveRedis();
  if (stopping) {
    await privateRedis?.stop();
    process.exit(0);
  }
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    ...(url === undefined ? {} : { REDIS_URL: url }),
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
