import { randomBytes, randomUUID } from 'node:crypto';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';

import { SANDBOX_ADMIN_EMAIL } from '../ingress/auth/sandbox-admin';
import { importJobIdFor } from '../shared/importers/import-queue';
import {
  DEMO_ACCOUNTS,
  DEMO_MEMBER_EMAIL,
  DEMO_PLAYER_SEEDING,
  DEMO_PLAYERS_REQUEST_ID,
  DEMO_ROSTER,
  DEMO_SEASON,
  DEMO_TEAM_ID,
  DEMO_TEAM_NAME,
  DEMO_WEBHOOK_ID,
  DEMO_WEBHOOK_URL,
} from './lib/demo-season';
import { HttpError, ImportClient, type ImportJobView, NetworkError } from './lib/import-client';
import { type ApiAnswer, basicAuthorization, ServiceApi } from './lib/service-api';

/**
 * `npm run seed:demo [-- --url <base url>] [--email <admin e-mail>]`: loads the sample season
 * (scripts/lib/demo-season.ts) into a running sandbox through the service's own endpoints, as the
 * sandbox administrator: accounts and players by POST /api/import, the team, its roster and a
 * webhook subscription by POST /api/command. Idempotent: what exists is left as it is, and a
 * second run says nothing changed. Asks for the administrator's password (ADR 0017: it is kept
 * nowhere, so it is typed, or piped on stdin). Refuses to run with NODE_ENV=production.
 */
export const SEED_MESSAGES = {
  refusedInProduction:
    'seed:demo refuses to run with NODE_ENV=production: it creates demo accounts and data, for a sandbox only.',
  nothingChanged: 'The demo season was already loaded: nothing changed.',
  loaded: 'The demo season is loaded.',
} as const;

const EXIT = { ok: 0, failed: 1, usage: 2 } as const;
const DEFAULT_URL = 'http://127.0.0.1:8080';
const IMPORT_WAIT_MS = 120_000;
const PROJECTION_WAIT_MS = 10_000;

class SeedError extends Error {}

interface Output {
  line(text: string): void;
}

/** A password no one chose: 24 base64url characters. */
function generatedPassword(): string {
  return randomBytes(18).toString('base64url');
}

/** The password, typed without echo on a terminal, else the first line of stdin (a pipe). */
async function readPassword(prompt: string): Promise<string> {
  const stdin = process.stdin;
  if (!stdin.isTTY) {
    const lines = createInterface({ input: stdin });
    for await (const line of lines) {
      lines.close();
      return line;
    }
    return '';
  }
  process.stderr.write(prompt);
  stdin.setRawMode(true);
  stdin.resume();
  let typed = '';
  try {
    for await (const chunk of stdin) {
      for (const char of (chunk as Buffer).toString('utf8')) {
        if (char === '\r' || char === '\n') return typed;
        if (char === '\u0003') throw new SeedError('interrupted');
        typed = char === '\u007f' ? typed.slice(0, -1) : typed + char;
      }
    }
    return typed;
  } finally {
    stdin.setRawMode(false);
    stdin.pause();
    process.stderr.write('\n');
  }
}

function failure(step: string, answer: ApiAnswer): SeedError {
  return new SeedError(`${step}: HTTP ${answer.status} ${JSON.stringify(answer.body)}`);
}

/** Loads the season step by step; each step says what it created, or that it was there. */
class DemoSeeder {
  private changed = false;
  private adminBearer: string | undefined;
  private adminUserId = '';

  constructor(
    private readonly api: ServiceApi,
    private readonly imports: ImportClient,
    private readonly email: string,
    private readonly password: string,
    private readonly out: Output,
  ) {}

  private get admin(): string {
    return basicAuthorization(this.email, this.password);
  }

  private async bearer(): Promise<string> {
    this.adminBearer ??= await this.api.bearer(this.email, this.password);
    if (!this.adminBearer) throw new SeedError(`no bearer token for ${this.email}`);
    return this.adminBearer;
  }

  private query(query: Record<string, unknown>, authorization = this.admin): Promise<ApiAnswer> {
    return this.api.post('/api/readmodel', { query }, authorization);
  }

  /** An account's id, asked of the service (GetUser by e-mail). */
  private async userIdOf(email: string): Promise<string> {
    const answer = await this.query({ queryType: 'GetUser', email });
    const id = (answer.body as { results?: { id?: string }[] } | null)?.results?.[0]?.id;
    if (answer.status !== 200 || id === undefined) throw failure('GetUser', answer);
    return id;
  }

  private async command(commandType: string, command: Record<string, unknown>, authorization?: string) {
    const answer = await this.api.post(
      '/api/command',
      { commandType, command, requestId: randomUUID() },
      authorization ?? (await this.bearer()),
    );
    if (answer.status !== 200) throw failure(commandType, answer);
  }

