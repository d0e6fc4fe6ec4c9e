import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { isDeepStrictEqual } from 'node:util';

import type autocannon from 'autocannon';
import type Joi from 'joi';

import {
  COMMAND_DEFINITIONS,
  commandEnvelopeSchema as commandEnvelope,
} from '../ingress/command/command-request';
import { importEnvelopeSchema as importEnvelope } from '../ingress/import/import-request';
import { allQueries, type QueryDependencies } from '../ingress/readmodel/queries';
import { loadConfig } from '../shared/config';
import { importDataSchema } from '../shared/importers/importer';
import { IMPORTERS } from '../shared/importers/registry';
import { isLeftToJoi, plainCheckFor, validate, validateWithJoi } from '../shared/validation';
import {
  type LoadResult,
  measureInterleaved,
  median,
  positiveNumberFromEnv,
  settingsFromEnv,
} from './lib/load';
import { cpuSeconds } from './lib/process-cost';
import { ensureBuilt, REPO_ROOT, type ServerProcess, stopAll } from './lib/processes';
import { machineInfo } from './lib/report';
import { type BenchService, issueToken, JSON_HEADERS, startService } from './lib/service';

/**
 * `npm run bench:plain-check`: what the plain check in front of joi (shared/validation.ts) saves.
 *
 * 1. In this process, validate() (plain check first) against validateWithJoi() (joi alone) over the
 *    validate() calls one request makes, for representative bodies of the read-model, command and
 *    import endpoints: CPU microseconds per request, BENCH_ITERATIONS (default 20,000) requests per
 *    sample, BENCH_SAMPLES (default 15) samples of each, alternated, medians reported.
 * 2. Over HTTP (skipped with BENCH_HTTP=0): two compiled ingresses, each on its own Redis with no
 *    worker, one as built and one with bench/lib/joi-only-validation.cjs preloaded (validate()
 *    replaced by validateWithJoi(); not a setting of the service). CurrentUser by Bearer and
 *    CreateFantasyTeam (a fresh team each request), interleaved rounds; ingress CPU per response
 *    from /proc.
 *
 * Prints its section of bench/RESULTS.md.
 */

const SECTION = 'plain-check';
const ITERATIONS = Math.round(positiveNumberFromEnv('BENCH_ITERATIONS', 20_000));
const SAMPLES = Math.round(positiveNumberFromEnv('BENCH_SAMPLES', 15));
const JOI_ONLY_PRELOAD = path.join(REPO_ROOT, 'bench', 'lib', 'joi-only-validation.cjs');
const CURRENT_USER_BODY = JSON.stringify({ query: { queryType: 'CurrentUser' }, skip: 0, take: 10 });

/** One validate() call of a request: its schema and the body part it is given. */
interface Step {
  readonly what: string;
  readonly schema: Joi.Schema;
  readonly value: unknown;
}

/** A request as the ingress validates it: the validate() calls its route makes, in order. */
interface RequestCase {
  readonly name: string;
  readonly steps: readonly Step[];
}

function requestCases(): RequestCase[] {
  const queries = new Map(
    allQueries({} as QueryDependencies).map((query) => [query.queryType, query.schema]),
  );
  const query = (queryType: string) => {
    const schema = queries.get(queryType);
    if (!schema) throw new Error(`no query ${queryType}`);
    return schema;
  };
  const command = (commandType: string) => {
    const routed = COMMAND_DEFINITIONS.find(({ definition }) => definition.commandType === commandType);
    if (!routed) throw new Error(`no command ${commandType}`);
    return routed.definition.schema;
  };
  const commandSteps = (commandType: string, fields: Record<string, unknown>): Step[] => [
    {
      what: 'command envelope',
      schema: commandEnvelope,
      value: { commandType, command: fields, requestId: randomUUID() },
    },
    { what: `${commandType} fields`, schema: command(commandType), value: fields },
  ];
  const teamId = randomUUID();
  const maxRows = loadConfig({}).imports.maxRows;
  const importer = (importerType: string) => {
    const found = IMPORTERS.get(importerType);
    if (!found) throw new Error(`no importer ${importerType}`);
    return importDataSchema(found, maxRows);
  };
  const userRows = {
    users: [{ email: 'ada@example.com', userName: 'Ada', userType: 'Human', roles: ['Member'] }],
  };
  return [
    // The read-model route validates only the query's own schema when queryType is a string.
    {
      name: 'read model: CurrentUser',
      steps: [{ what: 'CurrentUser', schema: query('CurrentUser'), value: JSON.parse(CURRENT_USER_BODY) }],
    },
    {
      name: 'read model: GetFantasyTeam',
      steps: [
        {
          what: 'GetFantasyTeam',
          schema: query('GetFantasyTeam'),
          value: { query: { queryType: 'GetFantasyTeam', id: teamId } },
        },
      ],
    },
    {
      name: 'read model: ListUsers',
      steps: [
        {
          what: 'ListUsers',
          schema: query('ListUsers'),
          value: { query: { queryType: 'ListUsers', role: 'Member' }, skip: 0, take: 50 },
        },
      ],
    },
    {
      name: 'command: LinkFantasyTeam',
      steps: commandSteps('LinkFantasyTeam', {
        aggregateRootId: teamId,
        fantasyTeamExternalId: 4_211,
        fantasyUserId: 1_004_211,
      }),
    },
    {
      name: 'command: UnlinkFantasyTeam',
      steps: commandSteps('UnlinkFantasyTeam', { aggregateRootId: teamId }),
    },
    {
      name: 'command: CreateFantasyTeam',
      steps: commandSteps('CreateFantasyTeam', { aggregateRootId: teamId, name: 'Bench team' }),
    },
    {
      name: 'import: UserSeeding, 1 row',
      steps: [
        {
          what: 'import envelope',
          schema: importEnvelope,
          value: { requestId: randomUUID(), importerType: 'UserSeeding', importData: userRows },
        },
        { what: 'UserSeeding data', schema: importer('UserSeeding'), value: userRows },
      ],
    },
  ];
}

