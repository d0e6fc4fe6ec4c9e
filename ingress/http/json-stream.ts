import type { Response } from 'express';

import { JSON_CONTENT_TYPE } from '../../shared/http/json-answer';
import type { Logger } from '../../shared/logger';

/**
 * Sends a JSON body piece by piece, waiting for the socket to drain whenever its buffer is full,
 * so a large answer costs one piece of memory rather than the whole. The first piece is read
 * before the status is sent: a failure up to then is thrown (and answered as a problem). A
 * failure later can no longer change the status, so the connection is cut: the client sees a
 * truncated body, never a complete-looking wrong one.
 */
export async function sendJsonPieces(
  res: Response,
  status: number,
  pieces: AsyncIterable<string>,
  logger: Logger,
): Promise<void> {
  const iterator = pieces[Symbol.asyncIterator]();
  let next = await iterator.next();
  res.status(status).type(JSON_CONTENT_TYPE);
  try {
    while (!next.done) {
      if (res.destroyed) {
        await iterator.return?.();
        return;
      }
      if (!res.write(next.value)) await drainedOrClosed(res);
      next = await iterator.next();
    }
    res.end();
  } catch (error) {
    logger.error('streamed answer failed after it began; connection cut', {
      error: error instanceof Error ? error.message : String(error),
    });
    res.destroy(error instanceof Error ? error : new Error(String(error)));
  }
}

/** Resolves when the socket can take more, or is gone; leaves no listener behind either way. */
function drainedOrClosed(res: Response): Promise<void> {
  return new Promise((resolve) => {
    const settle = () => {
      res.off('drain', settle);
      res.off('close', settle);
      resolve();
    };
    res.on('drain', settle);
    res.on('close', settle);
  });
}
