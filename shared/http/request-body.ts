import express, { type NextFunction, type Request, type RequestHandler, type Response } from 'express';

/**
 * How request bodies are read. Nothing here runs app-wide: each route that takes a body places
 * its reader after authentication (the token endpoint, which reads credentials from its body,
 * is the one anonymous reader, with a small limit), so a caller without credentials never gets a
 * byte of its body read, inflated or parsed.
 */

/** JSON nested deeper than this is refused before it reaches JSON.parse. */
export const MAX_JSON_DEPTH = 64;

/** The token endpoint's body limit: credentials and a grant type, read before anyone is known. */
export const TOKEN_BODY_LIMIT_BYTES = 8 * 1024;

/** The Content-Encodings a body may come in; inflation stops as soon as it passes the route's limit. */
export const ACCEPTED_CONTENT_ENCODINGS = ['identity', 'gzip', 'deflate', 'br'] as const;

/** The `errors.$` messages of the 400 problem for a body that cannot be taken. */
export const BODY_MESSAGES = {
  notJson: 'The request body is not valid JSON.',
  unreadable: 'The request body could not be read.',
  tooDeep: `The request body is nested deeper than ${MAX_JSON_DEPTH} levels.`,
  notUtf8: 'The request body must be UTF-8 (JSON has no other charset).',
  encoding: (encoding: string) =>
    `Content-Encoding ${encoding} is not accepted: send ${ACCEPTED_CONTENT_ENCODINGS.join(', ')}.`,
} as const;

/** body-parser's error shape (`type`, `status`), so the error handler answers ours as it answers its own. */
export class BodyRefusal extends Error {
  readonly expose = true;
  constructor(
    message: string,
    readonly type: 'entity.too.deep' | 'charset.not.utf8' | 'encoding.not.accepted' | 'entity.too.large',
    readonly status: 400 | 413,
    readonly limit?: number,
  ) {
    super(message);
    this.name = 'BodyRefusal';
  }
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;

/**
 * Whether the JSON text in `bytes` (UTF-8) opens more than `max` arrays and objects inside each
 * other. One pass over the raw bytes, string-aware (brackets inside strings do not count, nor an
 * escaped quote), stopping at the first level too deep. In UTF-8 these ASCII bytes never occur
 * inside a multi-byte character. Malformed text is JSON.parse's to refuse, not this scan's.
 */
export function jsonNestedDeeperThan(bytes: Uint8Array, max: number): boolean {
  const length = bytes.length;
  let depth = 0;
  for (let i = 0; i < length; i++) {
    const byte = bytes[i];
    if (byte === QUOTE) {
      for (i++; i < length; i++) {
        const inString = bytes[i];
        if (inString === BACKSLASH) i++;
        else if (inString === QUOTE) break;
      }
    } else if (byte === OPEN_BRACKET || byte === OPEN_BRACE) {
      if (++depth > max) return true;
    } else if (byte === CLOSE_BRACKET || byte === CLOSE_BRACE) {
      depth--;
    }
  }
  return false;
}

/** body-parser's `verify` hook: runs on the whole (inflated) body, before JSON.parse. */
function verifyJson(_req: unknown, _res: unknown, body: Buffer, encoding: string): void {
  if (encoding !== 'utf-8' && encoding !== 'utf8') {
    throw new BodyRefusal(BODY_MESSAGES.notUtf8, 'charset.not.utf8', 400);
  }
  if (jsonNestedDeeperThan(body, MAX_JSON_DEPTH)) {
    throw new BodyRefusal(BODY_MESSAGES.tooDeep, 'entity.too.deep', 400);
  }
}

function declaresBody(req: Request): boolean {
  return req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0;
}

/**
 * What body-parser does not check before it starts reading: an encoding outside the accepted
 * list (zstd among them, which body-parser would inflate), and a declared length over the limit
 * (body-parser reads the whole body off the wire before it answers that 413; this answers at once,
 * and the connection closes instead of draining it, see {@link closeWhenBodyUnread}).
 */
function gate(limitBytes: number): RequestHandler {
  return (req, _res, next) => {
    if (!declaresBody(req)) {
      next();
      return;
    }
    const encoding = (req.headers['content-encoding'] ?? 'identity').trim().toLowerCase();
    if (!(ACCEPTED_CONTENT_ENCODINGS as readonly string[]).includes(encoding)) {
      next(new BodyRefusal(BODY_MESSAGES.encoding(encoding), 'encoding.not.accepted', 400));
      return;
    }
    if (encoding === 'identity' && Number(req.headers['content-length'] ?? 0) > limitBytes) {
      next(new BodyRefusal('request entity too large', 'entity.too.large', 413, limitBytes));
      return;
    }
    next();
  };
}

/** Runs `handlers` one after the other as one middleware, stopping at the first error. */
function chain(handlers: readonly RequestHandler[]): RequestHandler {
  return (req: Request, res: Response, next: NextFunction) => {
    const step = (index: number, error?: unknown): void => {
      const handler = handlers[index];
      if (error !== undefined || !handler) {
        next(error);
        return;
      }
      void handler(req, res, (err?: unknown) => step(index + 1, err));
    };
    step(0);
  };
}

/**
 * Reads a JSON body of at most `limitBytes` (after inflation) into req.body: UTF-8, nested at most
 * {@link MAX_JSON_DEPTH} deep, in one of the {@link ACCEPTED_CONTENT_ENCODINGS}. Place it after
 * authentication.
 */
export function jsonBody(limitBytes: number): RequestHandler {
  return chain([gate(limitBytes), express.json({ limit: limitBytes, strict: true, verify: verifyJson })]);
}

/** The token endpoint's reader: a JSON or form-encoded body of at most {@link TOKEN_BODY_LIMIT_BYTES}. */
export function tokenRequestBody(): RequestHandler {
  return chain([
    gate(TOKEN_BODY_LIMIT_BYTES),
    express.json({ limit: TOKEN_BODY_LIMIT_BYTES, strict: true, verify: verifyJson }),
    express.urlencoded({ extended: false, limit: TOKEN_BODY_LIMIT_BYTES }),
  ]);
}

/**
 * Answers sent while the request's body is still on its way (a 401 before the body of an
 * anonymous request was read, a 413 on its declared length, a 404) carry `Connection: close`.
 * Without it Node reads the unread rest of the body off the wire and throws it away, to keep the
 * connection for the next request: megabytes drained for a caller that was refused. With it, Node
 * closes the connection once the answer is written (measured on Node 24: the client gets the
 * answer, then the end of the connection, and nothing more is read).
 */
export function closeWhenBodyUnread(): RequestHandler {
  return (req, res, next) => {
    const writeHead = res.writeHead.bind(res) as (...args: unknown[]) => Response;
    res.writeHead = ((...args: unknown[]) => {
      if (!req.complete && declaresBody(req)) res.setHeader('Connection', 'close');
      return writeHead(...args);
    }) as typeof res.writeHead;
    next();
  };
}
