import { trace } from '@opentelemetry/api';
import winston from 'winston';

import type { LogLevel } from './config';
import { isSecretKey, redactSecrets } from './redaction';
import { currentContext } from './request-context';
import { tracingOn } from './tracing/spans';

export type Logger = winston.Logger;

const redactLine = winston.format((info) => {
  for (const key of Object.keys(info)) {
    info[key] = isSecretKey(key) ? '[redacted]' : redactSecrets(info[key]);
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
 * With tracing on, the trace the line is written in, when there is one (a sampled request's, or a
 * caller's it continues): `trace_id`, `span_id` and `trace_flags`, the fields and format the
 * OpenTelemetry winston instrumentation writes, without its hooks on every `require` (ADR 0048).
 */
const withTraceContext = winston.format((info) => {
  if (!tracingOn()) return info;
  const span = trace.getActiveSpan()?.spanContext();
  if (span && trace.isSpanContextValid(span)) {
    info.trace_id = span.traceId;
    info.span_id = span.spanId;
    info.trace_flags = `0${span.traceFlags.toString(16)}`;
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
      withTraceContext(),
      redactLine(),
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
