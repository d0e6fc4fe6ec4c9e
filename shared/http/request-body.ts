import { AsyncLocalStorage } from 'node:async_hooks';
import zlib from 'node:zlib';

import express, { type NextFunction, type Request, type RequestHandler, type Response } from 'express';

import { DistinctHashes, hashByte, hashStart } from './distinct-hashes';

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
  tooManyContainers: (max: number) => `The request body holds more than ${max} objects and arrays.`,
  tooManyItems: (max: number) => `The request body holds more than ${max} keys and values.`,
  tooManyDistinctKeys: (max: number) => `The request body holds more than ${max} different keys.`,
  tooManyShortStrings: (max: number) =>
    `The request body holds more than ${max} different strings of ${SHORT_STRING_BYTES} bytes or fewer.`,
  notUtf8: 'The request body must be UTF-8 (JSON has no other charset).',
  encoding: (encoding: string) =>
    `Content-Encoding ${encoding} is not accepted: send ${ACCEPTED_CONTENT_ENCODINGS.join(', ')}.`,
} as const;

/** body-parser's error shape (`type`, `status`), so the error handler answers ours as it answers its own. */
export class BodyRefusal extends Error {
  readonly expose = true;
  constructor(
    message: string,
    readonly type:
      | 'entity.too.deep'
      | 'entity.too.many.values'
      | 'charset.not.utf8'
      | 'encoding.not.accepted'
      | 'entity.too.large',
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
 * What a JSON body may hold beyond its bytes, for a route whose largest valid request is known
 * (the import route: IMPORT_MAX_ROWS rows). JSON.parse builds every object and array it reads:
 * 16 MB of `[{},{},...]` is 5.6 million objects, over 1.7 s of CPU and 500 MB to build, where 16 MB
 * of real rows takes a tenth of that (bench/RESULTS.md, issue 38). Counted in the scan that bounds
 * depth, so a body past them is refused before JSON.parse sees it.
 */
export interface JsonValueBounds {
  /** Objects and arrays, at most (each costs JSON.parse an allocation: the expensive part). */
  readonly maxContainers: number;
  /** Keys and values, at most: counted as the `:` and `,` between them. */
  readonly maxItems: number;
  /**
   * Different keys, at most (as written: an escaped key counts apart from its plain twin). V8 keeps
   * one copy of every key and a hidden class per new set of keys, so 640,000 different keys cost
   * JSON.parse over a second and half a gigabyte, where as many repeated ones cost a tenth of that.
   */
  readonly maxDistinctKeys?: number;
  /**
   * Different string values of SHORT_STRING_BYTES or fewer, at most: V8 keeps one copy of each short
   * string value too, about 0.4 µs apiece, so a million different ones cost half a second.
   */
  readonly maxDistinctShortStrings?: number;
}

/**
 * String values this long or shorter are the ones a bound on distinct short strings counts. V8's
 * JSON.parse interns short values (measured: 640,000 different values of 8 characters cost 250-300
 * ms, of 10 characters 30-70 ms; bench/RESULTS.md, issue 38): 10 covers them with room. Bytes, not
 * characters: a multi-byte character only makes a string count sooner.
 */
export const SHORT_STRING_BYTES = 10;

/** What the raw-byte scan found wrong with a JSON text's shape, if anything. */
export type JsonShapeFault =
  'tooDeep' | 'tooManyContainers' | 'tooManyItems' | 'tooManyDistinctKeys' | 'tooManyShortStrings';

const COLON = 0x3a;
const COMMA = 0x2c;
const SPACE = 0x20;
const TAB = 0x09;
const LINE_FEED = 0x0a;
const CARRIAGE_RETURN = 0x0d;

/**
 * The raw-byte scan of a JSON text (UTF-8), fed in chunks as they arrive (a compressed body is
 * scanned as it inflates, so a bomb stops inflating at its first fault): whether it opens more
 * than `maxDepth` arrays and objects inside each other, or holds more than the `bounds` allow.
 * String-aware (brackets, colons and commas inside strings do not count, nor an escaped quote); in
 * UTF-8 these ASCII bytes never occur inside a multi-byte character. With a bound on distinct keys
 * or short strings, a string is a key when the next byte that is not white space is a colon, and
 * each key and short value is hashed (a seeded hash, so that nobody can prepare colliding strings;
 * a long value never is). Malformed text is JSON.parse's to refuse, not this scan's.
 */
export class JsonShapeScan {
  private depth = 0;
  private containers = 0;
  private items = 0;
  private inString = false;
  /** The previous chunk ended on a backslash inside a string: this one's first byte is escaped. */
  private escaped = false;
  private fault: JsonShapeFault | undefined;
  private readonly maxContainers: number;
  private readonly maxItems: number;
  /** Present only with a bound on them: the scan hashes strings only then. */
  private readonly distinctKeys: DistinctHashes | undefined;
  private readonly distinctShortStrings: DistinctHashes | undefined;
  private readonly hashing: boolean;
  /**
   * The string being skipped, or the one that just ended: the hash of its bytes in earlier chunks,
   * its length so far, and where its bytes lie in the current chunk (hashed only when needed).
   */
  private stringHash = 0;
  private stringBytes = 0;
  private segment: Uint8Array | undefined;
  private segmentFrom = 0;
  private segmentTo = 0;
  /** A string ended and the scan has not yet seen whether a colon (a key) or a value's end follows. */
  private stringPending = false;

  constructor(
    private readonly maxDepth: number,
    bounds?: JsonValueBounds,
  ) {
    this.maxContainers = bounds?.maxContainers ?? Infinity;
    this.maxItems = bounds?.maxItems ?? Infinity;
    const { maxDistinctKeys, maxDistinctShortStrings } = bounds ?? {};
    this.distinctKeys = maxDistinctKeys === undefined ? undefined : new DistinctHashes(maxDistinctKeys);
    this.distinctShortStrings =
      maxDistinctShortStrings === undefined ? undefined : new DistinctHashes(maxDistinctShortStrings);
    this.hashing = this.distinctKeys !== undefined || this.distinctShortStrings !== undefined;
  }

  /** Scans the next chunk; the first fault found (then and after), or undefined. */
  feed(bytes: Uint8Array): JsonShapeFault | undefined {
    if (this.fault !== undefined) return this.fault;
    const length = bytes.length;
    if (length === 0) return undefined;
    let i = 0;
    if (this.inString) {
      i = this.skipString(bytes, 0);
      if (i >= length) return undefined;
      i++;
    }
    for (; i < length; i++) {
      const byte = bytes[i]!;
      if (this.stringPending) {
        if (byte === SPACE || byte === LINE_FEED || byte === CARRIAGE_RETURN || byte === TAB) continue;
        const fault = this.classifyString(byte === COLON);
        if (fault !== undefined) return (this.fault = fault);
      }
      if (byte === QUOTE) {
        this.inString = true;
        this.escaped = false;
        this.stringHash = hashStart();
        this.stringBytes = 0;
        i = this.skipString(bytes, i + 1);
      } else if (byte === OPEN_BRACKET || byte === OPEN_BRACE) {
        if (++this.depth > this.maxDepth) return (this.fault = 'tooDeep');
        if (++this.containers > this.maxContainers) return (this.fault = 'tooManyContainers');
      } else if (byte === CLOSE_BRACKET || byte === CLOSE_BRACE) {
        this.depth--;
      } else if (byte === COMMA || byte === COLON) {
        if (++this.items > this.maxItems) return (this.fault = 'tooManyItems');
      }
    }
    // What follows the string is in the next chunk: hash its bytes while this chunk is at hand.
    if (this.stringPending) this.hashSegment();
    return undefined;
  }

  /**
   * The string that just ended was a key (`isKey`) or a value: counted where its bound asks. Only
   * keys and short values are hashed: a long value's bytes are never read twice.
   */
  private classifyString(isKey: boolean): JsonShapeFault | undefined {
    this.stringPending = false;
    if (!isKey && this.stringBytes > SHORT_STRING_BYTES) {
      this.segment = undefined;
      return undefined;
    }
    this.hashSegment();
    if (isKey) return this.distinctKeys?.addPastMax(this.stringHash) ? 'tooManyDistinctKeys' : undefined;
    return this.distinctShortStrings?.addPastMax(this.stringHash) ? 'tooManyShortStrings' : undefined;
  }

  /** Folds the string's bytes in the current chunk into its hash. */
  private hashSegment(): void {
    const bytes = this.segment;
    if (bytes === undefined) return;
    let hash = this.stringHash;
    for (let k = this.segmentFrom; k < this.segmentTo; k++) hash = hashByte(hash, bytes[k]!);
    this.stringHash = hash;
    this.segment = undefined;
  }

  /**
   * From `from`, inside a string (its first byte escaped when the last chunk ended on a
   * backslash): the index of its closing quote (the string ends), or `length` when the chunk ends
   * first. With a bound on distinct strings, notes where its bytes lie (the closing quote
   * excluded) and how many there are, escapes counted as written.
   */
  private skipString(bytes: Uint8Array, from: number): number {
    const length = bytes.length;
    let i = from;
    if (this.escaped && i < length) {
      this.escaped = false;
      i++;
    }
    for (; i < length; i++) {
      const byte = bytes[i];
      if (byte === BACKSLASH) {
        if (i + 1 === length) {
          this.escaped = true;
          break;
        }
        i++;
      } else if (byte === QUOTE) {
        this.inString = false;
        if (this.hashing) this.noteSegment(bytes, from, i, true);
        return i;
      }
    }
    if (this.hashing) this.noteSegment(bytes, from, length, false);
    return length;
  }

  private noteSegment(bytes: Uint8Array, from: number, to: number, ended: boolean): void {
    this.segment = bytes;
    this.segmentFrom = from;
    this.segmentTo = to;
    this.stringBytes += to - from;
    if (ended) this.stringPending = true;
    // The string goes on in the next chunk: this one's bytes are hashed now, while they are at hand.
    else this.hashSegment();
  }
}

/** {@link JsonShapeScan} over one whole text: its first fault, or undefined. */
export function jsonShapeFault(
  bytes: Uint8Array,
  maxDepth: number,
  bounds?: JsonValueBounds,
): JsonShapeFault | undefined {
  return new JsonShapeScan(maxDepth, bounds).feed(bytes);
}

/** Whether the JSON text in `bytes` (UTF-8) opens more than `max` arrays and objects inside each other. */
export function jsonNestedDeeperThan(bytes: Uint8Array, max: number): boolean {
  return jsonShapeFault(bytes, max) === 'tooDeep';
}

/** The 400 refusal of a body whose shape the scan faulted. */
function shapeRefusal(fault: JsonShapeFault, bounds: JsonValueBounds | undefined): BodyRefusal {
  switch (fault) {
    case 'tooDeep':
      return new BodyRefusal(BODY_MESSAGES.tooDeep, 'entity.too.deep', 400);
    case 'tooManyContainers':
      return new BodyRefusal(
        BODY_MESSAGES.tooManyContainers(bounds?.maxContainers ?? 0),
        'entity.too.many.values',
        400,
      );
    case 'tooManyItems':
      return new BodyRefusal(
        BODY_MESSAGES.tooManyItems(bounds?.maxItems ?? 0),
        'entity.too.many.values',
        400,
      );
    case 'tooManyDistinctKeys':
      return new BodyRefusal(
        BODY_MESSAGES.tooManyDistinctKeys(bounds?.maxDistinctKeys ?? 0),
        'entity.too.many.values',
        400,
      );
    case 'tooManyShortStrings':
      return new BodyRefusal(
        BODY_MESSAGES.tooManyShortStrings(bounds?.maxDistinctShortStrings ?? 0),
        'entity.too.many.values',
        400,
      );
    default: {
      const exhaustive: never = fault;
      return exhaustive;
    }
  }
}

/** Throws the 400 refusal when the raw JSON text is nested too deep or holds more than `bounds`. */
function refuseFaultyShape(body: Uint8Array, bounds: JsonValueBounds | undefined): void {
  const fault = jsonShapeFault(body, MAX_JSON_DEPTH, bounds);
  if (fault !== undefined) throw shapeRefusal(fault, bounds);
}

/** Per request, a bound below the route's limit on what its compressed body may inflate to. */
const decodedAllowances = new WeakMap<object, { readonly bytes: number; readonly refusal: () => Error }>();

/**
 * Lets `req`'s compressed body inflate to at most `bytes` (below the route's limit: what the
 * caller's budget has left); the first byte past it, inflated or on the wire, ends the read with
 * `refusal()` instead of the 413, and the answer reaches the client as an early one does.
 */
export function limitDecodedBytes(req: object, bytes: number, refusal: () => Error): void {
  decodedAllowances.set(req, { bytes, refusal });
}

/** The bytes body-parser took from each request's body it read (see {@link bytesReadByBodyParser}). */
const bodyParserBytes = new WeakMap<object, number>();

/**
 * How many bytes of `req`'s body body-parser took (once inflated) before it passed the request on
 * or refused it: the whole body when it parsed it or refused its content (JSON, depth, charset),
 * where it stopped when it refused the body for its size or the client cut it, 0 when it never
 * read it (a refused encoding, a content type it skips). Only bodies jsonBody() did not read
 * directly, i.e. those without a Content-Length, compressed, or of another content type.
 */
export function bytesReadByBodyParser(req: object): number {
  return bodyParserBytes.get(req) ?? 0;
}

/** Notes where raw-body stopped reading a body it refused (too large, aborted): its `received`. */
function noteBytesReceived(req: object, error: unknown): void {
  const received = (error as { received?: unknown } | undefined)?.received;
  if (typeof received === 'number' && !bodyParserBytes.has(req)) bodyParserBytes.set(req, received);
}

/** body-parser's `verify` hook: runs on the whole (inflated) body, before JSON.parse. */
function verifyJson(bounds?: JsonValueBounds) {
  return (req: object, _res: unknown, body: Buffer, encoding: string): void => {
    bodyParserBytes.set(req, body.length);
    if (encoding !== 'utf-8' && encoding !== 'utf8') {
      throw new BodyRefusal(BODY_MESSAGES.notUtf8, 'charset.not.utf8', 400);
    }
    refuseFaultyShape(body, bounds);
  };
}

/** Whether the request says a body follows: chunked, or a Content-Length above zero. */
export function declaresBody(req: Request): boolean {
  return req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0;
}

/**
 * What body-parser does not check before it starts reading: an encoding outside the accepted
 * list (zstd among them, which body-parser would inflate), and a declared length over the limit
 * (body-parser reads the whole body off the wire before it answers that 413; this answers at once,
 * and the rest of the body is read and dropped within bounds, see ./lingering-close.ts).
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
    // Compressed too: its bytes on the wire are read and inflated, whatever they inflate to.
    if (declaredTooLarge(req, limitBytes)) {
      next(new BodyRefusal('request entity too large', 'entity.too.large', 413, limitBytes));
      return;
    }
    // body-parser reads any `utf-` charset whole (and inflates it) before the verify hook refuses
    // all but UTF-8: refused here, unread. Other charsets it refuses unread itself (415).
    const charset = declaredCharset(req);
    if (
      charset?.startsWith('utf-') &&
      charset !== 'utf-8' &&
      req.is('application/json') === 'application/json'
    ) {
      next(new BodyRefusal(BODY_MESSAGES.notUtf8, 'charset.not.utf8', 400));
      return;
    }
    next();
  };
}

/** Whether the request declares more body bytes on the wire than `limitBytes`. */
function declaredTooLarge(req: Request, limitBytes: number): boolean {
  return Number(req.headers['content-length'] ?? 0) > limitBytes;
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

/** The Content-Types the direct reader takes (what clients send); any other goes through body-parser. */
const PLAIN_JSON_TYPES = new Set([
  'application/json',
  'application/json; charset=utf-8',
  'application/json;charset=utf-8',
]);

/** What body-parser raises for a body it could not read or parse; the error handler answers by `type`. */
class BodyUnreadable extends Error {
  readonly expose = true;
  readonly status = 400;
  constructor(
    message: string,
    readonly type: 'entity.parse.failed' | 'request.aborted' | 'request.size.invalid',
  ) {
    super(message);
    this.name = 'BodyUnreadable';
  }
}

/** The declared length of a plain JSON body the direct reader can take, or undefined (body-parser's case). */
function directlyReadableLength(req: Request, limitBytes: number): number | undefined {
  const { headers } = req;
  if (headers['transfer-encoding'] !== undefined) return undefined;
  const encoding = headers['content-encoding'];
  if (encoding !== undefined && encoding !== 'identity') return undefined;
  const type = headers['content-type'];
  if (type === undefined || !PLAIN_JSON_TYPES.has(type.toLowerCase())) return undefined;
  const declared = headers['content-length'];
  if (declared === undefined || !/^[0-9]{1,10}$/.test(declared)) return undefined;
  const length = Number(declared);
  // An empty body, and one over the limit, keep body-parser's (and the gate's) answers.
  if (length === 0 || length > limitBytes) return undefined;
  // Someone already reads it, or wants strings: not a plain unread stream.
  if (req.readableFlowing !== null || req.readableEncoding !== null || req.readableEnded) return undefined;
  return length;
}

const UTF8_BOM = [0xef, 0xbb, 0xbf] as const;
const JSON_BLANKS = new Set([0x20, 0x09, 0x0a, 0x0d]);

/**
 * body-parser's JSON parse (strict: the text opens with an object or an array after blanks; a
 * byte-order mark dropped, as iconv-lite's UTF-8 decoder drops it; nothing after it is `{}`, blanks
 * alone are not JSON), on the whole body, after the depth scan.
 */
function parseJsonBody(body: Buffer, bounds: JsonValueBounds | undefined): unknown {
  refuseFaultyShape(body, bounds);
  return parseScannedJsonBody(body);
}

/** {@link parseJsonBody} of a body the shape scan has already passed. */
function parseScannedJsonBody(body: Buffer): unknown {
  const start = body[0] === UTF8_BOM[0] && body[1] === UTF8_BOM[1] && body[2] === UTF8_BOM[2] ? 3 : 0;
  if (start === body.length) return {};
  let first = start;
  while (first < body.length && JSON_BLANKS.has(body[first] as number)) first++;
  if (body[first] !== OPEN_BRACE && body[first] !== OPEN_BRACKET) {
    throw new BodyUnreadable(
      'The JSON text does not open with an object or an array.',
      'entity.parse.failed',
    );
  }
  try {
    return JSON.parse(body.toString('utf8', start));
  } catch (error) {
    throw new BodyUnreadable((error as Error).message, 'entity.parse.failed');
  }
}

/**
 * Reads a plain JSON body of `length` bytes straight off the request: one Buffer, one depth scan,
 * one JSON.parse, as express.json() would with our verify hook, without its per-request type and
 * charset parsing, raw-body's listeners and iconv (ADR 0022). When the whole body has already
 * arrived (it usually comes in the packet that carried the headers, and is buffered while the
 * caller is authenticated) it is taken in one read() with no listener at all.
 */
function readDirectly(
  req: Request,
  length: number,
  bounds: JsonValueBounds | undefined,
  next: NextFunction,
): void {
  req.body = undefined;
  // Handed on at once or a tick later (an 'end' the read schedules in this context), a body already
  // here keeps the request's context for free; one still arriving is read in listeners, and binds.
  let proceed = next;
  const take = (body: Buffer) => {
    let parsed: unknown;
    try {
      parsed = parseJsonBody(body, bounds);
    } catch (error) {
      proceed(error);
      return;
    }
    req.body = parsed;
    proceed();
  };
  if (req.complete && req.readableLength === length) {
    // Reading to the end lets the stream end, so the connection is reused as after a drain. The
    // body is passed on once 'end' has come (a tick later): until then the request does not count
    // as read (on-finished), and a parser after this one (the Bull Board's express.json()) would
    // read the drained stream again and refuse it as cut short.
    const body = req.read() as Buffer;
    if (req.readableEnded) {
      take(body);
      return;
    }
    const onEnd = () => {
      req.off('close', onCut);
      take(body);
    };
    // Destroyed in that tick, the stream never ends: the route still has to finish.
    const onCut = () => {
      req.off('end', onEnd);
      next(new BodyUnreadable('request aborted', 'request.aborted'));
    };
    req.once('end', onEnd);
    req.once('close', onCut);
    return;
  }
  // Cut while the caller was being authenticated: no event will come (body-parser goes on bodiless).
  if (req.destroyed) {
    next(new BodyUnreadable('request aborted', 'request.aborted'));
    return;
  }
  proceed = inRequestContext(next);
  const chunks: Buffer[] = [];
  let received = 0;
  const onData = (chunk: Buffer) => {
    chunks.push(chunk);
    received += chunk.length;
  };
  const onEnd = () => {
    stop();
    if (received !== length) {
      proceed(new BodyUnreadable('request size did not match content length', 'request.size.invalid'));
      return;
    }
    take(chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, received));
  };
  const onAborted = () => {
    stop();
    proceed(new BodyUnreadable('request aborted', 'request.aborted'));
  };
  const stop = () => {
    req.off('data', onData);
    req.off('end', onEnd);
    req.off('error', onAborted);
    req.off('close', onClose);
  };
  // A request closed before its end was cut by the client: the answer has nowhere to go, but the
  // route must still end (and its listeners go).
  const onClose = () => {
    if (!req.readableEnded) onAborted();
  };
  req.on('data', onData);
  req.on('end', onEnd);
  req.on('error', onAborted);
  req.on('close', onClose);
}

/** The decompressor of each compressed Content-Encoding, as body-parser picks it (looked up per body, as it does). */
const DECOMPRESSORS = {
  gzip: () => zlib.createGunzip(),
  deflate: () => zlib.createInflate(),
  br: () => zlib.createBrotliDecompress(),
} as const;
type CompressedEncoding = keyof typeof DECOMPRESSORS;

const CHARSET_PARAMETER = /;\s*charset\s*=\s*"?([^";\s]*)/i;

