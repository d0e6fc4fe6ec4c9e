import winston from 'winston';

import type { LogLevel } from './config';
import { currentContext } from './request-context';

export type Logger = winston.Logger;

/** Keys whose values never reach a log line, at any depth. */
const SECRET_KEYS =
  /^(authorization|cookie|set-cookie|password|passwordhash|hash|token|access_token|secret|jwt_secret|admin_password)$/i;

function redact(value: unknown, depth = 0): unknown {
  if (depth > 6 || value === null || typeof value !== 'object') return value;
  if (value instanceof Error) return { name: value.name, message: value.message, stack: value.stack };
  if (Array.isArray(value)) return value.map((item) => redact(item, depth + 1));
  return Object.fromEntries(
    Object.entries(value as Record<string, unknown>).map(([key, inner]) => [
      key,
      SECRET_KEYS.test(key) ? '[redacted]' : redact(inner, depth + 1),
    ]),
  );
}

const redactSecrets = winston.format((info) => {
  for (const key of Object.keys(info)) {
    info[key] = SECRET_KEYS.test(key) ? '[redacted]' : redact(info[key]);
  }
  return info;
});

/** Adds the request id (and the user once known) of the request being served, if any. */
const withRequestContext = winston.format((info) => {
  const context = currentContext();
  if (context) {
    info.requestId ??= context.requestId;
    if (context.userId !== undefined) info.userId ??= context.userId;
  }
  return info;
});

/**
 * One JSON line per event on stdout. `process` tags the line with the process role, so the
 * interleaved output of `npm start` (ingress and workers in one terminal) stays readable.
 */
export function createLogger(options: {
  level: LogLevel;
  processRole: string;
  silent?: boolean;
  /** Where lines go; stdout unless a test wants to read them back. */
  stream?: NodeJS.WritableStream;
}): Logger {
  return winston.createLogger({
    level: options.level,
    silent: options.silent ?? false,
    defaultMeta: { service: 'fantasy-team-service', process: options.processRole, pid: process.pid },
    format: winston.format.combine(
      withRequestContext(),
      redactSecrets(),
      winston.format.timestamp(),
      winston.format.errors({ stack: true }),
      winston.format.json(),
    ),
    transports: [
      options.stream
        ? new winston.transports.Stream({ stream: options.stream })
        : new winston.transports.Console(),
    ],
  });
}
