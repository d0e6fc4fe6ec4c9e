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
    res.setHeader('Cache-Control', 'no-store');
    forJsonAnswers(req, res, next);
  };
}
