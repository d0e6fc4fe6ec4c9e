import { spawn } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import path from 'node:path';

import type { Page } from 'playwright-core';

import { SANDBOX_BANNER_TITLE } from '../../ingress/auth/sandbox-admin';
import { EXAMPLE_IDS } from '../../ingress/openapi/spec-examples';
import { type HeadlessChromium, launchHeadlessChromium } from '../../scripts/lib/chromium';
import { SEED_MESSAGES } from '../../scripts/seed-demo';
import { createLogger } from '../../shared/logger';
import { closeConnections, waitForRedis } from '../../shared/redis/connections';
import { createKeys } from '../../shared/redis/keys';
import { ALL_PROJECTIONS } from '../../workers/projector/all-projections';
import { CapturedLogs, openTestRedis, testRedisEnv, uniquePrefix } from '../helpers/app-fixture';
import { basicAuth, bearerToken, exchange } from '../helpers/http-client';
import { eventually, PROJECT_ROOT, type ServiceProcess, startServiceProcess } from '../helpers/processes';
import { caughtUp } from '../helpers/projector-fixtures';
import { redisContents, redisState } from '../helpers/redis-state';
import { SwaggerUi } from '../helpers/swagger-ui';

/** What the first start's banner tells a newcomer, read back from the console. */
interface Banner {
  readonly email: string;
  readonly password: string;
  readonly curl: string;
  readonly docsUrl: string;
  readonly seed: string;
}

function parseBanner(output: string): Banner {
  const after = output.slice(output.indexOf(SANDBOX_BANNER_TITLE));
  const field = (pattern: RegExp) => {
    const found = pattern.exec(after)?.[1];
    if (!found) throw new Error(`banner without ${pattern}: ${after}`);
    return found;
  };
  return {
    email: field(/e-mail: +(\S+)/),
    password: field(/password: +(\S+)/),
    // The curl spans two lines joined by a backslash, as a shell reads them.
    curl: field(/1\. .*\n\s+(curl [^\n]*\\\n[^\n]*)/).replace(/\\\n\s*/, ''),
    docsUrl: field(/2\. .*?(http:\/\/\S+\/api\/docs)/),
    seed: field(/3\. .*?: (npm run seed:demo.*)/),
  };
}

/** Runs a command line as a newcomer pastes it into a shell, in the project's directory. */
function shell(
  command: string,
  stdin = '',
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn('sh', ['-c', command], { cwd: PROJECT_ROOT, env: process.env });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.once('exit', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(stdin);
  });
}

/** A hash's HGETALL text (field and value lines) as its fields, sorted. */
function fieldsInOrder(text: string): string[] {
  const lines = text.split('\n');
  const fields: string[] = [];
  for (let i = 0; i + 1 < lines.length; i += 2) fields.push(`${lines[i]}=${lines[i + 1]}`);
  return fields.sort();
}

interface DocumentExample {
  readonly path: string;
  readonly name: string;
  readonly value: Record<string, unknown>;
}

/** Every named JSON request example of the served document. */
async function requestExamples(baseUrl: string): Promise<DocumentExample[]> {
  const document = (await (await fetch(`${baseUrl}/api/openapi.json`)).json()) as {
    paths: Record<
      string,
      Record<
        string,
        {
          requestBody?: {
            content: Record<string, { examples?: Record<string, { value: Record<string, unknown> }> }>;
          };
        }
      >
    >;
  };
  return Object.entries(document.paths).flatMap(([route, item]) =>
    Object.values(item).flatMap((operation) =>
      Object.entries(operation.requestBody?.content['application/json']?.examples ?? {}).map(
        ([name, example]) => ({
          path: route,
          name,
          value: example.value,
        }),
      ),
    ),
  );
}

/**
 * The first hour of a newcomer (issue 21, ADR 0017), driven by what the console prints: `npm start`
 * on a fresh Redis, the banner's curl, `npm run seed:demo` (twice: idempotent), every request
 * example of the document as it is, then Swagger UI in headless Chromium: Authorize with Basic
 * and with a Bearer token from the token endpoint, see the sandbox's data, link the team.
 */
