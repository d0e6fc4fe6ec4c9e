import Ajv2020, { type ValidateFunction } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';

import type { OpenApiDocument } from '../../../ingress/openapi/openapi-document';
import { hasAnyRole, type Role } from '../../../shared/roles';
import { ResponseContract } from '../openapi-contract';
import { documentedMethods, type FuzzTarget } from './document';
import { ACCOUNT_ROLES, type AuthChoice, type FuzzCase, type Validator } from './requests';
import type { FuzzStack } from './stack';

/**
 * Sends the fuzzer's cases to the running service over real HTTP (fetch, keep-alive, a few at a
 * time) and judges every answer:
 * - `5xx`: any 5xx, except a 503 the document lists for the operation with a Retry-After (busy);
 * - `contract`: a status, media type or body the document does not give for the operation (a
 *   read-model answer against its own query's schema, from x-query-types);
 * - `method`: a method the path does not document, answered otherwise than 405 with an Allow;
 * - `refused-valid`: a body valid for the document's schema refused as invalid (a validation problem,
 *   an invalid_request, a command's field message);
 * - `accepted-invalid`: a body the schema refuses, accepted (2xx) from an account;
 * - `no-answer`: no answer within the client's timeout, or the connection failed;
 * - `exit`: a service process is gone.
 */
export type FindingKind =
  '5xx' | 'contract' | 'method' | 'refused-valid' | 'accepted-invalid' | 'no-answer' | 'exit';

export interface Finding {
  readonly kind: FindingKind;
  readonly index: number;
  readonly target: string;
  readonly request: string;
  readonly answer: string;
  readonly why: string;
}

export interface RunStats {
  readonly sent: number;
  readonly byStatus: Record<string, number>;
  readonly byTarget: Record<string, number>;
  readonly byVariation: Record<string, number>;
  readonly busy503: number;
  /**
   * Requests answered 408: the socket cases' small HTTP_REQUEST_TIMEOUT_MS ran out before the
   * body was all read (a stalled client or event loop on a loaded machine). Counted, not judged.
   */
  readonly timedOut: number;
  readonly findings: Finding[];
  readonly elapsedMs: number;
}

export interface Answer {
  readonly status: number;
  readonly contentType: string | undefined;
  readonly retryAfter: string | null;
  readonly allow: string | null;
  readonly text: string;
}

const CLIENT_TIMEOUT_MS = 30_000;
const JSON_MEDIA = /^application\/(problem\+)?json\b/i;

/** A joi field message (the service's request validation), not a domain rule's refusal. */
const FIELD_MESSAGE =
  /( is required| is not allowed| must be a string| must be a GUID| must be one of| must be an? (number|integer|object|array)| must be true or false| characters| must be at (most|least)| is invalid| is beyond the supported range| must be a 4-digit year| must be a valid)/;

/** Ajv against each target's request schema, as the document states it. */
export function requestValidator(): Validator {
  const ajv = new Ajv2020({ strict: false, allErrors: false });
  addFormats(ajv);
  ajv.addVocabulary(['discriminator', 'example']);
  const compiled = new Map<string, ValidateFunction>();
  return (target, value) => {
    let validate = compiled.get(target.name);
    if (!validate) {
      validate = ajv.compile(target.schema as object);
      compiled.set(target.name, validate);
    }
    try {
      return validate(withoutProtoMembers(value));
    } catch (error) {
      // Nesting too deep to walk: whether it is valid stays unknown.
      if (error instanceof RangeError) return undefined;
      throw error;
    }
  };
}

/**
 * `value` without its `__proto__` members: the integrators guide promises that such a member "is dropped
 * wherever it appears, as if it were absent", so the service judges the body without them.
 */
function withoutProtoMembers(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutProtoMembers);
  if (value === null || typeof value !== 'object') return value;
  const copy: Record<string, unknown> = {};
  for (const key of Object.keys(value)) {
    if (key !== '__proto__') copy[key] = withoutProtoMembers((value as Record<string, unknown>)[key]);
  }
  return copy;
}