/** What the plain check does with a step's body: accepts it (as joi would), leaves it to joi, or has none. */
function plainCheckOutcome(step: Step): string {
  const check = plainCheckFor(step.schema);
  if (check === null) return 'no plain check (joi)';
  const checked = check(step.value);
  if (isLeftToJoi(checked)) return 'left to joi';
  if (!isDeepStrictEqual(checked, validateWithJoi(step.schema, step.value)))
    throw new Error(`${step.what}: the plain check's value differs from joi's`);
  return 'plain check';
}

/** CPU microseconds (user + system) per request over ITERATIONS requests. */
function cpuMicrosPerRequest(
  steps: readonly Step[],
  validator: (schema: Joi.Schema, value: unknown) => unknown,
): number {
  const before = process.cpuUsage();
  for (let i = 0; i < ITERATIONS; i += 1) for (const step of steps) validator(step.schema, step.value);
  const used = process.cpuUsage(before);
  return (used.user + used.system) / ITERATIONS;
}

interface MicroRow {
  readonly name: string;
  readonly outcome: string;
  readonly withCheck: number;
  readonly joiOnly: number;
}

function microBench(): MicroRow[] {
  return requestCases().map((request) => {
    const outcome = request.steps.map((step) => `${step.what}: ${plainCheckOutcome(step)}`).join('; ');
    cpuMicrosPerRequest(request.steps, validate); // warm-up of both paths
    cpuMicrosPerRequest(request.steps, validateWithJoi);
    const withCheck: number[] = [];
    const joiOnly: number[] = [];
    for (let sample = 0; sample < SAMPLES; sample += 1) {
      // Alternate which goes first, so drift lands on both alike.
      if (sample % 2 === 0) {
        withCheck.push(cpuMicrosPerRequest(request.steps, validate));
        joiOnly.push(cpuMicrosPerRequest(request.steps, validateWithJoi));
      } else {
        joiOnly.push(cpuMicrosPerRequest(request.steps, validateWithJoi));
        withCheck.push(cpuMicrosPerRequest(request.steps, validate));
      }
    }
    process.stderr.write(`[bench] ${request.name}: done\n`);
    return { name: request.name, outcome, withCheck: median(withCheck), joiOnly: median(joiOnly) };
  });
}

interface HttpRow {
  readonly name: string;
  readonly withCheck: number;
  readonly joiOnly: number;
  /** Median of the per-round differences (joi only - with the check). */
  readonly saved: number;
  readonly responses: number;
  readonly failures: number;
}

/** Starts one service (no worker); `joiOnly` preloads the validate() replacement into its ingress. */
async function variant(name: string, joiOnly: boolean): Promise<{ service: BenchService; token: string }> {
  const service = await startService(name, {
    workers: 0,
    ...(joiOnly ? { ingressEnv: { NODE_OPTIONS: `--require ${JOI_ONLY_PRELOAD}` } } : {}),
  });
  return { service, token: await issueToken(service.ingress, service.credentials) };
}

function createTeamRequests(): autocannon.Request[] {
  return [
    {
      method: 'POST',
      path: '/api/command',
      setupRequest: (request) => ({
        ...request,
        body: JSON.stringify({
          commandType: 'CreateFantasyTeam',
          command: { aggregateRootId: randomUUID(), name: 'Bench team' },
        }),
      }),
    },
  ];
}

