import './tracing';

import { ConfigError, developmentBeyondLoopback } from '../shared/config';
import { listen, type RunningServer } from '../shared/http/server';
import { installShutdownHooks, loadConfigOrExit } from '../shared/lifecycle';
import { createLogger } from '../shared/logger';
import { Metrics } from '../shared/metrics/metrics';
import { buildMetricsApp } from '../shared/metrics/metrics-app';
import { closeConnections, createRedisConnection, waitForRedis } from '../shared/redis/connections';
import { buildApp } from './app';
import { bootstrapAdmin } from './auth/bootstrap-admin';
import {
  bootstrapSandboxAdmin,
  sandboxAccountsPresent,
  sandboxAccountsRefusedLine,
  sandboxBanner,
} from './auth/sandbox-admin';
import { createIngressServices, type IngressServices } from './composition-root';

/** The HTTP ingress process: config -> logger -> redis -> services -> app -> listen. */
async function main(): Promise<void> {
  const config = loadConfigOrExit('ingress');
  const logger = createLogger({ level: config.logLevel, processRole: 'ingress' });
  const metrics = new Metrics(logger);
  const redis = createRedisConnection(config.redis, 'request', logger);
  metrics.watchConnection('request', redis);
  let running: RunningServer | undefined;
  let metricsServer: RunningServer | undefined;
  let services: IngressServices | undefined;

  // Hooks first: a process still waiting for Redis must stop cleanly on SIGTERM too.
  installShutdownHooks(logger, config.shutdownTimeoutMs, async () => {
    await Promise.all([
      // Open event streams end first, or the server's close would wait them out to the timeout.
      services?.eventStreams.close(),
      running?.close(config.shutdownTimeoutMs),
      metricsServer?.close(config.shutdownTimeoutMs),
    ]);
    await services?.close();
    await closeConnections(redis);
  });

  // A listener of its own, for a private network; before Redis, so a waiting ingress can be seen.
  if (config.metrics.port !== 0) {
    const app = buildMetricsApp({ metrics, token: config.metrics.token, logger });
    metricsServer = await listen(app, config.metrics.port, config.metrics.host, config.http);
    logger.info('metrics listening', { port: metricsServer.port, host: config.metrics.host });
  }

  await waitForRedis(redis, logger);
  services = await createIngressServices(config, redis, logger, metrics.commandHandlerHooks(), metrics);
  // Before any account is looked up: a lost or replaced user id key stops the start (ADR 0046).
  await services.accounts.userIds.verifyKey();
  await bootstrapAdmin(config, services.accounts, logger);
  // A deployment upgraded from before the last-Admin guard builds its set once, from every account
  // (before the sandbox, which asks it whether the service has an administrator).
  await services.admins.ensureBuilt(services.store);
  const sandbox = await bootstrapSandboxAdmin(config, services.accounts, services.admins, logger);
  // Read once here, never per request: the refusal itself is a set lookup (ADR 0037).
  const refusedPresent = config.localDevelopment ? [] : await sandboxAccountsPresent(services.accounts);
  // And indexes every team under its owner once: an Admin's were not before erasure (ADR 0014).
  await services.teamLimit.ensureIndexed();

  running = await listen(
    buildApp({ config, logger, redis, services, metrics }),
    config.port,
    config.host,
    config.http,
  );
  logger.info('ingress listening', { port: running.port, host: config.host });
  if (config.nodeEnv !== 'production') {
    // For the person at the console (production's log line above says the same to its shipper).
    process.stdout.write(`${listeningLine(config.host, running.port, config.localDevelopment)}\n`);
    if (!config.localDevelopment)
      process.stdout.write(`[sandbox] ${developmentBeyondLoopback(config.host)}\n`);
  }
  if (refusedPresent.length > 0) {
    const line = sandboxAccountsRefusedLine(config.host, refusedPresent);
    if (config.nodeEnv === 'production') logger.warn(line);
    else process.stdout.write(`${line}\n`);
  }
  // Straight to the console, never through the logger: the password must not reach a log shipper.
  if (sandbox)
    process.stdout.write(sandboxBanner(sandbox, `http://${localAddress(config.host)}:${running.port}`));
}

/** The one line a development start prints once it listens: where, and who can reach it. */
function listeningLine(host: string, port: number, onLoopback: boolean): string {
  const reach = onLoopback ? 'loopback: this machine only' : 'reachable from other machines';
  return `[ingress] listening on http://${urlHost(host)}:${port} (${reach})`;
}

/** The address a person on this machine types: a wildcard bind answers on loopback too. */
function localAddress(host: string): string {
  if (host === '0.0.0.0' || host === '::' || host === '') return '127.0.0.1';
  return urlHost(host);
}

function urlHost(host: string): string {
  return host.includes(':') ? `[${host}]` : host;
}

main().catch((error: unknown) => {
  process.stderr.write(
    `[ingress] failed to start: ${error instanceof Error ? error.message : String(error)}\n`,
  );
  // A setting to fix (Redis refused the credentials) exits as a bad variable does: EX_CONFIG.
  process.exit(error instanceof ConfigError ? 78 : 1);
});
