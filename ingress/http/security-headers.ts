import type { IncomingMessage, ServerResponse } from 'node:http';

import type { RequestHandler } from 'express';
import helmet from 'helmet';

/**
 * What a JSON answer needs, per OWASP's REST Security Cheat Sheet ("Security Headers"): no
 * content may load or be framed (`default-src 'none'; frame-ancestors 'none'`, X-Frame-Options
 * DENY), no sniffing, no referrer, HSTS, and no caching of what an authenticated caller was told.
 * The rest of helmet's defaults (cross-origin isolation, DNS prefetch, download and XSS-auditor
 * switches) govern how a browser renders a page; on a JSON answer they are bytes and CPU only.
 */
const forJsonAnswers = helmet({
  contentSecurityPolicy: {
    useDefaults: false,
    directives: { defaultSrc: ["'none'"], frameAncestors: ["'none'"] },
  },
  xFrameOptions: { action: 'deny' },
  crossOriginOpenerPolicy: false,
  crossOriginResourcePolicy: false,
  originAgentCluster: false,
  xDnsPrefetchControl: false,
  xDownloadOptions: false,
  xPermittedCrossDomainPolicies: false,
  xXssProtection: false,
});

/** helmet's defaults: a same-origin CSP (the pages load only their own scripts), frame denial, etc. */
const forPages = helmet();

/** A header an answer gets, as [name, value]; the value undefined for a header it must not have. */
export type HeaderLine = readonly [name: string, value: string | undefined];

/**
 * The headers `middleware` sets on an answer, read by running it once on a response that only
 * records them: helmet stays the one source of the API set, and JSON answers replay the list
 * instead of running helmet each time (ADR 0022). Only for headers that are the same on every
 * answer: a middleware that reads the request, calls next with an error or not at once is refused
 * here, so such a helmet option fails at start-up instead of being frozen silently. A header it
 * removes (X-Powered-By) is listed with the value undefined.
 */
export function headersSetBy(middleware: RequestHandler): readonly HeaderLine[] {
  const lines: HeaderLine[] = [];
  const varies = (what: string, property: string | symbol) => {
    throw new Error(`the middleware reads the ${what} (${String(property)}): its headers may vary`);
  };
  const recording = {
    setHeader: (name: string, value: unknown) => {
      if (typeof value !== 'string') throw new Error(`header ${name} is not a plain string`);
      lines.push([name, value]);
    },
    removeHeader: (name: string) => {
      lines.push([name, undefined]);
    },
  };
  const response = new Proxy(recording, {
    get: (target, property) =>
      property === 'setHeader' || property === 'removeHeader'
        ? target[property]
        : varies('response', property),
  });
  const request = new Proxy({}, { get: (_target, property) => varies('request', property) });
  let nextCalled = false;
  void middleware(
    request as IncomingMessage as Parameters<RequestHandler>[0],
    response as unknown as ServerResponse as Parameters<RequestHandler>[1],
    (error?: unknown) => {
      if (error !== undefined) throw error instanceof Error ? error : new Error('the middleware failed');
      nextCalled = true;
    },
  );
  if (!nextCalled) throw new Error('the middleware did not go on at once: its headers are not a fixed list');
  return Object.freeze(lines.map((line) => Object.freeze(line)));
}

/** Every JSON answer's security headers: the refusal to be cached, then helmet's API set. */
export const JSON_ANSWER_HEADERS: readonly HeaderLine[] = Object.freeze([
  // Answers depend on the caller's credentials.
  Object.freeze(['Cache-Control', 'no-store'] as const),
  ...headersSetBy(forJsonAnswers),
]);

/**
 * Security headers on every answer: helmet's defaults on the HTML pages (the API docs, the Bull
 * Board), the API set above on everything else (JSON answers, problems, health). Caching is
 * refused on the latter too: answers depend on the caller's credentials.
 */
export function securityHeaders(pagePaths: readonly string[]): RequestHandler {
  const underPages = pagePaths.map((page) => `${page}/`);
  return (req, res, next) => {
    const path = req.path;
    if (pagePaths.includes(path) || underPages.some((prefix) => path.startsWith(prefix))) {
      forPages(req, res, next);
      return;
    }
    for (const [name, value] of JSON_ANSWER_HEADERS) {
      if (value === undefined) res.removeHeader(name);
      else res.setHeader(name, value);
    }
    next();
  };
}
