/**
 * IMPORT_BYTES_PER_ACCOUNT_PER_MINUTE (issue 29): the bytes of import bodies one account may send
 * per minute, counted in Redis across ingress replicas after authentication and before the body is
 * read; past it a 429 problem with Retry-After. Anonymous callers cost nothing.
 */
import { randomUUID } from 'node:crypto';

import request from 'supertest';

import { PROBLEMS } from '../../shared/http/problem';
import { scanKeys } from '../../shared/redis/connections';
import { createTestApp, type TestApp, uniquePrefix } from '../helpers/app-fixture';

const BYTES_PER_MINUTE = 20 * 1024;
const PASSWORD = 'import-byte-limit-password';
const basic = (email: string) => `Basic ${Buffer.from(`${email}:${PASSWORD}`).toString('base64')}`;

/** A dry-run UserSeeding of `bytes` bytes, blanks after the JSON making up the size (it changes nothing). */
function importBody(bytes: number): string {
  const users = [{ email: `sized-${randomUUID()}@example.com`, userType: 'Human', roles: ['Member'] }];
  const json = JSON.stringify({
    requestId: randomUUID(),
    importerType: 'UserSeeding',
    dryRun: true,
    importData: { users },
  });
  return json + ' '.repeat(bytes - json.length);
}

describe('Import bytes per account per minute', () => {
  // Two ingress replicas of one deployment: same Redis, same key prefix.
  let replicaA: TestApp;
  let replicaB: TestApp;

  beforeAll(async () => {
    const env = {
      REDIS_KEY_PREFIX: uniquePrefix(),
      IMPORT_BYTES_PER_ACCOUNT_PER_MINUTE: String(BYTES_PER_MINUTE),
    };
    replicaA = await createTestApp(env);
    replicaB = await createTestApp(env);
  });
  afterAll(async () => {
    await Promise.all([replicaA, replicaB].map((replica) => replica.services.importQueue.close()));
    await replicaA.close();
    await replicaB.close();
  });

  const send = (replica: TestApp, body: string, authorization?: string) => {
    const req = request(replica.app).post('/api/import').set('Content-Type', 'application/json');
    return (authorization ? req.set('Authorization', authorization) : req).send(body);
  };
  const manager = async () => {
    const email = `byte-limit-${randomUUID().slice(0, 8)}@example.com`;
    await replicaA.createUser({ email, password: PASSWORD, roles: ['UserManager'] });
    return basic(email);
  };

  it('When an account sends more import bytes in a minute than IMPORT_BYTES_PER_ACCOUNT_PER_MINUTE across two replicas, then it gets the 429 problem with Retry-After, while another account goes on', async () => {
    const busy = await manager();
    const sizeOfEach = 8 * 1024;
    expect((await send(replicaA, importBody(sizeOfEach), busy)).status).toBe(200);
    expect((await send(replicaB, importBody(sizeOfEach), busy)).status).toBe(200);

    const refused = await send(replicaA, importBody(sizeOfEach), busy);
    expect(refused.status).toBe(429);
    expect(refused.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(Number(refused.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(Number(refused.headers['retry-after'])).toBeLessThanOrEqual(60);
    expect(refused.body).toEqual({
      ...PROBLEMS[429],
      status: 429,
      detail: `Too many import bytes for this account: at most ${BYTES_PER_MINUTE} bytes of import bodies a minute. Try again later.`,
      traceId: refused.headers['x-request-id'],
    });
    // Refused from memory on A, from Redis on B: the count is the deployment's.
    expect((await send(replicaB, importBody(1024), busy)).status).toBe(429);

    expect((await send(replicaB, importBody(sizeOfEach), await manager())).status).toBe(200);
  });

  it('When anonymous callers send import bodies, then they get the empty 401 and nothing is counted', async () => {
    const counters = async (): Promise<Record<string, string | null>> => {
      const found: string[] = [];
      const pattern = `${replicaA.services.keys.importBytesPrefix()}*`;
      for await (const keys of scanKeys(replicaA.redis, pattern)) found.push(...keys);
      return Object.fromEntries(
        await Promise.all(found.map(async (key) => [key, await replicaA.redis.get(key)] as const)),
      );
    };
    const before = await counters();
    for (let i = 0; i < 5; i++) {
      const res = await send(replicaA, importBody(BYTES_PER_MINUTE));
      expect({ status: res.status, body: res.text }).toEqual({ status: 401, body: '' });
    }
    expect(await counters()).toEqual(before);
  });
});
