import type { Response } from 'supertest';

import { EMPTY_GUID } from '../../ingress/import/import-response';
import { PROBLEMS, type ProblemStatus } from '../../shared/http/problem';

/**
 * The documented shapes of every answer, for the hostile-input properties: the integrators guide's problem
 * details, the spec's command (2.6) and import (2.7) bodies, the token endpoint's OAuth errors.
 * Each throws (through expect) with what differs.
 */

const LOWER_GUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const PROBLEM_MEMBERS = new Set(['type', 'title', 'status', 'detail', 'code', 'errors', 'traceId']);

function bodyOf(res: Response): Record<string, unknown> {
  expect(typeof res.body).toBe('object');
  expect(res.body).not.toBeNull();
  return res.body as Record<string, unknown>;
}

/**
 * Every answer: never a 5xx, always an X-Request-Id. The one 5xx a valid request may get by design
 * is a read's `minVersion` the projection has not reached (no projector runs under these tests):
 * 503 PROJECTION_BEHIND, with Retry-After.
 */
export function expectNoServerError(res: Response): void {
  const behind =
    res.status === 503 &&
    (res.body as { code?: unknown } | null)?.code === 'PROJECTION_BEHIND' &&
    res.headers['retry-after'] !== undefined;
  if (res.status >= 500 && !behind) throw new Error(`answered ${res.status}: ${res.text.slice(0, 500)}`);
  expect(res.headers['x-request-id']).toEqual(expect.any(String));
}

/** An RFC 7807 problem with the integrators guide's type and title for its status, and the traceId. */
export function expectProblem(res: Response): void {
  expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
  expect(Object.keys(PROBLEMS)).toContain(String(res.status));
  const body = bodyOf(res);
  const { type, title } = PROBLEMS[res.status as ProblemStatus];
  expect(body).toMatchObject({ type, title, status: res.status, traceId: res.headers['x-request-id'] });
  expect(Object.keys(body).filter((key) => !PROBLEM_MEMBERS.has(key))).toEqual([]);
  if ('detail' in body) expect(typeof body.detail).toBe('string');
  if (res.status === 400) expect(body.errors).toEqual(expect.any(Object));
  if ('errors' in body) {
    const errors = body.errors as Record<string, unknown>;
    expect(Object.keys(errors).length).toBeGreaterThan(0);
    for (const messages of Object.values(errors)) {
      expect(Array.isArray(messages) && messages.length > 0).toBe(true);
      for (const message of messages as unknown[]) expect(typeof message).toBe('string');
    }
  }
}

/** POST /api/readmodel: the query's answer, the spec's 404 listing, or a problem. */
export function expectReadModelAnswer(res: Response): void {
  expectNoServerError(res);
  if (res.status === 200) {
    const body = bodyOf(res);
    expect(body.queryType).toEqual(expect.any(String));
    expect(body.totalCount).toEqual(expect.any(Number));
    // CurrentUser answers `data` and `skip` (spec 4.3); every other query `results`.
    if ('data' in body) expect(body).toMatchObject({ data: expect.any(Array), skip: expect.any(Number) });
    else expect(body.results).toEqual(expect.any(Array));
    return;
  }
  if (res.status === 404 && !/problem\+json/.test(String(res.headers['content-type']))) {
    expect(res.body).toEqual({ queryType: expect.any(String), results: [], totalCount: 0 });
    return;
  }
  expectProblem(res);
}

const COMMAND_ERROR_CODES: Readonly<Record<number, readonly string[]>> = {
  400: ['COMMAND_VALIDATION_ERROR', 'UNKNOWN_COMMAND_TYPE'],
  403: ['COMMAND_FORBIDDEN'],
  409: ['CONCURRENCY_CONFLICT', 'DUPLICATE_REQUEST_ID'],
};
const COMMAND_MEMBERS = new Set([
  'requestId',
  'success',
  'eventCount',
  'errorMessage',
  'errorCode',
  'commandType',
  // The service's addition: the aggregate's version, on every success (ADR 0019).
  'version',
]);

