import { type IncomingMessage, request } from 'node:http';
import { request as httpsRequest } from 'node:https';

/** One message of a text/event-stream, as a client parses it (WHATWG's field rules, simplified). */
export interface SseMessage {
  readonly id?: string;
  readonly event?: string;
  readonly data?: string;
  readonly comments: readonly string[];
}

/**
 * A Server-Sent Events client over a plain node http request (fetch and supertest buffer or hide
 * the stream): every message as it arrives, the status and headers, and the end.
 */
export class SseClient {
  readonly messages: SseMessage[] = [];
  private buffer = '';
  private listeners: (() => void)[] = [];
  ended = false;

  private constructor(
    readonly status: number,
    readonly headers: IncomingMessage['headers'],
    readonly response: IncomingMessage,
  ) {
    response.setEncoding('utf8');
    response.on('data', (chunk: string) => this.receive(chunk));
    const end = () => {
      this.ended = true;
      this.notify();
    };
    response.on('end', end);
    response.on('close', end);
    response.on('error', end);
  }

  /**
   * Connects; resolves with the headers (the body keeps streaming into `messages`). An https URL
   * is verified against `ca` (a proxy's self-signed certificate) when given.
   */
  static connect(url: string, headers: Record<string, string> = {}, ca?: string): Promise<SseClient> {
    return new Promise((resolve, reject) => {
      const options = { headers: { accept: 'text/event-stream', ...headers }, agent: false as const };
      const answered = (res: IncomingMessage) =>
        resolve(new SseClient(res.statusCode ?? 0, res.headers, res));
      const req = url.startsWith('https:')
        ? httpsRequest(url, { ...options, ...(ca === undefined ? {} : { ca }) }, answered)
        : request(url, options, answered);
      req.on('error', reject);
      req.end();
    });
  }

  /** The messages that carry data: the events an EventSource would dispatch. */
  get events(): SseMessage[] {
    return this.messages.filter((message) => message.data !== undefined);
  }

  /** The id an EventSource would send back as Last-Event-ID: the last `id:` received. */
  get lastEventId(): string | undefined {
    return this.messages.findLast((message) => message.id !== undefined)?.id;
  }

  /** The parsed `data:` of every event. */
  payloads<T = { type: string; timestamp: string; data: Record<string, unknown> }>(): T[] {
    return this.events.map((message) => JSON.parse(message.data as string) as T);
  }

  /** Resolves when `predicate` holds (checked at each message), rejects past `timeoutMs`. */
  async until(
    predicate: (client: SseClient) => boolean,
    timeoutMs = 10_000,
    what = 'the stream',
  ): Promise<void> {
    if (predicate(this)) return;
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.listeners = this.listeners.filter((listener) => listener !== check);
        reject(
          new Error(`timed out waiting for ${what}; received ${JSON.stringify(this.messages.slice(-5))}`),
        );
      }, timeoutMs);
      const check = () => {
        if (!predicate(this)) return;
        clearTimeout(timer);
        this.listeners = this.listeners.filter((listener) => listener !== check);
        resolve();
      };
      this.listeners.push(check);
    });
  }

  /** Stops reading: the socket's buffers fill, and the server sees backpressure. */
  pause(): void {
    this.response.pause();
  }

  resume(): void {
    this.response.resume();
  }

  close(): void {
    this.response.destroy();
  }

  private notify(): void {
    for (const listener of [...this.listeners]) listener();
  }

  private receive(chunk: string): void {
    this.buffer += chunk;
    let end = this.buffer.indexOf('\n\n');
    while (end !== -1) {
      const block = this.buffer.slice(0, end);
      this.buffer = this.buffer.slice(end + 2);
      this.messages.push(parseBlock(block));
      end = this.buffer.indexOf('\n\n');
    }
    this.notify();
  }
}

function parseBlock(block: string): SseMessage {
  const fields: { id?: string; event?: string; data?: string } = {};
  const comments: string[] = [];
  for (const line of block.split('\n')) {
    if (line.startsWith(':')) {
      comments.push(line.slice(1).trim());
      continue;
    }
    const colon = line.indexOf(':');
    const name = colon === -1 ? line : line.slice(0, colon);
    const value = colon === -1 ? '' : line.slice(colon + 1).replace(/^ /, '');
    if (name === 'id') fields.id = value;
    else if (name === 'event') fields.event = value;
    else if (name === 'data') fields.data = fields.data === undefined ? value : `${fields.data}\n${value}`;
  }
  return { ...fields, comments };
}