function authorizationOf(auth: AuthChoice, stack: FuzzStack): string | undefined {
  switch (auth.kind) {
    case 'none':
      return undefined;
    case 'account': {
      const account = stack.accounts[auth.account];
      return auth.scheme === 'bearer'
        ? account.bearer
        : `Basic ${Buffer.from(`${account.email}:${account.password}`).toString('base64')}`;
    }
    case 'metrics':
      return `Bearer ${stack.metricsToken}`;
    case 'wrong-password': {
      const account = stack.accounts[auth.account];
      const password = auth.password === account.password ? `${auth.password}x` : auth.password;
      return `Basic ${Buffer.from(`${account.email}:${password}`).toString('base64')}`;
    }
    case 'tampered-token': {
      const token = stack.accounts[auth.account].bearer;
      const last = token.at(-2) === 'A' ? 'B' : 'A';
      return `${token.slice(0, -2)}${last}${token.at(-1) ?? ''}`;
    }
    case 'garbage':
      return auth.header;
  }
}

function describeAuth(auth: AuthChoice): string {
  switch (auth.kind) {
    case 'account':
      return `${auth.scheme} ${auth.account}`;
    case 'wrong-password':
    case 'tampered-token':
      return `${auth.kind} ${auth.account}`;
    case 'garbage':
      return `garbage ${JSON.stringify(auth.header.slice(0, 60))}`;
    default:
      return auth.kind;
  }
}

function short(text: string | undefined, max = 400): string {
  if (text === undefined) return '';
  return text.length > max ? `${text.slice(0, max)}... (${text.length} chars)` : text;
}

export function describeRequest(fuzzCase: FuzzCase): string {
  const type = fuzzCase.contentType === undefined ? '' : ` [${fuzzCase.contentType || 'no Content-Type'}]`;
  return (
    `#${fuzzCase.index} ${fuzzCase.method} ${short(fuzzCase.url, 120)} (${describeAuth(fuzzCase.auth)})${type} ` +
    `${fuzzCase.variation}: ${short(fuzzCase.note, 300)}; body ${short(fuzzCase.body, 400)}` +
    (fuzzCase.schemaValid === undefined ? '' : `; schema-valid: ${fuzzCase.schemaValid}`)
  );
}

async function send(fuzzCase: FuzzCase, stack: FuzzStack): Promise<Answer> {
  const headers: Record<string, string> = {};
  if (fuzzCase.contentType) headers['content-type'] = fuzzCase.contentType;
  const authorization = authorizationOf(fuzzCase.auth, stack);
  if (authorization !== undefined) headers.authorization = authorization;
  const bodyAllowed = !['GET', 'HEAD'].includes(fuzzCase.method);
  const res = await fetch(`${stack.baseUrl}${fuzzCase.url}`, {
    method: fuzzCase.method,
    headers,
    // Bytes, so fetch adds no Content-Type of its own where a case sends none.
    ...(bodyAllowed && fuzzCase.body !== undefined ? { body: Buffer.from(fuzzCase.body, 'utf8') } : {}),
    redirect: 'manual',
    signal: AbortSignal.timeout(CLIENT_TIMEOUT_MS),
  });
  const contentType = res.headers.get('content-type') ?? undefined;
  // An event stream (GET /api/events) never ends by itself: its headers are the answer to judge,
  // and the body is dropped, which closes the stream (and frees its SSE_MAX_CONNECTIONS slot).
  const streamed = contentType?.toLowerCase().startsWith('text/event-stream') ?? false;
  if (streamed) await res.body?.cancel();
  return {
    status: res.status,
    contentType,
    retryAfter: res.headers.get('retry-after'),
    allow: res.headers.get('allow'),
    text: streamed ? '' : await res.text(),
  };
}

/** The answer refuses the body as malformed (rather than deciding it). */
function refusesAsInvalid(
  target: FuzzTarget,
  answer: Answer,
  body: unknown,
  hasAuthorization: boolean,
): string | undefined {
  if (answer.status !== 400) return undefined;
  const problem = answer.contentType?.toLowerCase().startsWith('application/problem+json');
  if (problem) return 'a validation problem';
  const parsed = body as Record<string, unknown> | undefined;
  if (target.path === '/api/auth/token' && parsed?.error === 'invalid_request' && !hasAuthorization) {
    return `invalid_request (${String(parsed.error_description)})`;
  }
  if (
    target.path === '/api/command' &&
    parsed?.errorCode === 'COMMAND_VALIDATION_ERROR' &&
    typeof parsed.errorMessage === 'string' &&
    FIELD_MESSAGE.test(parsed.errorMessage)
  ) {
    return `a field message (${parsed.errorMessage})`;
  }
  return undefined;
}

