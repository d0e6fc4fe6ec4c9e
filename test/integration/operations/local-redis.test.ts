import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';

import { PROJECT_ROOT } from '../../helpers/processes';

const run = promisify(execFile);

describe('the private redis-server helper (scripts/lib/redis-server.ts)', () => {
  // jest's global teardown awaits stop() in a process with nothing else to keep it alive; when the
  // await never returned, the process ended early and a failing run exited 0.
  it('stop() returns in a process whose event loop holds nothing but the Redis child', async () => {
    const script = `
      const { startLocalRedis } = require(${JSON.stringify(path.join(PROJECT_ROOT, 'scripts/lib/redis-server.ts'))});
      startLocalRedis().then(async (redis) => {
        await redis.stop();
        process.stdout.write('stopped');
        process.exitCode = 3;
      });
    `;
    const child = run(process.execPath, ['--import', 'tsx', '-e', script], { cwd: PROJECT_ROOT });
    await expect(child).rejects.toMatchObject({ code: 3, stdout: 'stopped' });
  });
});
