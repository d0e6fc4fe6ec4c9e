import type { Config, ProcessRole } from './config';
import { ConfigError, loadConfig } from './config';
import type { Logger } from './logger';
import { stopTracing } from './tracing/tracing';

/**
 * Loads the configuration for a process of `role` or ends the process with one line, prefixed with
 * `label`, naming what is wrong: an operator reading a crash loop should not have to dig through a
 * stack trace to find a typo in an env var.
 */
export function loadConfigOrExit(role: ProcessRole, label: string = role): Config {
  try {
    return loadConfig(process.env, role);
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`[${label}] ${error.message}\n`);
      process.exit(78); // EX_CONFIG
    }
    throw error;
  }
}

/**
 * On SIGTERM or SIGINT, runs `shutdown` once and exits 0 (1 if it failed). A second signal, or
 * the grace period running out, exits at once: a stuck close must not block a deployment forever.
 */
export function installShutdownHooks(logger: Logger, graceMs: number, shutdown: () => Promise<void>): void {
  let stopping = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (stopping) {
      logger.warn('second signal, exiting now', { signal });
      process.exit(1);
    }
    stopping = true;
    logger.info('shutting down', { signal });
    const deadline = setTimeout(() => {
      logger.error('shutdown took too long, exiting', { graceMs });
      process.exit(1);
    }, graceMs + 5_000);
    deadline.unref();
    // The spans still buffered go out last, so the shutdown's own are among them.
    shutdown()
      .finally(() => stopTracing().catch(() => undefined))
      .then(
        () => {
          logger.info('stopped');
          process.exit(0);
        },
        (error: unknown) => {
          logger.error('shutdown failed', { error });
          process.exit(1);
        },
      );
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  process.on('unhandledRejection', (reason) => {
    logger.error('unhandled rejection', { error: reason });
  });
  process.on('uncaughtException', (error) => {
    logger.error('uncaught exception, exiting', { error });
    process.exit(1);
  });
}