describe('the first hour, as the console tells it', () => {
  const prefix = uniquePrefix();
  let supervisor: ServiceProcess;
  let banner: Banner;
  let baseUrl: string;
  let serviceAccountPassword: string;
  let chromium: HeadlessChromium | undefined;

  beforeAll(async () => {
    // What `npm start` runs, on a Redis of the test run's own and a fresh key prefix.
    supervisor = startServiceProcess('scripts/start-all.ts', {
      ...testRedisEnv(),
      REDIS_KEY_PREFIX: prefix,
      NODE_ENV: 'development',
      PORT: '0',
      // Unset, as on a fresh machine: a development start listens on 127.0.0.1 by itself.
      HOST: '',
      METRICS_PORT: '0',
      ADMIN_EMAIL: '',
      ADMIN_PASSWORD: '',
      JWT_SECRET: '',
    });
    await supervisor.waitForOutput(SANDBOX_BANNER_TITLE, 60_000);
    await eventually(() => /3\. .*seed:demo.*\n/.test(supervisor.stdout()), 10_000);
    banner = parseBanner(supervisor.stdout());
    baseUrl = banner.docsUrl.replace(/\/api\/docs$/, '');
  }, 90_000);

  afterAll(async () => {
    await chromium?.close();
    // SIGTERM, as Ctrl-C does: the supervisor drains both children, which it started detached.
    if (supervisor.child.exitCode === null) supervisor.child.kill('SIGTERM');
    await supervisor.exited;
  }, 60_000);

  it('When the printed curl is run, then it answers the administrator as CurrentUser', async () => {
    const { code, stdout } = await shell(banner.curl);
    expect(code).toBe(0);
    const answer = JSON.parse(stdout) as { data: { email: string; roles: string[] }[] };
    expect(answer.data[0]).toMatchObject({ email: banner.email, roles: ['Admin'] });
  });

  it('When the printed seed command is run twice, then the first loads the season and the second changes nothing and says so', async () => {
    const first = await shell(banner.seed, `${banner.password}\n`);
    expect(first.stderr).not.toMatch(/failed/);
    expect(first.code).toBe(0);
    expect(first.stdout).toContain(SEED_MESSAGES.loaded);
    serviceAccountPassword =
      /account rating-service@example\.com .*password (\S+) \(shown once\)/.exec(first.stdout)?.[1] ?? '';
    expect(serviceAccountPassword).not.toBe('');

    const logger = createLogger({ level: 'error', processRole: 'test', stream: new CapturedLogs().stream });
    const redis = openTestRedis(logger);
    try {
      await waitForRedis(redis, logger);
      // Every key but the processes' memberships (renewed all the time), BullMQ's stalled-jobs
      // timer (its workers set it on their own clock) and the projectors' positions, by DUMP; the aggregates' records (hashes) by their fields, in any order: a hash's
      // DUMP follows its table's order, which Redis may change with nothing written.
      const ignored = [/:members$/, /:stalled-check$/, /:checkpoint:/, /:record:/];
      const records = async () =>
        Object.fromEntries(
          Object.entries(await redisContents(redis, prefix))
            .filter(([key]) => key.includes(':record:'))
            .map(([key, text]) => [key, fieldsInOrder(text)]),
        );
      // The first run's last effects land first: every projection at its log partitions' heads (a
      // projection may lag seconds behind on a busy machine), then the import's bookkeeping.
      await eventually(() => caughtUp(redis, createKeys(prefix), ALL_PROJECTIONS), 60_000, 100);
      let before = await redisState(redis, prefix, ignored);
      await eventually(
        async () => {
          const now = await redisState(redis, prefix, ignored);
          const settled = JSON.stringify(now) === JSON.stringify(before);
          before = now;
          return settled;
        },
        20_000,
        // Unchanged over a second and a half: the projector may pause that long on a busy machine.
        1_500,
      );
      const recordsBefore = await records();
      const second = await shell(banner.seed, `${banner.password}\n`);
      expect(second.code).toBe(0);
      expect(second.stdout).toContain(SEED_MESSAGES.nothingChanged);
      expect(second.stdout).not.toMatch(/created|shown once/);
      expect(await redisState(redis, prefix, ignored)).toEqual(before);
      expect(await records()).toEqual(recordsBefore);
    } finally {
      await closeConnections(redis);
      logger.close();
    }
  });

  it('When every request example of the document is sent as it is, then each is answered 200, and each query with data', async () => {
    const admin = basicAuth(banner.email, banner.password);
    const adminBearer = await bearerToken(baseUrl, banner.email, banner.password);
    // Each query with the scheme and role it asks for; everything else as the administrator.
    const credentialsFor: Record<string, string> = {
      GetMappedPlayers: basicAuth(EXAMPLE_IDS.serviceAccount, serviceAccountPassword),
      GetTeamRatingInputByTeamId: adminBearer,
    };
    const examples = await requestExamples(baseUrl);
    const queries = examples.filter((example) => example.path === '/api/readmodel');
    expect(queries.length).toBeGreaterThanOrEqual(10);
    for (const example of queries) {
      const answer = await exchange(baseUrl, 'POST', example.path, {
        authorization: credentialsFor[example.name] ?? admin,
        body: example.value,
      });
      const body = answer.ok ? (answer.body as { totalCount?: number }) : undefined;
      expect({ example: example.name, status: answer.ok && answer.status }).toEqual({
        example: example.name,
        status: 200,
      });
      // Deliveries exist only once a subscribed event (a link) happened.
      if (example.name !== 'GetWebhookDeliveries') {
        expect({ example: example.name, totalCount: body?.totalCount }).toEqual({
          example: example.name,
          totalCount: expect.any(Number),
        });
        expect(body?.totalCount).toBeGreaterThan(0);
      }
    }
    for (const example of examples.filter((item) => item.path === '/api/import')) {
      const answer = await exchange(baseUrl, 'POST', example.path, {
        authorization: admin,
        body: example.value,
      });
      expect({ example: example.name, status: answer.ok && answer.status }).toEqual({
        example: example.name,
        status: 200,
      });
    }
    const [token] = examples.filter((item) => item.path === '/api/auth/token');
    const issued = await exchange(baseUrl, 'POST', '/api/auth/token', {
      body: { ...token?.value, password: banner.password },
    });
    expect(issued.ok && issued.status).toBe(200);
  });

  it('When a newcomer authorizes in Swagger UI with Basic and then with a Bearer token, then the queries answer sandbox data and the team gets linked', async () => {
    chromium = await launchHeadlessChromium({ width: 1400, height: 1100 });
    const page: Page = chromium.context.pages()[0] ?? (await chromium.context.newPage());
    const ui = new SwaggerUi(page);
    await ui.open(baseUrl);

    await ui.authorizeBasic(banner.email, banner.password);
    const current = await ui.execute('Read model', 'readModel', 'CurrentUser');
    expect(current.status).toBe(200);
    expect(current.body).toContain(banner.email);
    const team = await ui.execute('Read model', 'readModel', 'GetFantasyTeam');
    expect(team.status).toBe(200);
    expect(JSON.parse(team.body)).toMatchObject({
      results: [{ id: EXAMPLE_IDS.team, name: 'Sandbox Strikers', fantasyTeamExternalId: 0 }],
    });

    // A token from the token endpoint's example, with the printed password typed in.
    const issued = await ui.execute('Authentication', 'issueToken', 'PasswordGrant', (body) =>
      JSON.stringify({ ...(JSON.parse(body) as object), password: banner.password }),
    );
    expect(issued.status).toBe(200);
    const { access_token: accessToken } = JSON.parse(issued.body) as { access_token: string };
    await ui.logout();
    await ui.authorizeBearer(accessToken);

    const rating = await ui.execute('Read model', 'readModel', 'GetTeamRatingInputByTeamId');
    expect(rating.status).toBe(200);
    expect(
      Object.keys((JSON.parse(rating.body) as { results: { team: object }[] }).results[0]?.team ?? {}),
    ).toContain('10234');
    const linked = await ui.execute('Commands', 'command', 'LinkFantasyTeam');
    expect(linked.status).toBe(200);
    expect(JSON.parse(linked.body)).toMatchObject({
      success: true,
      eventCount: 1,
      commandType: 'LinkFantasyTeam',
    });
    await eventually(async () => {
      const after = await ui.execute('Read model', 'readModel', 'GetFantasyTeam');
      return after.body.includes('"fantasyTeamExternalId": 4815162342');
    }, 10_000);

    await ui.logout();
    await ui.authorizeBasic(EXAMPLE_IDS.serviceAccount, serviceAccountPassword);
    const players = await ui.execute('Read model', 'readModel', 'GetMappedPlayers', undefined, {
      keep: true,
    });
    expect(players.status).toBe(200);
    expect(players.body).toContain('"fantasyCompositeId": "7781-2026"');

    // `SANDBOX_SCREENSHOT=<png> npx jest test/smoke/first-hour.test.ts` renders the README's picture.
    const screenshot = process.env.SANDBOX_SCREENSHOT;
    if (screenshot) {
      mkdirSync(path.dirname(path.resolve(screenshot)), { recursive: true });
      await ui.pictureOfAnswer('Read model', 'readModel', path.resolve(screenshot));
    }
  }, 120_000);
});