/**
 * POST /api/command: the spec's 2.6 body for everything the route answers; a problem only for
 * what happens before it (401, a body the JSON parser refuses, 413).
 */
export function expectCommandAnswer(res: Response): void {
  expectNoServerError(res);
  if (/problem\+json/.test(String(res.headers['content-type']))) {
    expect([400, 401, 413]).toContain(res.status);
    expectProblem(res);
    return;
  }
  const body = bodyOf(res);
  expect(Object.keys(body).filter((key) => !COMMAND_MEMBERS.has(key))).toEqual([]);
  if (body.requestId !== null) expect(body.requestId).toMatch(LOWER_GUID);
  if (body.commandType !== null) expect(typeof body.commandType).toBe('string');
  if (res.status === 200) {
    expect(body).toMatchObject({
      success: true,
      eventCount: expect.any(Number),
      version: expect.any(Number),
    });
    expect(body).not.toHaveProperty('errorCode');
    return;
  }
  expect(body).toMatchObject({ success: false, eventCount: 0, errorMessage: expect.any(String) });
  expect(body).not.toHaveProperty('version');
  expect(COMMAND_ERROR_CODES[res.status] ?? []).toContain(body.errorCode);
}

const IMPORT_STATUSES = ['Pending', 'Completed', 'Failed'];
const IMPORT_PRIORITIES = ['Normal', 'High'];

/**
 * POST /api/import: the spec's 2.7 body (200, and 400 for an unknown importer), an empty 401, or
 * a validation problem.
 */
export function expectImportAnswer(res: Response): void {
  expectNoServerError(res);
  if (res.status === 401) {
    expect(res.text).toBe('');
    return;
  }
  if (/problem\+json/.test(String(res.headers['content-type']))) {
    expect([400, 413]).toContain(res.status);
    expectProblem(res);
    return;
  }
  const body = bodyOf(res);
  expect(body.requestId).toMatch(LOWER_GUID);
  expect(body.importJobId).toMatch(LOWER_GUID);
  expect(IMPORT_STATUSES).toContain(body.status);
  expect(IMPORT_PRIORITIES).toContain(body.priority);
  expect(body).toMatchObject({
    importerType: expect.any(String),
    message: expect.any(String),
    processedSynchronously: expect.any(Boolean),
  });
  if (res.status === 400) {
    const message = `Unknown importer type: ${String(body.importerType)}`;
    expect(body).toMatchObject({
      importJobId: EMPTY_GUID,
      status: 'Failed',
      message,
      errorMessage: message,
      errorCode: 'UNKNOWN_IMPORTER_TYPE',
    });
    return;
  }
  expect(res.status).toBe(200);
  if (body.status === 'Failed') expect(body).toMatchObject({ success: false, errorCode: expect.any(String) });
}

const OAUTH_ERRORS: Readonly<Record<number, readonly string[]>> = {
  400: ['invalid_request', 'invalid_grant', 'unsupported_grant_type'],
  401: ['invalid_client'],
};

/** POST /api/auth/token: a token, an RFC 6749 error, a 429 problem, or a problem for an unreadable body. */
export function expectTokenAnswer(res: Response): void {
  expectNoServerError(res);
  if (/problem\+json/.test(String(res.headers['content-type']))) {
    expect([400, 413, 429]).toContain(res.status);
    expectProblem(res);
    return;
  }
  const body = bodyOf(res);
  if (res.status === 200) {
    expect(body).toEqual({
      access_token: expect.any(String),
      token_type: 'Bearer',
      expires_in: expect.any(Number),
    });
    return;
  }
  expect(OAUTH_ERRORS[res.status] ?? []).toContain(body.error);
  expect(body.error_description).toEqual(expect.any(String));
  if (res.status === 401) expect(res.headers['www-authenticate']).toMatch(/^Basic /);
}
