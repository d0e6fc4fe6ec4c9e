import type { Response } from 'express';

import {
  compareEntryIds,
  encodePosition,
  type EntryId,
  type LogPosition,
} from '../../shared/event-stream/log-position';
import type { LogBatch, LogEntry } from '../../shared/event-stream/log-reader';
import type { EventStreamMetrics, StreamEnd } from '../../shared/event-stream/stream-metrics';
import type { Logger } from '../../shared/logger';
import { type EventReader, toPublicEvent } from '../../shared/public-events/event-catalogue';
import type { LogTail, TailReader } from './log-tail';

export interface SessionOptions {
  /** How long a stream whose client reads nothing stays paused before it is closed. */
  readonly slowClientTimeoutMs: number;
  /** Entries one catch-up read takes, across the partitions it reads. */
  readonly catchUpEntries: number;
  /** Whether user events reach this stream with their personal fields (event-catalogue.ts). */
  readonly reader: EventReader;
}

/**
 * `event:` and `data:` lines of an entry, built once per entry and kind of reader however many
 * streams send it; null for an event that is not public.
 */
const frames = {
  withPersonalData: new WeakMap<LogEntry, string | null>(),
  withoutPersonalData: new WeakMap<LogEntry, string | null>(),
};
function frameOf(entry: LogEntry, reader: EventReader): string | null {
  const built = reader.personalData ? frames.withPersonalData : frames.withoutPersonalData;
  let frame = built.get(entry);
  if (frame === undefined) {
    const event = toPublicEvent(entry.envelope, reader);
    frame = event ? `event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n` : null;
    built.set(entry, frame);
  }
  return frame;
}

/**
 * One client's stream: catches up from its position with reads of its own, then joins the tail in
 * the same synchronous step that finds it level with the tail's head. Each event's `id:` is the
 * position just after it, so Last-Event-ID resumes exactly. When the socket's buffer is full the
 * stream leaves the tail and reads nothing until the client drains, then catches up, so a slow
 * stream holds one buffer and one batch; one that drains nothing for slowClientTimeoutMs is cut off
 * and resumes from its Last-Event-ID without loss.
 */
