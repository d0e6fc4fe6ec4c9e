import { connect } from 'node:net';

/** A step that destroys the socket (the client cuts the connection). */
export const CUT: unique symbol = Symbol('cut');

/** One step of a raw exchange: bytes to write, a pause in milliseconds, or {@link CUT}. */
export type RawStep = string | Buffer | number | typeof CUT;

/**
 * Sends `steps` over a plain TCP connection to 127.0.0.1:`port`, in order (a number waits that
 * long), and resolves with every byte the server answered once the connection closes. For what an
 * HTTP client library would not send: a body split at a chosen point, a request cut mid-body, a
 * request whose headers and body share one packet.
 */
export function rawExchange(port: number, steps: readonly RawStep[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let answer = '';
    socket.on('data', (chunk: Buffer) => (answer += chunk.toString('utf8')));
    socket.on('close', () => resolve(answer));
    socket.on('error', reject);
    const run = async () => {
      for (const step of steps) {
        if (step === CUT) socket.destroy();
        else if (typeof step === 'number') await new Promise((wake) => setTimeout(wake, step));
        else socket.write(step);
      }
    };
    run().catch(reject);
  });
}
