import { committedDocument, type FuzzTarget, fuzzTargets } from '../helpers/fuzz/document';
import { type FuzzCase, rightfulAuth } from '../helpers/fuzz/requests';
import { type Answer, judge, requestValidator } from '../helpers/fuzz/run';
import { ResponseContract } from '../helpers/openapi-contract';

/**
 * The contract fuzzer's judge, on answers made up to be wrong: each kind of finding must be
 * reported, and right answers must not be. (The fuzzer itself runs in test/fuzz.)
 */
describe("The contract fuzzer's judge", () => {
  const document = committedDocument();
  const contract = new ResponseContract(document);
  const targets = fuzzTargets(document);
  const validate = requestValidator();
  const target = (name: string): FuzzTarget => {
    const found = targets.find((candidate) => candidate.name === name);
    if (!found) throw new Error(`no target ${name}`);
    return found;
  };
  const caseOf = (name: string, body: unknown, extra: Partial<FuzzCase> = {}): FuzzCase => {
    const chosen = target(name);
    return {
      index: 0,
      target: chosen,
      variation: 'valid',
      auth: rightfulAuth(chosen),
      method: chosen.method,
      url: chosen.path,
      contentType: 'application/json',
      body: JSON.stringify(body),
      parsed: body,
      ...(chosen.schema ? { schemaValid: validate(chosen, body) ?? false } : {}),
      note: 'made up',
      ...extra,
    };
  };
  const answer = (status: number, body: unknown, extra: Partial<Answer> = {}): Answer => ({
    status,
    contentType:
      status >= 400 && status !== 401 ? 'application/problem+json; charset=utf-8' : 'application/json',
    retryAfter: null,
    allow: null,
    text: JSON.stringify(body),
    ...extra,
  });
  const kinds = (fuzzCase: FuzzCase, given: Answer) =>
    judge(fuzzCase, given, contract, document).findings.map((finding) => finding.kind);

  const currentUser = { query: { queryType: 'CurrentUser' } };
  const problem500 = {
    type: 'https://tools.ietf.org/html/rfc7231#section-6.6.1',
    title: 'An error occurred while processing your request.',
    status: 500,
    traceId: 'x',
  };

  it('When an answer is a 500, then it is a 5xx finding even though the document lists 500', () => {
    expect(
      kinds(caseOf('POST /api/readmodel CurrentUserQuery', currentUser), answer(500, problem500)),
    ).toContain('5xx');
  });

  it('When a documented 503 comes with Retry-After, then it counts as busy, not as a finding', () => {
    const busy = {
      type: 'https://tools.ietf.org/html/rfc7231#section-6.6.4',
      title: 'Service Unavailable',
      status: 503,
      traceId: 'x',
    };
    const verdict = judge(
      caseOf('POST /api/readmodel CurrentUserQuery', currentUser),
      answer(503, busy, { retryAfter: '1' }),
      contract,
      document,
    );
    expect(verdict.busy).toBe(true);
    expect(verdict.findings.map((finding) => finding.kind)).not.toContain('5xx');
  });

  it("When a read-model answer has another query's shape, then it is a contract finding", () => {
    const mappedPlayers = { queryType: 'GetMappedPlayers', results: [], totalCount: 0 };
    expect(
      kinds(caseOf('POST /api/readmodel CurrentUserQuery', currentUser), answer(200, mappedPlayers)),
    ).toEqual(['contract']);
  });

  it('When an undocumented method gets anything but a 405 with Allow, then it is a method finding', () => {
    const post = caseOf('GET /admin/queues', undefined, {
      method: 'POST',
      variation: 'method',
      body: undefined,
    });
    const unauthorized = {
      type: 'https://tools.ietf.org/html/rfc7235#section-3.1',
      title: 'Unauthorized',
      status: 401,
      traceId: 'x',
    };
    expect(kinds(post, answer(401, unauthorized, { contentType: 'application/problem+json' }))).toEqual([
      'method',
    ]);
    const notAllowed = {
      type: 'https://tools.ietf.org/html/rfc7231#section-6.5.5',
      title: 'Method Not Allowed',
      status: 405,
      traceId: 'x',
    };
    expect(kinds(post, answer(405, notAllowed, { allow: 'GET, HEAD' }))).toEqual([]);
  });

  it('When a schema-valid body is refused as malformed, then it is a refused-valid finding', () => {
    const name = 'x'.repeat(100);
    const create = caseOf('POST /api/command CreateFantasyTeamCommand', {
      commandType: 'CreateFantasyTeam',
      command: { aggregateRootId: '0f6f6b52-3a8e-4c1d-9b7e-2d4c6a8e0f11', name },
    });
    expect(create.schemaValid).toBe(true);
    const refused = {
      requestId: null,
      success: false,
      eventCount: 0,
      errorMessage: 'Name length must be less than or equal to 100 characters long',
      errorCode: 'COMMAND_VALIDATION_ERROR',
      commandType: 'CreateFantasyTeam',
    };
    expect(kinds(create, answer(400, refused, { contentType: 'application/json' }))).toEqual([
      'refused-valid',
    ]);
    // A rule of the domain is not a refusal of the body's shape.
    const domain = { ...refused, errorMessage: 'Team already exists' };
    expect(kinds(create, answer(400, domain, { contentType: 'application/json' }))).toEqual([]);
  });

  it('When a schema-invalid body is accepted from an account, then it is an accepted-invalid finding', () => {
    const tooLong = caseOf('POST /api/readmodel CurrentUserQuery', { ...currentUser, take: 1001 });
    expect(tooLong.schemaValid).toBe(false);
    const accepted = { queryType: 'CurrentUser', data: [], totalCount: 1, skip: 0 };
    expect(kinds(tooLong, answer(200, accepted))).toEqual(['accepted-invalid']);
  });
});
