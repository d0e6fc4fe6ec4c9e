import request from 'supertest';

import { type Exchange, responseContract } from './openapi-contract';

/**
 * Makes the whole integration suite a contract test: every response a test receives through
 * supertest is checked against the OpenAPI document before the test sees it, and one that does
 * not conform fails that test (its request rejects with the reasons). Paths and methods the
 * document does not list (a test's extraRoutes, Bull Board's assets) and a test's own query types
 * are skipped. Runs in every test file (jest setupFilesAfterEnv).
 */
interface SupertestInternals {
  method: string;
  url: string;
  _data?: unknown;
}

interface ReceivedResponse {
  status: number;
  headers: Record<string, string | undefined>;
  body: unknown;
  text?: string;
}

type AssertFn = (
  this: SupertestInternals,
  error: unknown,
  res: ReceivedResponse | undefined,
  fn: unknown,
) => void;

const prototype = request.Test.prototype as unknown as { assert: AssertFn };
const originalAssert = prototype.assert;

function exchangeOf(test: SupertestInternals, res: ReceivedResponse): Exchange {
  let requestBody = test._data;
  if (typeof requestBody === 'string') {
    try {
      requestBody = JSON.parse(requestBody) as unknown;
    } catch {
      // Not JSON (a form, or deliberately malformed): no queryType to read.
    }
  }
  return {
    method: test.method,
    path: new URL(test.url).pathname,
    requestBody,
    status: res.status,
    contentType: res.headers['content-type'],
    body: res.body,
    text: res.text ?? '',
  };
}

prototype.assert = function assertConformsToContract(error, res, fn) {
  if (res && typeof fn === 'function') {
    const verdict = responseContract().check(exchangeOf(this, res));
    if (verdict.kind === 'violates') {
      const failure = new Error(`OpenAPI contract: ${verdict.problems.join('\n')}`);
      (fn as (error: Error, res: ReceivedResponse) => void).call(this, failure, res);
      return;
    }
  }
  originalAssert.call(this, error, res, fn);
};