/** The Content-Type's charset parameter, lower-cased, or undefined when it names none. */
function declaredCharset(req: Request): string | undefined {
  return CHARSET_PARAMETER.exec(req.headers['content-type'] ?? '')?.[1]?.toLowerCase();
}

/**
 * The encoding of a compressed JSON body this module inflates itself, scanning as it inflates, or
 * undefined (an uncompressed body, another type or charset: body-parser's case, and its answers).
 */
function inflatedHereEncoding(req: Request): CompressedEncoding | undefined {
  const encoding = req.headers['content-encoding']?.trim().toLowerCase();
  if (encoding !== 'gzip' && encoding !== 'deflate' && encoding !== 'br') return undefined;
  const type = req.headers['content-type'];
  if (type === undefined || !declaresBody(req) || req.is('application/json') !== 'application/json')
    return undefined;
  const charset = declaredCharset(req);
  if (charset !== undefined && charset !== 'utf-8' && charset !== 'utf8') return undefined;
  if (req.readableFlowing !== null || req.readableEncoding !== null || req.readableEnded) return undefined;
  return encoding;
}

/**
 * Inflates a compressed JSON body, scanning each inflated chunk as it comes: the first byte past
 * `limitBytes` (413), or the first fault of its shape (400), stops the inflation there. body-parser
 * inflates the whole body before its `verify` hook sees a byte: 123 bytes of br became 16 MB of
 * empty objects, 200 ms of inflating and scanning before the refusal (issue 38). The answers are
 * body-parser's for the same bodies; what was inflated is what {@link bytesReadByBodyParser} says.
 */
