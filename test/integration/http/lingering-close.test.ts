/**
 * The staged close of an early answer is bounded (ADR 0039): a refused client that keeps sending
 * is cut after HTTP_LINGER_MAX_BYTES, one that goes silent after HTTP_LINGER_IDLE_MS, one that
 * trickles after HTTP_LINGER_TOTAL_MS, and shutdown cuts them all at once. Raw sockets, so the
 * test decides exactly what the client sends; the ingress listens as in production.
 */
import { connect, type Socket } from 'node:net';

import { listen, type RunningServer } from '../../../shared/http/server';
import { createTestApp, type TestApp } from '../../helpers/app-fixture';

const KB = 1024;
const MB = 1024 * KB;
const BOUNDS = { maxBytes: 2 * MB, idleMs: 400, totalMs: 1_500, bytesPerSecond: 64 * MB };
/** How long past a bound the cut may come on a busy machine. */
const SLACK_MS = 1_500;

describe('The staged close of an answer sent before the body was read', () => {
  let subject: TestApp;
  let server: RunningServer;
  const accepted: Socket[] = [];
  const clients: Socket[] = [];

  beforeAll(async () => {
    subject = await createTestApp({
      HTTP_LINGER_MAX_BYTES: String(BOUNDS.maxBytes),
      HTTP_LINGER_IDLE_MS: String(BOUNDS.idleMs),
      HTTP_LINGER_TOTAL_MS: String(BOUNDS.totalMs),
      HTTP_LINGER_BYTES_PER_SECOND: String(BOUNDS.bytesPerSecond),
    });
    server = await listen(subject.app, 0, '127.0.0.1', subject.config.http);
    server.server.on('connection', (socket: Socket) => accepted.push(socket));
  });
  afterEach(() => {
    for (const client of clients.splice(0)) client.destroy();
  });
  afterAll(async () => {
    await server?.close(1_000);
    await subject?.close();
  });

  /**
   * An anonymous import that declares `declared` bytes and sends its head at once: the client's
   * socket, the ingress's side of it, the answer's status line once read, and when the ingress
   * closed its side (a client cannot see that: the ingress shut its writing side at the answer).
   */
  const refusedUpload = (declared: number) => {
    // Half-open allowed: the client keeps its side open after the ingress shuts its own, as a
    // client still sending its body does (Node's default would end it at the ingress's FIN).
    const socket = connect({ host: '127.0.0.1', port: server.port, allowHalfOpen: true });
    clients.push(socket);
    socket.on('error', () => undefined);
    const known = accepted.length;
    const serverSide = new Promise<Socket>((resolve) => {
      const poll = () => (accepted.length > known ? resolve(accepted[known] as Socket) : setTimeout(poll, 5));
      poll();
    });
    let received = '';
    const answered = new Promise<string>((resolve) =>
      socket.on('data', (chunk: Buffer) => {
        received += chunk.toString('latin1');
        if (received.includes('\r\n\r\n')) resolve(received.split('\r\n')[0] ?? '');
      }),
    );
    const closedByIngress = serverSide.then(
      (side) =>
        new Promise<number>((resolve) =>
          side.destroyed ? resolve(Date.now()) : side.once('close', () => resolve(Date.now())),
        ),
    );
    socket.write(
      `POST /api/import HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${declared}\r\n\r\n`,
    );
    return { socket, serverSide, answered, closedByIngress };
  };

  it('When a refused client keeps sending, then the ingress reads at most HTTP_LINGER_MAX_BYTES after its answer and cuts the connection', async () => {
    const upload = refusedUpload(100 * MB);
    const serverSocket = await upload.serverSide;
    expect(await upload.answered).toBe('HTTP/1.1 401 Unauthorized');
    const readAtAnswer = serverSocket.bytesRead;
    // Writes as fast as the connection takes them, until it is cut.
    const chunk = Buffer.alloc(64 * KB, 'a');
    const pump = () => {
      while (!upload.socket.destroyed && upload.socket.write(chunk));
    };
    upload.socket.on('drain', pump);
    pump();
    await upload.closedByIngress;
    await new Promise<void>((resolve) =>
      serverSocket.destroyed ? resolve() : serverSocket.once('close', resolve),
    );
    // The socket's buffers may hold what was read before the cut was noticed: one chunk or two.
    expect(serverSocket.bytesRead - readAtAnswer).toBeLessThanOrEqual(BOUNDS.maxBytes + 2 * 64 * KB + 1_024);
  });

  it('When a refused client goes silent, then the connection is cut HTTP_LINGER_IDLE_MS later', async () => {
    const upload = refusedUpload(10 * MB);
    upload.socket.write(Buffer.alloc(4 * KB, 'a'));
    expect(await upload.answered).toBe('HTTP/1.1 401 Unauthorized');
    const answeredAt = Date.now();
    const closedAt = await upload.closedByIngress;
    expect(closedAt - answeredAt).toBeGreaterThanOrEqual(BOUNDS.idleMs - 50);
    expect(closedAt - answeredAt).toBeLessThan(BOUNDS.idleMs + SLACK_MS);
  });

  it('When a refused client trickles its body, then the connection is cut HTTP_LINGER_TOTAL_MS after the answer', async () => {
    const upload = refusedUpload(10 * MB);
    expect(await upload.answered).toBe('HTTP/1.1 401 Unauthorized');
    const answeredAt = Date.now();
    // A byte well within the idle bound each time: only the total bound can end it.
    const trickle = setInterval(() => upload.socket.destroyed || upload.socket.write('a'), BOUNDS.idleMs / 4);
    const closedAt = await upload.closedByIngress;
    clearInterval(trickle);
    expect(closedAt - answeredAt).toBeGreaterThanOrEqual(BOUNDS.totalMs - 50);
    expect(closedAt - answeredAt).toBeLessThan(BOUNDS.totalMs + SLACK_MS);
  });

  it('When the refused client has sent its whole body, then the ingress closes at once', async () => {
    const upload = refusedUpload(64 * KB);
    upload.socket.write(Buffer.alloc(64 * KB, 'a'));
    expect(await upload.answered).toBe('HTTP/1.1 401 Unauthorized');
    const answeredAt = Date.now();
    expect((await upload.closedByIngress) - answeredAt).toBeLessThan(BOUNDS.idleMs);
  });

  it('When the refused client ends its side, then the ingress closes at once', async () => {
    const upload = refusedUpload(10 * MB);
    expect(await upload.answered).toBe('HTTP/1.1 401 Unauthorized');
    const answeredAt = Date.now();
    upload.socket.end();
    expect((await upload.closedByIngress) - answeredAt).toBeLessThan(BOUNDS.idleMs);
  });
});