export class EventStreamSession implements TailReader {
  private readonly position: EntryId[];
  private closed = false;
  /**
   * The checks of its account's changes under way: while any is, it sends nothing (it leaves the
   * tail, and a catch-up under way stops before writing), so nothing reaches a reader after the
   * change that ends it. A count, not a flag: a check that started before a later change (and may
   * have read the account before it) must not resume the stream while the later one runs. When the
   * last is released, it catches up from its position and loses nothing.
   */
  private holds = 0;
  /** A catch-up loop runs, or waits for the client to drain: release() must not start another. */
  private catchingUp = false;
  private lastSentId: string;
  private stallTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly res: Response,
    private readonly tail: LogTail,
    private readonly read: (from: ReadonlyMap<number, EntryId>, count: number) => Promise<LogBatch>,
    start: LogPosition,
    private readonly types: ReadonlySet<string> | undefined,
    private readonly options: SessionOptions,
    private readonly logger: Logger,
    private readonly metrics: EventStreamMetrics | undefined,
    private readonly onEnd: (session: EventStreamSession, reason: StreamEnd) => void,
  ) {
    this.position = [...start];
    this.lastSentId = encodePosition(this.position);
  }

  /** Sends the headers and the starting position, then catches up. */
  start(): void {
    this.res.on('close', () => this.finish('client'));
    // The starting position as an id-only message: an EventSource remembers it, so a client that
    // asked for `from=now` and saw nothing yet still resumes from there, not from a later "now".
    this.res.write(`retry: 1000\nid: ${this.lastSentId}\n\n`);
    void this.catchUp();
  }

  /** A comment (and the position, if it moved past events the filter left out). */
  heartbeat(): void {
    if (this.closed || this.held || this.res.writableNeedDrain) return;
    const id = encodePosition(this.position);
    const idLine = id === this.lastSentId ? '' : `id: ${id}\n`;
    this.lastSentId = id;
    this.res.write(`${idLine}: heartbeat\n\n`);
  }

  /** Ends the response (shutdown): the client reconnects, elsewhere or later, from its last id. */
  end(reason: StreamEnd): void {
    if (this.closed) return;
    this.finish(reason);
    this.res.end();
  }

  /**
   * Sends nothing more until each hold() is matched by a release(): its account may have changed,
   * and may no longer read the stream.
   */
  hold(): void {
    if (this.closed) return;
    this.holds += 1;
    if (this.holds === 1) this.tail.leave(this);
  }

  /**
   * One check found the account may still read: once no other check is under way, the stream goes
   * on from its position, without a gap.
   */
  release(): void {
    if (this.closed || this.holds === 0) return;
    this.holds -= 1;
    if (this.holds === 0 && !this.catchingUp) void this.catchUp();
  }

  private get held(): boolean {
    return this.holds > 0;
  }

  deliver(entries: readonly LogEntry[]): void {
    if (this.closed || this.held) return;
    if (this.write(entries)) return;
    this.tail.leave(this);
    this.catchingUp = true;
    void this.afterDrain().then(() => {
      this.catchingUp = false;
      return this.catchUp();
    });
  }

  private async catchUp(): Promise<void> {
    if (this.catchingUp) return;
    this.catchingUp = true;
    try {
      while (!this.closed && !this.held) {
        const due = new Map<number, EntryId>();
        this.position.forEach((id, partition) => {
          if (compareEntryIds(id, this.tail.headOf(partition)) < 0) due.set(partition, id);
        });
        if (due.size === 0) {
          // Level with the tail's head in this very step: it hands over everything after it.
          this.tail.join(this);
          return;
        }
        const batch = await this.read(due, Math.max(1, Math.ceil(this.options.catchUpEntries / due.size)));
        // Held meanwhile: what was read is read again after the release, from the same position.
        if (this.closed || this.held) return;
        if (!this.write(batch.entries)) await this.afterDrain();
      }
    } catch (error) {
      this.logger.warn('event stream catch-up failed; closing it', {
        error: error instanceof Error ? error.message : String(error),
      });
      this.end('error');
    } finally {
      this.catchingUp = false;
    }
  }

  /** Writes the entries past the position that the filter lets through; false: the buffer is full. */
  private write(entries: readonly LogEntry[]): boolean {
    let chunk = '';
    let sent = 0;
    for (const entry of entries) {
      if (compareEntryIds(entry.id, this.position[entry.partition] as EntryId) <= 0) continue;
      this.position[entry.partition] = entry.id;
      // Only the catalogue's types leave: the log also holds the service's own aggregates (a webhook
      // subscription's URL may carry the receiver's token) that no integration is to read.
      if (this.types && !this.types.has(entry.envelope.eventType)) continue;
      const frame = frameOf(entry, this.options.reader);
      if (frame === null) continue;
      this.lastSentId = encodePosition(this.position);
      chunk += `id: ${this.lastSentId}\n${frame}`;
      sent++;
    }
    if (sent === 0) return !this.res.writableNeedDrain;
    this.metrics?.eventStreamEventsSent(sent);
    return this.res.write(chunk);
  }

  /** Resolves when the client has read the buffer, or when the stream was closed for not doing so. */
  private afterDrain(): Promise<void> {
    return new Promise((resolve) => {
      if (this.closed) {
        resolve();
        return;
      }
      const done = () => {
        clearTimeout(this.stallTimer);
        this.res.off('drain', done);
        this.res.off('close', done);
        resolve();
      };
      this.res.once('drain', done);
      this.res.once('close', done);
      this.stallTimer = setTimeout(() => {
        this.logger.info('event stream client reads too slowly; closed', {
          slowClientTimeoutMs: this.options.slowClientTimeoutMs,
        });
        this.finish('slow');
        this.res.destroy();
        done();
      }, this.options.slowClientTimeoutMs);
    });
  }

  private finish(reason: StreamEnd): void {
    if (this.closed) return;
    this.closed = true;
    clearTimeout(this.stallTimer);
    this.tail.leave(this);
    this.onEnd(this, reason);
  }
}
