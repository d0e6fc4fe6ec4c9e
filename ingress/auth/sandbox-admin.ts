import { randomBytes, randomUUID } from 'node:crypto';

import { SYSTEM_ACTOR } from '../../shared/accounts/account';
import type { AccountService } from '../../shared/accounts/account.service';
import type { EnabledAdmins } from '../../shared/accounts/enabled-admins';
import type { Config } from '../../shared/config';
import { importJobIdFor } from '../../shared/importers/import-queue';
import type { Logger } from '../../shared/logger';
import { EXAMPLE_IDS } from '../openapi/spec-examples';

/**
 * The sandbox: a development service started on loopback with no ADMIN_EMAIL gets a local
 * administrator on its first start, with a generated password shown once on the console (ADR 0017).
 * Never in production, nor on a development start that listens beyond this machine.
 */
export const SANDBOX_ADMIN_EMAIL = 'sandbox-admin@example.com';

/** The Member `npm run seed:demo` makes (scripts/lib/demo-season.ts). */
export const DEMO_MEMBER_EMAIL = 'demo-member@example.com';
/** The service account `npm run seed:demo` makes: the one GetMappedPlayers' example is read with. */
export const DEMO_SERVICE_ACCOUNT_EMAIL = EXAMPLE_IDS.serviceAccount;

/**
 * Every account the sandbox and `npm run seed:demo` make, with passwords printed to a console. They
 * sign in only on a local development start (ADR 0037): the same Redis may later be served by an
 * ingress that listens beyond this machine, or by a production one.
 */
export const SANDBOX_ACCOUNT_EMAILS = [
  SANDBOX_ADMIN_EMAIL,
  DEMO_MEMBER_EMAIL,
  DEMO_SERVICE_ACCOUNT_EMAIL,
] as const;

/**
 * The user ids refused at sign-in (Basic, the token endpoint, a bearer token) by this start: the
 * sandbox and demo accounts unless it is a local development one (loopback, not production). Looked
 * up once at start-up (an id is keyed, ADR 0035), so a request pays a set lookup, never a Redis read.
 */
export async function refusedSandboxAccounts(
  config: Pick<Config, 'localDevelopment'>,
  accounts: Pick<AccountService, 'userIds'>,
): Promise<ReadonlySet<string>> {
  if (config.localDevelopment) return new Set();
  return new Set(await Promise.all(SANDBOX_ACCOUNT_EMAILS.map((email) => accounts.userIds.idFor(email))));
}

/**
 * The job id of the players import `npm run seed:demo` submits as the sandbox administrator, on a
 * sandbox start (else undefined): the examples' EXAMPLE_IDS.importJob is that job's id under the
 * old public user ids, and a deployment's own follows its user id key (ADR 0035).
 */
export async function sandboxExampleImportJobId(
  config: Pick<Config, 'localDevelopment' | 'adminEmail'>,
  accounts: Pick<AccountService, 'userIds'>,
): Promise<string | undefined> {
  if (!sandboxApplies(config)) return undefined;
  return importJobIdFor(await accounts.userIds.idFor(SANDBOX_ADMIN_EMAIL), EXAMPLE_IDS.seedRequest);
}

/** What a start that refuses them says, once, when its Redis holds any of them. */
export function sandboxAccountsRefusedLine(host: string, present: readonly string[]): string {
  return `[sandbox] this start is not a local development one (HOST=${host || 'unset'}, or NODE_ENV=production): the sandbox and demo accounts it found (${present.join(', ')}) cannot sign in; delete them, or start on loopback to use them`;
}

/** Which of the sandbox and demo accounts this service holds (read once, at start-up). */
export async function sandboxAccountsPresent(
  accounts: Pick<AccountService, 'findById' | 'userIds'>,
): Promise<string[]> {
  const found = await Promise.all(
    SANDBOX_ACCOUNT_EMAILS.map(async (email) =>
      (await accounts.findById(await accounts.userIds.idFor(email))) ? email : undefined,
    ),
  );
  return found.filter((email): email is (typeof SANDBOX_ACCOUNT_EMAILS)[number] => email !== undefined);
}

/** 24 base64url characters: 144 random bits, and nothing a shell or a URL would need quoted. */
const SANDBOX_PASSWORD_BYTES = 18;

export type SandboxOutcome =
  | { readonly status: 'created'; readonly email: string; readonly password: string }
  | { readonly status: 'exists'; readonly email: string }
  | { readonly status: 'not-needed' };