export function judge(
  fuzzCase: FuzzCase,
  answer: Answer,
  contract: ResponseContract,
  document: OpenApiDocument,
): { findings: Omit<Finding, 'index' | 'target' | 'request'>[]; busy: boolean } {
  const findings: Omit<Finding, 'index' | 'target' | 'request'>[] = [];
  const shown = `${answer.status} ${answer.contentType ?? '(no Content-Type)'} ${short(answer.text)}`;
  const add = (kind: FindingKind, why: string) => findings.push({ kind, why, answer: shown });
  const { target } = fuzzCase;
  const pathOnly = fuzzCase.url.split('?')[0] as string;
  let body: unknown;
  if (answer.contentType && JSON_MEDIA.test(answer.contentType) && answer.text) {
    try {
      body = JSON.parse(answer.text) as unknown;
    } catch {
      add('contract', 'a JSON media type whose body is not JSON');
    }
  }
  const operation = document.paths[pathOnly]?.[fuzzCase.method.toLowerCase() as 'get' | 'post'];
  let busy = false;
  if (answer.status >= 500) {
    busy = answer.status === 503 && Boolean(operation?.responses['503']) && answer.retryAfter !== null;
    if (!busy) add('5xx', `answered ${answer.status}`);
  }
  if (fuzzCase.variation === 'method' && !documentedMethods(document, pathOnly).includes(fuzzCase.method)) {
    const allow = (answer.allow ?? '').split(',').map((method) => method.trim());
    const expected = documentedMethods(document, pathOnly);
    if (answer.status !== 405)
      add(
        'method',
        `${fuzzCase.method} is not documented for ${pathOnly}: expected 405 with Allow ${expected.join(', ')}`,
      );
    else if (!expected.every((method) => allow.includes(method)) || allow.includes(fuzzCase.method)) {
      add('method', `Allow is ${JSON.stringify(answer.allow)}, the document has ${expected.join(', ')}`);
    } else if (!answer.contentType?.startsWith('application/problem+json')) {
      add('method', 'a 405 that is not a problem');
    }
    return { findings, busy };
  }
  const requestBody = (() => {
    if (fuzzCase.parsed !== undefined) return fuzzCase.parsed;
    try {
      return fuzzCase.body === undefined ? undefined : (JSON.parse(fuzzCase.body) as unknown);
    } catch {
      return undefined;
    }
  })();
  const verdict = contract.check({
    method: fuzzCase.method,
    path: pathOnly,
    requestBody,
    status: answer.status,
    contentType: answer.contentType,
    body,
    text: answer.text,
  });
  if (verdict.kind === 'violates') add('contract', verdict.problems.join('\n'));
  if (verdict.kind === 'skipped') add('contract', `not checked: ${verdict.reason}`);

  const trusted = ['valid', 'unicode', 'boundary', 'huge', 'mutated'].includes(fuzzCase.variation);
  if (trusted && fuzzCase.schemaValid === true && fuzzCase.variation !== 'mutated') {
    const refusal = refusesAsInvalid(target, answer, body, fuzzCase.auth.kind !== 'none');
    if (refusal)
      add(
        'refused-valid',
        `the body is valid for ${target.component ?? target.name}, but was refused with ${refusal}`,
      );
  }
  // client_credentials: the document says the body's client_id and client_secret count only
  // "when no Basic header is sent", so with one the body's are not what is decided.
  const basicGrant =
    target.component === 'ClientCredentialsGrant' &&
    fuzzCase.auth.kind === 'account' &&
    fuzzCase.auth.scheme === 'basic';
  // An import from an account without the importer's role is accepted and fails while processing
  // (spec 5 rule 4), refused after one parse, before its rows are validated (ADR 0023): a 2xx for
  // rows the schema refuses is its documented answer.
  const rolelessImport =
    target.path === '/api/import' &&
    fuzzCase.auth.kind === 'account' &&
    !hasAnyRole([ACCOUNT_ROLES[fuzzCase.auth.account]], target.roles as readonly Role[]);
  if (
    trusted &&
    !basicGrant &&
    !rolelessImport &&
    fuzzCase.schemaValid === false &&
    fuzzCase.auth.kind === 'account' &&
    answer.status >= 200 &&
    answer.status < 300
  ) {
    add('accepted-invalid', `the body is invalid for ${target.component ?? target.name}, but was accepted`);
  }
  return { findings, busy };
}

