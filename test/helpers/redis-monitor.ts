/**
 * A MONITOR feed read from a plain socket. ioredis's `monitor()` starts treating replies as monitor
 * lines only once the MONITOR reply's promise has settled; lines that arrive in the same TCP read as
 * that `+OK` reach its command queue instead and fail with "Command queue state error" (seen on the
 * cluster, where the other tests keep every master busy). Here the `+OK` is the first line, and every
 * line after it is a command.
 */
import { createConnection, type Socket } from 'node:net';

/** The unescaped arguments of one MONITOR line: `<time> [<db> <client>] "name" "arg" ...`. */
export function monitorArgs(line: string): string[] {
  const args: string[] = [];
  let at = line.indexOf('"');
  while (at >= 0 && at < line.length) {
    let arg = '';
    let i = at + 1;
    for (; i < line.length && line[i] !== '"'; i++) {
      if (line[i] !== '\\') {
        arg += line[i];
        continue;
      }
      const next = line[++i];
      if (next === 'x') {
        arg += String.fromCharCode(parseInt(line.slice(i + 1, i + 3), 16));
        i += 2;
      } else {
        arg +=
          ({ n: '\n', r: '\r', t: '\t', a: '\x07', b: '\b' } as Record<string, string>)[next ?? ''] ??
          next ??
          '';
      }
    }
    args.push(arg);
    at = line.indexOf('"', i + 1);
  }
  return args;
}

export interface RedisMonitor {
  close(): void;
}

/** Starts MONITOR on one server; resolves once the server has confirmed it. */
export async function monitorRedis(
  address: { host: string; port: number },
  onCommand: (args: string[]) => void,
): Promise<RedisMonitor> {
  const socket: Socket = createConnection(address);
  socket.setEncoding('latin1');
  await new Promise<void>((resolve, reject) => {
    let pending = '';
    let confirmed = false;
    socket.once('error', reject);
    socket.on('data', (chunk: string) => {
      pending += chunk;
      let end: number;
      while ((end = pending.indexOf('\r\n')) >= 0) {
        const line = pending.slice(0, end);
        pending = pending.slice(end + 2);
        if (!confirmed) {
          if (line !== '+OK') reject(new Error(`MONITOR was refused: ${line}`));
          confirmed = true;
          resolve();
        } else if (line.startsWith('+')) {
          onCommand(monitorArgs(line));
        }
      }
    });
    socket.write('MONITOR\r\n');
  });
  return { close: () => socket.destroy() };
}
