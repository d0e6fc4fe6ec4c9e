/**
 * The sender against a real node http server that keeps connections alive, in its own process
 * (test/helpers/sender-keep-alive-probe.ts): attempts that reuse a socket leave no listener on it.
 */
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';

import { PROJECT_ROOT } from '../../helpers/processes';

const run = promisify(execFile);

describe('The webhook sender on a kept-alive connection', () => {
  it('When 30 deliveries go one after another to one keep-alive receiver, then they reuse its socket and no connect listeners pile up on it', async () => {
    const probe = path.join(PROJECT_ROOT, 'test', 'helpers', 'sender-keep-alive-probe.ts');
    const { stdout } = await run(process.execPath, ['--import', 'tsx', probe], {
      cwd: PROJECT_ROOT,
      env: { ...process.env, SENDS: '30' },
      timeout: 60_000,
    });
    const report = JSON.parse(stdout.trim().split('\n').pop() ?? '{}') as {
      ok: number;
      sockets: number;
      maxConnectListeners: number;
      warnings: string[];
    };
    expect(report.ok).toBe(30);
    // Reused: far fewer sockets than deliveries, so the listener count below is about reuse.
    expect(report.sockets).toBeLessThan(5);
    expect(report.maxConnectListeners).toBeLessThanOrEqual(1);
    expect(report.warnings).toEqual([]);
  }, 60_000);
});