  async run(): Promise<boolean> {
    await this.checkAdministrator();
    const passwords = await this.accounts();
    await this.players();
    await this.team(passwords.get(DEMO_MEMBER_EMAIL));
    await this.webhookSubscription();
    return this.changed;
  }

  private async checkAdministrator(): Promise<void> {
    const answer = await this.query({ queryType: 'CurrentUser' });
    if (answer.status === 401) throw new SeedError(`the service refused ${this.email} with that password`);
    const roles = (answer.body as { data?: { roles?: string[] }[] } | null)?.data?.[0]?.roles ?? [];
    if (answer.status !== 200) throw failure('CurrentUser', answer);
    // Ids are not computable from e-mails (ADR 0035): the service says which is the administrator's.
    this.adminUserId = await this.userIdOf(this.email);
    if (!roles.includes('Admin'))
      throw new SeedError(`${this.email} is not an Admin (roles: ${roles.join(', ')})`);
  }

  /** The Member and the service account, by UserSeeding; passwords made here, shown once. */
  private async accounts(): Promise<Map<string, string>> {
    const missing = [];
    for (const account of DEMO_ACCOUNTS) {
      const answer = await this.query({ queryType: 'GetUser', email: account.email });
      if (answer.status === 200) this.out.line(`  account ${account.email}: exists`);
      else if (answer.status === 404) missing.push(account);
      else throw failure('GetUser', answer);
    }
    const passwords = new Map(missing.map((account) => [account.email, generatedPassword()]));
    if (missing.length === 0) return passwords;
    const job = await this.importAndWait(randomUUID(), 'UserSeeding', {
      enabled: true,
      skipIfUsersExist: true,
      users: missing.map((account) => ({ ...account, password: passwords.get(account.email) })),
    });
    this.changed = true;
    for (const account of missing) {
      this.out.line(
        `  account ${account.email} (${account.roles.join(', ')}): created, password ${passwords.get(account.email)} (shown once)`,
      );
    }
    this.out.line(`    (import job ${job.importJobId})`);
    return passwords;
  }

  /** Six players with their feed, league, fantasy and platform ids, stats and prices. */
  private async players(): Promise<void> {
    const importJobId = importJobIdFor(this.adminUserId, DEMO_PLAYERS_REQUEST_ID);
    const before = await this.query({ queryType: 'GetImportJobResult', importJobId });
    const done = (before.body as { results?: ImportJobView[] } | null)?.results?.[0];
    if (before.status === 200 && done?.status === 'Completed') {
      this.out.line(
        `  players (${DEMO_PLAYER_SEEDING.players.length}, season ${DEMO_SEASON}): loaded by import job ${importJobId}`,
      );
      return;
    }
    const job = await this.importAndWait(DEMO_PLAYERS_REQUEST_ID, 'PlayerSeeding', DEMO_PLAYER_SEEDING);
    this.changed = true;
    this.out.line(
      `  players (${DEMO_PLAYER_SEEDING.players.length}, season ${DEMO_SEASON}): imported by import job ${job.importJobId}`,
    );
  }

  private async importAndWait(
    requestId: string,
    importerType: string,
    importData: object,
  ): Promise<ImportJobView> {
    const submitted = await this.imports.submit({
      requestId,
      importerType,
      priority: 'High',
      importData: importData as Record<string, unknown>,
    });
    const job =
      submitted.status === 'Pending'
        ? await this.imports.waitUntilFinished(submitted.importJobId, { timeoutMs: IMPORT_WAIT_MS })
        : await this.imports.jobResult(submitted.importJobId);
    if (job.status !== 'Completed') {
      throw new SeedError(`${importerType} import ${job.importJobId} ${job.status}: ${JSON.stringify(job)}`);
    }
    return job;
  }