/** Sends every case, `concurrency` at a time, and judges each answer. */
export async function runCases(
  cases: Iterable<FuzzCase>,
  stack: FuzzStack,
  document: OpenApiDocument,
  concurrency: number,
): Promise<RunStats> {
  const contract = new ResponseContract(document);
  const started = Date.now();
  const stats: RunStats = {
    sent: 0,
    byStatus: {},
    byTarget: {},
    byVariation: {},
    busy503: 0,
    timedOut: 0,
    findings: [],
    elapsedMs: 0,
  };
  const mutable = stats as { sent: number; busy503: number; timedOut: number; elapsedMs: number };
  const iterator = cases[Symbol.iterator]();
  let stopped = false;
  const lane = async () => {
    for (;;) {
      if (stopped) return;
      const drawn = iterator.next();
      if (drawn.done) return;
      const fuzzCase = drawn.value;
      const where = {
        index: fuzzCase.index,
        target: fuzzCase.target.name,
        request: describeRequest(fuzzCase),
      };
      let answer: Answer;
      try {
        // Sent once: a request without an answer is a finding, whatever the connection did.
        answer = await send(fuzzCase, stack);
      } catch (error) {
        // fetch refuses to send some headers (a value it finds invalid): not the service's doing.
        if (error instanceof TypeError && /header|ByteString|Headers/i.test(String(error.message))) continue;
        stats.findings.push({
          ...where,
          kind: 'no-answer',
          answer: '',
          why: String((error as Error).cause ?? error),
        });
        if (!stack.alive()) stopped = true;
        continue;
      }
      mutable.sent++;
      if (answer.status === 408) {
        mutable.timedOut++;
        continue;
      }
      stats.byStatus[answer.status] = (stats.byStatus[answer.status] ?? 0) + 1;
      stats.byTarget[fuzzCase.target.name] = (stats.byTarget[fuzzCase.target.name] ?? 0) + 1;
      stats.byVariation[fuzzCase.variation] = (stats.byVariation[fuzzCase.variation] ?? 0) + 1;
      const { findings, busy } = judge(fuzzCase, answer, contract, document);
      // FUZZ_TRACE=<part of a target's name> prints that target's exchanges, to see what it gets.
      const trace = process.env.FUZZ_TRACE;
      if (trace && fuzzCase.target.name.includes(trace)) {
        process.stdout.write(
          `[fuzz] ${describeRequest(fuzzCase)}\n  -> ${answer.status} ${short(answer.text, 300)}\n`,
        );
      }
      if (busy) mutable.busy503++;
      for (const finding of findings) stats.findings.push({ ...where, ...finding });
      if (mutable.sent % 100 === 0 && !stack.alive()) stopped = true;
    }
  };
  await Promise.all(Array.from({ length: concurrency }, lane));
  if (!stack.alive()) {
    stats.findings.push({
      index: -1,
      target: '(process)',
      request: '',
      kind: 'exit',
      answer: '',
      why: `a service process exited: ingress ${String(stack.ingress.child.exitCode ?? stack.ingress.child.signalCode)}, worker ${String(stack.worker.child.exitCode ?? stack.worker.child.signalCode)}\n${stack.ingress.stderr().slice(-2_000)}${stack.worker.stderr().slice(-2_000)}`,
    });
  }
  mutable.elapsedMs = Date.now() - started;
  return stats;
}

/** The findings, grouped by kind and target, a few examples each: what a failing run prints. */
export function reportFindings(findings: readonly Finding[], examplesPerGroup = 3): string {
  const groups = new Map<string, Finding[]>();
  for (const finding of findings) {
    const key = `${finding.kind} | ${finding.target}`;
    groups.set(key, [...(groups.get(key) ?? []), finding]);
  }
  const lines: string[] = [];
  for (const [key, group] of [...groups.entries()].sort()) {
    lines.push(`\n== ${key}: ${group.length}`);
    for (const finding of group.slice(0, examplesPerGroup)) {
      lines.push(
        `  request: ${finding.request}`,
        `  answer:  ${finding.answer}`,
        `  why:     ${finding.why.replaceAll('\n', '\n           ')}`,
      );
    }
  }
  return lines.join('\n');
}
