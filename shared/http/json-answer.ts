import type { Response } from 'express';

/** What res.json() sends. */
export const JSON_CONTENT_TYPE = 'application/json; charset=utf-8';

/** Statuses whose answers have no body: Express's res.send strips their content headers. */
const BODILESS = new Set([204, 205, 304]);

/**
 * Sends JSON text as the whole answer with the headers Express's res.send would give it
 * (Content-Type, Content-Length), in one write. Express's res.json and res.send re-parse the
 * Content-Type they set (to add the charset), look up the ETag setting and the request's
 * freshness on every answer (a cost: ADR 0022) for headers that are the same on every JSON answer
 * of a POST (no ETag: `etag` is off app-wide; never fresh: a POST).
 * Answers Express strips (204, 205, 304) and answers to HEAD still go through res.send.
 */
export function sendJsonText(
  res: Response,
  status: number,
  json: string,
  contentType: string = JSON_CONTENT_TYPE,
): void {
  if (BODILESS.has(status) || res.req.method === 'HEAD') {
    res.status(status).type(contentType).send(json);
    return;
  }
  res.statusCode = status;
  res.setHeader('Content-Type', contentType);
  res.setHeader('Content-Length', Buffer.byteLength(json));
  res.end(json);
}
