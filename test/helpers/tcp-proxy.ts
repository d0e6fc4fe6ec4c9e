import net from 'node:net';

/**
 * A TCP proxy between the service and its Redis that can lose answers: while `swallowReplies` is
 * on, what Redis sends back is dropped, so a command reaches Redis and runs but its caller never
 * hears of it; `cutClients()` then closes every client connection, as a network failure would.
 * It can also hold answers back (`holdReplies()`, then `releaseReplies()`), as a Redis or a network
 * too slow for the client's command timeout would: late, but in order; or pass each one on
 * `replyDelayMs` late, as a distant Redis would, so that a round trip costs that much.
 */
export class LossyProxy {
  swallowReplies = false;
  /** How late each answer reaches the client (0: at once). Same-delay timers keep their order. */
  replyDelayMs = 0;
  private holding = false;
  private readonly held: (() => void)[] = [];
  private readonly clients = new Set<net.Socket>();
  private readonly server: net.Server;

  private constructor(target: { host: string; port: number }) {
    this.server = net.createServer((client) => {
      const upstream = net.connect(target.port, target.host);
      this.clients.add(client);
      client.on('data', (chunk) => upstream.write(chunk));
      upstream.on('data', (chunk) => {
        if (this.swallowReplies) return;
        const deliver = () => client.write(chunk);
        if (this.holding) this.held.push(deliver);
        else if (this.replyDelayMs > 0) setTimeout(deliver, this.replyDelayMs);
        else deliver();
      });
      const close = () => {
        this.clients.delete(client);
        client.destroy();
        upstream.destroy();
      };
      for (const socket of [client, upstream]) {
        socket.on('close', close);
        socket.on('error', close);
      }
    });
  }

  /** A proxy to the Redis at `url`, listening on a free loopback port. */
  static async start(url: string): Promise<LossyProxy> {
    const { hostname, port } = new URL(url);
    const proxy = new LossyProxy({ host: hostname, port: Number(port) });
    await new Promise<void>((resolve) => proxy.server.listen(0, '127.0.0.1', resolve));
    return proxy;
  }

  get url(): string {
    return `redis://127.0.0.1:${(this.server.address() as net.AddressInfo).port}`;
  }

  /** From now on, Redis's answers wait in the proxy until releaseReplies(). */
  holdReplies(): void {
    this.holding = true;
  }

  /** Sends every answer held back, in the order Redis sent them, and stops holding. */
  releaseReplies(): void {
    this.holding = false;
    for (const write of this.held.splice(0)) write();
  }

  /** Closes every connection through the proxy; new ones are accepted (and answered) again. */
  cutClients(): void {
    this.swallowReplies = false;
    for (const client of [...this.clients]) client.destroy();
  }

  async close(): Promise<void> {
    for (const client of [...this.clients]) client.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
