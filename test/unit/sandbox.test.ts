import { spawnSync } from 'node:child_process';
import path from 'node:path';

import { SANDBOX_ADMIN_EMAIL, sandboxApplies, sandboxBanner } from '../../ingress/auth/sandbox-admin';
import { EXAMPLE_IDS } from '../../ingress/openapi/spec-examples';
import { DEMO_ROSTER, DEMO_TEAM_ID } from '../../scripts/lib/demo-season';
import { SEED_MESSAGES } from '../../scripts/seed-demo';
import { loadConfig } from '../../shared/config';
import { PROJECT_ROOT } from '../helpers/processes';

describe('sandbox (ADR 0017)', () => {
  const SECRET = 'sandbox-unit-test-secret-0123456789abcdef';
  it.each([
    ['development', undefined, undefined, true],
    ['test', undefined, undefined, true],
    ['development', '127.0.0.2', undefined, true],
    ['development', '::1', undefined, true],
    ['development', 'localhost', undefined, true],
    ['production', undefined, undefined, false],
    ['production', '127.0.0.1', undefined, false],
    ['development', undefined, 'operator@example.com', false],
    ['development', '0.0.0.0', undefined, false],
    ['development', '::', undefined, false],
    ['development', '192.0.2.2', undefined, false],
    ['development', 'dev-box.example.com', undefined, false],
  ] as const)(
    'When NODE_ENV=%s, HOST=%s and ADMIN_EMAIL=%s, then the sandbox applies: %s',
    (nodeEnv, host, adminEmail, applies) => {
      const config = loadConfig({
        NODE_ENV: nodeEnv,
        JWT_SECRET: SECRET,
        ...(host === undefined ? {} : { HOST: host }),
        ...(adminEmail === undefined ? {} : { ADMIN_EMAIL: adminEmail, ADMIN_PASSWORD: 'operator-password' }),
      });
      expect(sandboxApplies(config)).toBe(applies);
    },
  );

  it("When the examples' team is read, then it is the seeded one", () => {
    expect(DEMO_TEAM_ID).toBe(EXAMPLE_IDS.team);
    expect(DEMO_ROSTER.filter((slot) => slot.selectionStatus === 0)).toHaveLength(1);
  });

  it('When a later start reports the account, then its lines never carry a password', () => {
    const text = sandboxBanner({ status: 'exists', email: SANDBOX_ADMIN_EMAIL }, 'http://127.0.0.1:8080');
    expect(text).toContain(`${SANDBOX_ADMIN_EMAIL} exists`);
    expect(text).not.toMatch(/password: /);
    expect(text).toContain('npm run seed:demo\n');
  });

  it('When seed:demo runs with NODE_ENV=production, then it refuses before asking for anything or calling the service', () => {
    const run = spawnSync(
      process.execPath,
      ['--import', 'tsx', path.join('scripts', 'seed-demo.ts'), '--url', 'http://127.0.0.1:9'],
      {
        cwd: PROJECT_ROOT,
        env: { ...process.env, NODE_ENV: 'production' },
        input: 'a-password\n',
        encoding: 'utf8',
      },
    );
    expect(run.status).toBe(2);
    expect(run.stderr).toBe(`${SEED_MESSAGES.refusedInProduction}\n`);
    expect(run.stdout).toBe('');
  });
});