describe('What one ingress drops per second, across every refused client', () => {
  it('When refused clients send faster than HTTP_LINGER_BYTES_PER_SECOND, then the ingress cuts them once the second’s bytes are spent', async () => {
    const budget = MB;
    const subject = await createTestApp({ HTTP_LINGER_BYTES_PER_SECOND: String(budget) });
    const server = await listen(subject.app, 0, '127.0.0.1', subject.config.http);
    const accepted: Socket[] = [];
    server.server.on('connection', (socket: Socket) => accepted.push(socket));
    const clients: Socket[] = [];
    try {
      // Four clients at once, each answered 401 and then sending as fast as it can.
      const closed = Array.from({ length: 4 }, async (_, index) => {
        const socket = connect({ host: '127.0.0.1', port: server.port, allowHalfOpen: true });
        clients.push(socket);
        socket.on('error', () => undefined);
        await new Promise<void>((resolve) =>
          socket
            .once('data', () => resolve())
            .write(`POST /api/import HTTP/1.1\r\nHost: x\r\nContent-Length: ${100 * MB}\r\n\r\n`),
        );
        const side = accepted[index] as Socket;
        const readAtAnswer = side.bytesRead;
        const chunk = Buffer.alloc(64 * KB, 'a');
        const pump = () => {
          while (!socket.destroyed && socket.write(chunk));
        };
        socket.on('drain', pump);
        pump();
        await new Promise<void>((resolve) =>
          side.destroyed ? resolve() : side.once('close', () => resolve()),
        );
        return side.bytesRead - readAtAnswer;
      });
      const startedAt = Date.now();
      const dropped = await Promise.all(closed);
      const seconds = (Date.now() - startedAt) / 1000;
      // The bucket's first second, what it refilled since, and a socket buffer's worth a connection.
      const total = dropped.reduce((sum, bytes) => sum + bytes, 0);
      expect(total).toBeLessThanOrEqual(budget * (1 + seconds) + 4 * 2 * 64 * KB + 4 * 1_024);
    } finally {
      for (const client of clients) client.destroy();
      await server.close(1_000);
      await subject.close();
    }
  });
});

describe('Shutdown while a refused client is still sending', () => {
  it('When the ingress shuts down, then a lingering connection is cut at once, not after its bounds', async () => {
    const subject = await createTestApp({ HTTP_LINGER_IDLE_MS: '60000', HTTP_LINGER_TOTAL_MS: '60000' });
    const server = await listen(subject.app, 0, '127.0.0.1', subject.config.http);
    try {
      const socket = connect({ host: '127.0.0.1', port: server.port, allowHalfOpen: true });
      let received = '';
      const answered = new Promise<void>((resolve) =>
        socket.on('data', (chunk: Buffer) => {
          received += chunk.toString('latin1');
          if (received.includes('\r\n\r\n')) resolve();
        }),
      );
      socket.on('error', () => undefined);
      socket.write(`POST /api/import HTTP/1.1\r\nHost: x\r\nContent-Length: ${10 * MB}\r\n\r\n`);
      await answered;
      const startedAt = Date.now();
      // The server's close resolves once every connection has ended: the lingering one included.
      await server.close(30_000);
      expect(Date.now() - startedAt).toBeLessThan(SLACK_MS);
      socket.destroy();
    } finally {
      await subject.close();
    }
  });
});