  /** The Member's team with a roster, unlinked: the one the LinkFantasyTeam example links. */
  private async team(memberPassword: string | undefined): Promise<void> {
    const team = await this.readTeam();
    if (team) {
      this.out.line(`  team ${DEMO_TEAM_ID} "${DEMO_TEAM_NAME}" of ${DEMO_MEMBER_EMAIL}: exists`);
      if (team.roster.length === 0) {
        await this.command('SetFantasyTeamRoster', { aggregateRootId: DEMO_TEAM_ID, players: DEMO_ROSTER });
        this.changed = true;
        this.out.line(`    roster of ${DEMO_ROSTER.length} players: set`);
      }
      return;
    }
    // A team is owned by whoever creates it: the Member. A run that lost its password sets a new one.
    let password = memberPassword;
    if (password === undefined) {
      password = generatedPassword();
      await this.command('SetUserPassword', {
        aggregateRootId: await this.userIdOf(DEMO_MEMBER_EMAIL),
        newPassword: password,
      });
      this.out.line(`  account ${DEMO_MEMBER_EMAIL}: new password ${password} (shown once)`);
    }
    const member = await this.api.bearer(DEMO_MEMBER_EMAIL, password);
    if (!member) throw new SeedError(`no bearer token for ${DEMO_MEMBER_EMAIL}`);
    await this.command(
      'CreateFantasyTeam',
      { aggregateRootId: DEMO_TEAM_ID, name: DEMO_TEAM_NAME, season: DEMO_SEASON },
      member,
    );
    await this.command(
      'SetFantasyTeamRoster',
      { aggregateRootId: DEMO_TEAM_ID, players: DEMO_ROSTER },
      member,
    );
    this.changed = true;
    // The next run, and the reader of the printed instructions, find it through its projection.
    const deadline = Date.now() + PROJECTION_WAIT_MS;
    while ((await this.readTeam())?.roster.length !== DEMO_ROSTER.length) {
      if (Date.now() > deadline)
        throw new SeedError('the team was created but its projection did not show it');
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    this.out.line(
      `  team ${DEMO_TEAM_ID} "${DEMO_TEAM_NAME}" of ${DEMO_MEMBER_EMAIL}: created with a roster of ${DEMO_ROSTER.length}, unlinked`,
    );
  }

  private async readTeam(): Promise<{ roster: unknown[] } | undefined> {
    const answer = await this.query({ queryType: 'GetFantasyTeam', id: DEMO_TEAM_ID });
    if (answer.status === 404) return undefined;
    if (answer.status !== 200) throw failure('GetFantasyTeam', answer);
    return (answer.body as { results: { roster: unknown[] }[] }).results[0];
  }

  /** A subscription to link events at an address that never resolves: deliveries fail, visibly. */
  private async webhookSubscription(): Promise<void> {
    const listed = await this.query({ queryType: 'ListWebhookSubscriptions' });
    if (listed.status !== 200) throw failure('ListWebhookSubscriptions', listed);
    const ids = ((listed.body as { results: { id: string }[] }).results ?? []).map((item) => item.id);
    if (ids.includes(DEMO_WEBHOOK_ID)) {
      this.out.line(`  webhook subscription ${DEMO_WEBHOOK_ID}: exists`);
      return;
    }
    await this.command('CreateWebhookSubscription', {
      aggregateRootId: DEMO_WEBHOOK_ID,
      url: DEMO_WEBHOOK_URL,
      eventTypes: ['FantasyTeamLinkedEvent', 'FantasyTeamUnlinkedEvent'],
      description: 'Sandbox: link events to an address that never resolves',
    });
    this.changed = true;
    this.out.line(`  webhook subscription ${DEMO_WEBHOOK_ID} to ${DEMO_WEBHOOK_URL}: created`);
  }
}

export async function main(argv: readonly string[], env: NodeJS.ProcessEnv, out: Output): Promise<number> {
  if (env.NODE_ENV === 'production') {
    process.stderr.write(`${SEED_MESSAGES.refusedInProduction}\n`);
    return EXIT.usage;
  }
  let options;
  try {
    options = parseArgs({
      args: [...argv],
      options: {
        url: { type: 'string', default: DEFAULT_URL },
        email: { type: 'string', default: SANDBOX_ADMIN_EMAIL },
      },
    }).values;
  } catch (error) {
    process.stderr.write(
      `${(error as Error).message}\nusage: npm run seed:demo [-- --url <base url>] [--email <admin e-mail>]\n`,
    );
    return EXIT.usage;
  }
  const email = options.email;
  const password = await readPassword(`Password of ${email}: `);
  if (!password) {
    process.stderr.write('seed:demo needs the password the first start printed (typed, or piped on stdin)\n');
    return EXIT.usage;
  }
  const api = new ServiceApi(options.url);
  const imports = new ImportClient({ baseUrl: options.url, email, password });
  out.line(`Seeding the demo season into ${api.baseUrl} as ${email}:`);
  try {
    const changed = await new DemoSeeder(api, imports, email, password, out).run();
    out.line(changed ? SEED_MESSAGES.loaded : SEED_MESSAGES.nothingChanged);
    out.line(`Try it: ${api.baseUrl}/api/docs ("Authorize", then "Try it out" on any example)`);
    return EXIT.ok;
  } catch (error) {
    if (error instanceof SeedError || error instanceof HttpError || error instanceof NetworkError) {
      process.stderr.write(`seed:demo failed: ${error.message}\n`);
      return EXIT.failed;
    }
    throw error;
  }
}

if (require.main === module) {
  main(process.argv.slice(2), process.env, { line: (text) => process.stdout.write(`${text}\n`) }).then(
    (code) => process.exit(code),
    (error: unknown) => {
      process.stderr.write(`seed:demo: ${error instanceof Error ? error.stack : String(error)}\n`);
      process.exit(70);
    },
  );
}
