import { createServer } from 'node:net';

import { ephemeralPortRange, freePort } from '../../scripts/lib/free-port';

/**
 * A port handed on to a server started later (redis-server, a container podman publishes) is
 * unbound until that server binds it. CI saw supertest's listen(0) given such a port meanwhile, its
 * request then refused: the ports handed out lie below the kernel's ephemeral range, where
 * listen(0) and outgoing connections never land.
 */
describe('Free ports for servers started later', () => {
  it('When ports are asked for, then each lies below the kernel ephemeral range, where listen(0) never lands', async () => {
    const { low } = ephemeralPortRange();
    const ports = await Promise.all(Array.from({ length: 20 }, () => freePort()));
    for (const port of ports) {
      expect(port).toBeGreaterThanOrEqual(20_000);
      expect(port).toBeLessThan(low);
    }
  });

  it('When many ports are asked for at once, then none is handed out twice and each can be listened on', async () => {
    const ports = await Promise.all(Array.from({ length: 50 }, () => freePort()));
    expect(new Set(ports).size).toBe(ports.length);
    const listening = ports.slice(0, 5).map((port) => {
      const server = createServer();
      return new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, '127.0.0.1', () => server.close(() => resolve()));
      });
    });
    await Promise.all(listening);
  });
});
