import { committedDocument, documentedTypes, fuzzTargets } from '../helpers/fuzz/document';
import { randomSocketCases, runSocketCases, socketCases } from '../helpers/fuzz/raw-http';
import { boundarySweepCases, fuzzCases, SWEEP_AUTH, sweepCases } from '../helpers/fuzz/requests';
import { reportFindings, requestValidator, runCases } from '../helpers/fuzz/run';
import { FUZZ_HTTP_TIMEOUTS, type FuzzStack, startFuzzStack } from '../helpers/fuzz/stack';

/**
 * The contract fuzzer, in `npm test`: requests generated from the committed OpenAPI
 * document alone (json-schema-faker bodies, fast-check variations), for every operation, query,
 * command and importer type and every auth scheme, sent over real HTTP to a real ingress and worker
 * on a real Redis; then malformed HTTP over raw sockets. Seeded and bounded:
 *
 *   FUZZ_RUNS=100000 npm run fuzz          a long run (the default is a few thousand)
 *   FUZZ_SEED=123 npx jest test/fuzz       replays the run a failure printed
 *
 * FUZZ_SOCKET_RUNS sets the number of random socket cases, FUZZ_CONCURRENCY the requests in flight.
 *
 * The socket cases hold the ingress to its HTTP timeouts (HTTP_REQUEST_TIMEOUT_MS,
 * HTTP_HEADERS_TIMEOUT_MS, HTTP_KEEP_ALIVE_TIMEOUT_MS, set small in stack.ts) plus 2 s of slack,
 * so the server must also check them often (node's connectionsCheckingInterval, 30 s by default).
 */
function envInteger(name: string, fallback: number): number {
  const value = Number(process.env[name]);
  return Number.isSafeInteger(value) && value > 0 ? value : fallback;
}

const RUNS = envInteger('FUZZ_RUNS', 5_000);
const SEED = envInteger('FUZZ_SEED', Math.floor(Math.random() * 2 ** 31) || 1);
const SOCKET_RUNS = envInteger('FUZZ_SOCKET_RUNS', Math.min(1_000, Math.max(24, Math.round(RUNS / 100))));
const CONCURRENCY = envInteger('FUZZ_CONCURRENCY', 8);
const REPLAY = `FUZZ_SEED=${SEED} FUZZ_RUNS=${RUNS} npx jest test/fuzz`;

/** Error lines the service logged, distinct, for a failing run's report. */
function loggedErrors(stack: FuzzStack): string[] {
  const lines = `${stack.ingress.stdout()}\n${stack.worker.stdout()}`
    .split('\n')
    .filter((line) => line.includes('"level":"error"'))
    .map((line) =>
      line.replace(/"(timestamp|requestId|correlationId|traceId|durationMs)":"?[^,"]*"?,?/g, ''),
    );
  return [...new Set(lines)].slice(0, 20);
}

describe('The contract fuzzer', () => {
  const document = committedDocument();
  const targets = fuzzTargets(document);
  let stack: FuzzStack;

  beforeAll(async () => {
    process.stdout.write(`[fuzz] ${REPLAY}\n`);
    stack = await startFuzzStack();
  }, 120_000);
  afterAll(async () => {
    await stack?.close();
  });

  it('When the committed document is read, then every operation, query, command and importer type is a target', () => {
    const components = new Set(targets.map((target) => target.component));
    expect(documentedTypes(document).filter((type) => !components.has(type))).toEqual([]);
    const operations = Object.entries(document.paths).flatMap(([path, item]) =>
      Object.keys(item).map((method) => `${method.toUpperCase()} ${path}`),
    );
    expect(
      operations.filter((operation) => !targets.some((target) => target.name.startsWith(operation))),
    ).toEqual([]);
    expect(SWEEP_AUTH.map((auth) => auth.kind)).toEqual(
      expect.arrayContaining(['none', 'account', 'metrics', 'tampered-token', 'garbage']),
    );
  });

  it(
    'When schema-valid and mutated requests of every target arrive under every auth scheme, then none gets a 5xx or an answer outside the document, and no process exits',
    async () => {
      const validate = requestValidator();
      const authSweep = sweepCases(targets, stack.known, validate, SEED);
      const sweep = [
        ...authSweep,
        ...boundarySweepCases(targets, stack.known, validate, SEED, authSweep.length),
      ];
      const cases = (function* () {
        yield* sweep;
        yield* fuzzCases(targets, stack.known, validate, SEED, RUNS, sweep.length);
      })();
      const stats = await runCases(cases, stack, document, CONCURRENCY);
      const kinds: Record<string, number> = {};
      for (const finding of stats.findings) kinds[finding.kind] = (kinds[finding.kind] ?? 0) + 1;
      process.stdout.write(
        `[fuzz] ${stats.sent} requests in ${stats.elapsedMs} ms (seed ${SEED}); statuses ${JSON.stringify(stats.byStatus)}; ` +
          `variations ${JSON.stringify(stats.byVariation)}; busy 503s ${stats.busy503}; 408s on a slow machine ${stats.timedOut}; findings ${JSON.stringify(kinds)}\n`,
      );
      if (stats.findings.length) {
        throw new Error(
          `The contract fuzzer found ${stats.findings.length} problem(s). Replay: ${REPLAY}\n` +
            `${reportFindings(stats.findings)}\n\nErrors the service logged:\n${loggedErrors(stack).join('\n')}`,
        );
      }
      expect(stats.sent).toBeGreaterThan((sweep.length + RUNS) * 0.9);
    },
    Math.max(180_000, RUNS * 100),
  );

  it(
    'When malformed HTTP arrives over raw sockets, then each case is answered or closed within the configured timeouts',
    async () => {
      const admin = stack.accounts.admin;
      const authorization = `Basic ${Buffer.from(`${admin.email}:${admin.password}`).toString('base64')}`;
      const cases = [
        ...socketCases(stack.host, authorization),
        ...randomSocketCases(stack.host, authorization, SEED, SOCKET_RUNS),
      ];
      const outcomes = await runSocketCases(stack.host, stack.port, cases, FUZZ_HTTP_TIMEOUTS);
      const failed = outcomes.filter((outcome) => outcome.problem);
      process.stdout.write(
        `[fuzz] ${outcomes.length} socket cases (seed ${SEED}), ${failed.length} not answered or closed in time\n`,
      );
      if (failed.length) {
        throw new Error(
          `Malformed HTTP held a connection or got a 5xx (timeouts ${JSON.stringify(FUZZ_HTTP_TIMEOUTS)}). Replay: ${REPLAY}\n` +
            failed
              .map((outcome) => `  ${outcome.name}: ${outcome.problem} ${JSON.stringify(outcome)}`)
              .join('\n'),
        );
      }
      expect(stack.alive()).toBe(true);
    },
    Math.max(120_000, SOCKET_RUNS * 400),
  );

  it('When the fuzzing is over, then both processes still run and the service answers a known-good request', async () => {
    expect(stack.alive()).toBe(true);
    const health = await fetch(`${stack.baseUrl}/healthz`);
    expect(health.status).toBe(200);
    const res = await fetch(`${stack.baseUrl}/api/readmodel`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: stack.accounts.admin.bearer },
      body: JSON.stringify({ query: { queryType: 'CurrentUser' } }),
    });
    expect(res.status).toBe(200);
    const body = JSON.parse(await res.text()) as { data: { email: string }[] };
    expect(body.data[0]?.email).toBe(stack.accounts.admin.email);
  });
});