async function httpBench(): Promise<{ rows: HttpRow[]; settings: ReturnType<typeof settingsFromEnv> }> {
  const settings = settingsFromEnv({ connections: 16, warmupSeconds: 2, durationSeconds: 5, rounds: 6 });
  ensureBuilt();
  const plain = await variant('plain-check', false);
  const joi = await variant('joi-only', true);
  const ingressOf = new Map<string, ServerProcess>();
  const workloads = [plain, joi].flatMap(({ service, token }, index) => {
    const label = index === 0 ? 'with the plain check' : 'joi only';
    const headers = { ...JSON_HEADERS, authorization: `Bearer ${token}` };
    const made = [
      {
        name: `CurrentUser by Bearer, ${label}`,
        url: `${service.ingress.baseUrl}/api/readmodel`,
        method: 'POST' as const,
        headers,
        body: CURRENT_USER_BODY,
      },
      {
        name: `CreateFantasyTeam, ${label}`,
        url: `${service.ingress.baseUrl}/api/command`,
        method: 'POST' as const,
        headers,
        requests: createTeamRequests,
      },
    ];
    for (const workload of made) ingressOf.set(workload.name, service.ingress);
    return made;
  });
  const started = new Map<string, number>();
  const costs = new Map<string, { micros: number; responses: number; failures: number }[]>();
  await measureInterleaved(
    workloads.map((workload) => ({
      ...workload,
      alongside: () => {
        started.set(workload.name, cpuSeconds(ingressOf.get(workload.name)?.pid ?? 0));
        return Promise.resolve();
      },
    })),
    settings,
    (workload, round, result: LoadResult) => {
      const used = cpuSeconds(ingressOf.get(workload.name)?.pid ?? 0) - (started.get(workload.name) ?? 0);
      const micros = (used * 1e6) / result.responses;
      const failures = result.non2xx + result.errors + result.warmupFailures;
      costs.set(workload.name, [
        ...(costs.get(workload.name) ?? []),
        { micros, responses: result.responses, failures },
      ]);
      process.stderr.write(`[bench] round ${round} ${workload.name}: ${micros.toFixed(1)} us/response\n`);
    },
  );
  if (!readFileSync(joi.service.ingress.logFile, 'utf8').includes('joi-only validation in use'))
    throw new Error('the joi-only ingress never used its validate() replacement');
  const rows = ['CurrentUser by Bearer', 'CreateFantasyTeam'].map((name) => {
    const a = costs.get(`${name}, with the plain check`) ?? [];
    const b = costs.get(`${name}, joi only`) ?? [];
    const all = [...a, ...b];
    return {
      name,
      withCheck: median(a.map((run) => run.micros)),
      joiOnly: median(b.map((run) => run.micros)),
      saved: median(a.map((run, i) => (b[i]?.micros ?? Number.NaN) - run.micros)),
      responses: all.reduce((sum, run) => sum + run.responses, 0),
      failures: all.reduce((sum, run) => sum + run.failures, 0),
    };
  });
  return { rows, settings };
}

const fixed = (value: number, digits = 1) => value.toFixed(digits);

async function main(): Promise<void> {
  const machine = machineInfo();
  const micro = microBench();
  const http = process.env.BENCH_HTTP === '0' ? undefined : await httpBench();
  const lines = [
    `<!-- bench:${SECTION}:begin -->`,
    '',
    '## The plain check in front of joi (shared/validation.ts): what it saves',
    '',
    'Measured by `npm run bench:plain-check` (bench/plain-check.ts) on:',
    '',
    ...Object.entries(machine).map(([key, value]) => `- ${key}: ${value}`),
    `- load average after the run (1/5/15 min): ${machineInfo()['load average before the run (1/5/15 min)']}`,
    '',
    `In process: the validate() calls one request makes, CPU us per request (user + system), median of ${SAMPLES} samples of ${ITERATIONS} requests each, the two alternated:`,
    '',
    '| request | validate() calls | with the plain check | joi only | saved | ratio |',
    '| --- | --- | ---: | ---: | ---: | ---: |',
    ...micro.map(
      (row) =>
        `| ${row.name} | ${row.outcome} | ${fixed(row.withCheck, 2)} | ${fixed(row.joiOnly, 2)} | ${fixed(row.joiOnly - row.withCheck, 2)} | ${fixed(row.joiOnly / row.withCheck, 1)}x |`,
    ),
    '',
  ];
  if (http) {
    const { rows, settings } = http;
    lines.push(
      `Over HTTP: ingress CPU us per response (/proc), two compiled ingresses (each its own Redis, no worker; one with bench/lib/joi-only-validation.cjs preloaded), autocannon with ${settings.connections} connections${settings.ratePerSecond === undefined ? ' (closed loop)' : `, paced at ${settings.ratePerSecond} req/s (BENCH_RATE)`}, ${settings.warmupSeconds} s warm-up and ${settings.durationSeconds} s measured per run, ${settings.rounds} interleaved rounds; medians, and the median of the per-round differences:`,
      '',
      '| request | with the plain check | joi only | saved per request | saved, share of joi only | responses | failures |',
      '| --- | ---: | ---: | ---: | ---: | ---: | ---: |',
      ...rows.map(
        (row) =>
          `| ${row.name} | ${fixed(row.withCheck)} | ${fixed(row.joiOnly)} | ${fixed(row.saved)} | ${fixed((100 * row.saved) / row.joiOnly)}% | ${row.responses} | ${row.failures} |`,
      ),
      '',
    );
  }
  lines.push(`<!-- bench:${SECTION}:end -->`);
  process.stdout.write(`${lines.join('\n')}\n`);
}

main()
  .catch((error: unknown) => {
    process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exitCode = 1;
  })
  .finally(() => stopAll());