function readCompressed(
  req: Request,
  encoding: CompressedEncoding,
  limitBytes: number,
  bounds: JsonValueBounds | undefined,
  next: NextFunction,
): void {
  req.body = undefined;
  // Cut while the caller was being authenticated: no event will come.
  if (req.destroyed) {
    next(new BodyUnreadable('request aborted', 'request.aborted'));
    return;
  }
  if (declaredTooLarge(req, limitBytes)) {
    next(new BodyRefusal('request entity too large', 'entity.too.large', 413, limitBytes));
    return;
  }
  const inflate = DECOMPRESSORS[encoding]();
  const scan = new JsonShapeScan(MAX_JSON_DEPTH, bounds);
  const chunks: Buffer[] = [];
  let inflated = 0;
  // The bytes on the wire are bounded and charged too: a stream of empty gzip members inflates to
  // nothing, yet costs the inflating.
  let received = 0;
  let settled = false;
  const settle = (error?: unknown) => {
    if (settled) return;
    settled = true;
    req.unpipe(inflate);
    req.off('data', onWire);
    req.off('close', onClose);
    inflate.destroy();
    bodyParserBytes.set(req, Math.max(inflated, received));
    if (error !== undefined) {
      next(error);
      return;
    }
    let parsed: unknown;
    try {
      parsed = parseScannedJsonBody(
        chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, inflated),
      );
    } catch (parseError) {
      next(parseError);
      return;
    }
    req.body = parsed;
    next();
  };
  const onClose = () => {
    if (!req.complete) settle(new BodyUnreadable('request aborted', 'request.aborted'));
  };
  const allowance = decodedAllowances.get(req);
  const onWire = (chunk: Buffer) => {
    received += chunk.length;
    if (allowance !== undefined && received > allowance.bytes) settle(allowance.refusal());
    else if (received > limitBytes)
      settle(new BodyRefusal('request entity too large', 'entity.too.large', 413, limitBytes));
  };
  inflate.on('data', (chunk: Buffer) => {
    inflated += chunk.length;
    if (allowance !== undefined && inflated > allowance.bytes) {
      settle(allowance.refusal());
      return;
    }
    if (inflated > limitBytes) {
      settle(new BodyRefusal('request entity too large', 'entity.too.large', 413, limitBytes));
      return;
    }
    const fault = scan.feed(chunk);
    if (fault !== undefined) {
      settle(shapeRefusal(fault, bounds));
      return;
    }
    chunks.push(chunk);
  });
  inflate.on('end', () => settle());
  // A corrupt or cut stream: body-parser's answer for it is the 400 of an unreadable body.
  inflate.on('error', (error: Error) => settle(new BodyUnreadable(error.message, 'request.aborted')));
  req.on('close', onClose);
  req.on('data', onWire);
  req.pipe(inflate);
}