/**
 * Whether this start makes (or reports) the sandbox administrator: development on loopback (only
 * this machine reaches the ingress), no ADMIN_EMAIL.
 */
export function sandboxApplies(config: Pick<Config, 'localDevelopment' | 'adminEmail'>): boolean {
  return config.localDevelopment && !config.adminEmail;
}

/**
 * Creates the sandbox administrator only on a service with no enabled Admin at all (a fresh one), so
 * a service that has an administrator never gets an Admin it did not ask for; the enabled Admins
 * must be built first (EnabledAdmins.ensureBuilt). Replicas starting together each try with their
 * own password and correlation id (else a later start would take the first creation as its replay);
 * the version fence lets exactly one create it, and only that one answers `created` with its
 * password, for the caller's console banner, never for the logger.
 */
export async function bootstrapSandboxAdmin(
  config: Pick<Config, 'localDevelopment' | 'adminEmail'>,
  accounts: AccountService,
  admins: Pick<EnabledAdmins, 'count' | 'has'>,
  logger: Logger,
): Promise<SandboxOutcome | undefined> {
  if (!sandboxApplies(config)) return undefined;
  if ((await admins.count()) > 0) {
    const sandboxIsAdmin = await admins.has(await accounts.userIds.idFor(SANDBOX_ADMIN_EMAIL));
    return sandboxIsAdmin ? { status: 'exists', email: SANDBOX_ADMIN_EMAIL } : { status: 'not-needed' };
  }
  const password = randomBytes(SANDBOX_PASSWORD_BYTES).toString('base64url');
  const result = await accounts.createUser(
    SYSTEM_ACTOR,
    { email: SANDBOX_ADMIN_EMAIL, userType: 'Human', roles: ['Admin'], password, emailVerified: true },
    { requestId: null, correlationId: `sandbox-admin:${randomUUID()}` },
  );
  if (result.status === 'created' && !result.replayed) {
    logger.info('sandbox administrator created', { userId: result.userId });
    return { status: 'created', email: SANDBOX_ADMIN_EMAIL, password };
  }
  return { status: 'exists', email: SANDBOX_ADMIN_EMAIL };
}

/** What a start says when the service has an administrator of its own. */
export const SANDBOX_NOT_NEEDED_LINE =
  '[sandbox] this service already has an administrator: no sandbox account was made';

/** The first line of the banner, which a test (and a reader) looks for. */
export const SANDBOX_BANNER_TITLE = 'SANDBOX: a local administrator was created for you';

/**
 * What the console shows after the ingress listens: on the first start the account, its password
 * (this once) and the next three things to try; on later starts one line saying it exists.
 */
export function sandboxBanner(outcome: SandboxOutcome, baseUrl: string): string {
  const seed = `npm run seed:demo${baseUrl === 'http://127.0.0.1:8080' ? '' : ` -- --url ${baseUrl}`}`;
  if (outcome.status === 'not-needed') {
    return `${SANDBOX_NOT_NEEDED_LINE}; sign in as it (Swagger UI: ${baseUrl}/api/docs).\n`;
  }
  if (outcome.status === 'exists') {
    return [
      `[sandbox] the sandbox administrator ${outcome.email} exists; its password was shown on the first start only.`,
      `[sandbox] Lost it? Stop the service and remove ./var/redis (the private Redis) for a fresh sandbox, or set ADMIN_EMAIL and ADMIN_PASSWORD.`,
      `[sandbox] Swagger UI: ${baseUrl}/api/docs   sample data: ${seed}`,
      '',
    ].join('\n');
  }
  const rule = '='.repeat(78);
  return [
    '',
    rule,
    `  ${SANDBOX_BANNER_TITLE} (shown once, never again)`,
    '',
    `    e-mail:    ${outcome.email}`,
    `    password:  ${outcome.password}`,
    '',
    '  Next:',
    '  1. Who am I (Basic authentication):',
    `       curl -s -u '${outcome.email}:${outcome.password}' -H 'content-type: application/json' \\`,
    `         -d '{"query":{"queryType":"CurrentUser"}}' ${baseUrl}/api/readmodel`,
    `  2. Swagger UI, "Authorize" with the e-mail and password above: ${baseUrl}/api/docs`,
    `  3. Load a sample season (asks for the password above): ${seed}`,
    '',
    '  Keep the password: it is stored only as a hash. Only on loopback: production, or a HOST beyond this machine, skips this.',
    rule,
    '',
  ].join('\n');
}
