import type { RequestHandler } from 'express';
import helmet from 'helmet';

import { headersSetBy, JSON_ANSWER_HEADERS } from '../../ingress/http/security-headers';

describe('the JSON answers’ security headers, read once from helmet', () => {
  it('When helmet’s API set is recorded, then every header it sets (and the X-Powered-By it removes) is in the list', () => {
    const names = JSON_ANSWER_HEADERS.map(([name]) => name);

    expect(names).toEqual(
      expect.arrayContaining([
        'Cache-Control',
        'Content-Security-Policy',
        'Referrer-Policy',
        'Strict-Transport-Security',
        'X-Content-Type-Options',
        'X-Frame-Options',
      ]),
    );
    expect(JSON_ANSWER_HEADERS).toContainEqual(['X-Powered-By', undefined]);
    expect(Object.isFrozen(JSON_ANSWER_HEADERS)).toBe(true);
  });

  it('When a middleware’s headers depend on the request, then recording it fails instead of freezing one answer’s headers', () => {
    const readsTheRequest: RequestHandler = (req, res, next) => {
      res.setHeader('X-Path', req.path);
      next();
    };
    const withNonce = helmet({
      contentSecurityPolicy: {
        directives: {
          scriptSrc: [
            (_req, res) => `'nonce-${(res as unknown as { locals: { nonce: string } }).locals.nonce}'`,
          ],
        },
      },
    });

    expect(() => headersSetBy(readsTheRequest)).toThrow(/reads the request/);
    expect(() => headersSetBy(withNonce as RequestHandler)).toThrow(/reads the response \(locals\)/);
  });

  it('When a middleware does not go on at once, then recording it fails', () => {
    const later: RequestHandler = (_req, _res, next) => {
      setImmediate(next);
    };

    expect(() => headersSetBy(later)).toThrow(/did not go on at once/);
  });
});
