import { randomUUID } from 'node:crypto';

import type { RequestHandler } from 'express';

import { runWithContext } from '../request-context';

export const REQUEST_ID_HEADER = 'X-Request-Id';

/** An incoming id is trusted only if it is short and plain, so it cannot forge or flood log lines. */
const WELL_FORMED = /^[A-Za-z0-9._:-]{1,128}$/;

declare module 'express-serve-static-core' {
  interface Request {
    /**
     * The request's trace id: the caller's X-Request-Id when well-formed, else a new UUID. A trace
     * id only (log lines, the problem's traceId, an event's metadata.traceId): a client chooses
     * it, so it is never an identity, an idempotency key or an event's correlation id.
     */
    requestId: string;
  }
}

/** Gives the request its id, echoes it in X-Request-Id, and scopes every later log line to it. */
export function requestId(): RequestHandler {
  return (req, res, next) => {
    const incoming = req.get(REQUEST_ID_HEADER);
    const id = incoming !== undefined && WELL_FORMED.test(incoming) ? incoming : randomUUID();
    req.requestId = id;
    res.setHeader(REQUEST_ID_HEADER, id);
    runWithContext({ requestId: id }, next);
  };
}