/**
 * Reads a JSON body of at most `limitBytes` (after inflation) into req.body: UTF-8, nested at most
 * {@link MAX_JSON_DEPTH} deep, holding at most `bounds` (when given: a route whose largest valid
 * body is known), in one of the {@link ACCEPTED_CONTENT_ENCODINGS}. Place it after
 * authentication. A plain JSON body (`application/json`, UTF-8, not compressed, of a declared
 * length within the limit: what clients send) is read directly; a compressed JSON body is inflated
 * here, scanned as it inflates; every other body goes through the gate and body-parser, whose
 * answers both readers give for the same bodies.
 */
export function jsonBody(limitBytes: number, bounds?: JsonValueBounds): RequestHandler {
  const throughBodyParser = chain([
    gate(limitBytes),
    express.json({ limit: limitBytes, strict: true, verify: verifyJson(bounds) }),
  ]);
  return (req, res, next) => {
    const length = directlyReadableLength(req, limitBytes);
    const compressed = length === undefined ? inflatedHereEncoding(req) : undefined;
    if (length !== undefined) readDirectly(req, length, bounds, next);
    else if (compressed !== undefined)
      readCompressed(req, compressed, limitBytes, bounds, inRequestContext(next));
    else {
      const proceed = inRequestContext(next);
      throughBodyParser(req, res, (error?: unknown) => {
        noteBytesReceived(req, error);
        proceed(error);
      });
    }
  };
}

/** The token endpoint's reader: a JSON or form-encoded body of at most {@link TOKEN_BODY_LIMIT_BYTES}. */
export function tokenRequestBody(): RequestHandler {
  const read = chain([
    gate(TOKEN_BODY_LIMIT_BYTES),
    express.json({ limit: TOKEN_BODY_LIMIT_BYTES, strict: true, verify: verifyJson() }),
    express.urlencoded({ extended: false, limit: TOKEN_BODY_LIMIT_BYTES }),
  ]);
  return (req, res, next) => read(req, res, inRequestContext(next));
}

/**
 * `next`, bound to the request's async context (its request id, its trace): a body that had not all
 * arrived is read in the request stream's listeners, which Node runs in the connection's context, and
 * what the route does after the body would lose the request's log fields and its trace. Only there:
 * a bind costs about 4 µs (it makes an AsyncResource), 4% of a read.
 */
function inRequestContext(next: NextFunction): NextFunction {
  return AsyncLocalStorage.bind(next);
}
