import path from 'node:path';

import type { RequestHandler } from 'express';

import type { RouteTable } from '../../shared/http/route-table';
import { DOCS_PATH, OPENAPI_PATH } from './openapi.contract';
import type { OpenApiDocument } from './openapi-document';
import { EXAMPLE_IDS } from './spec-examples';

/** swagger-ui-dist's folder: Swagger UI is served from the package, never from a CDN. */
const SWAGGER_UI_DIR = path.dirname(require.resolve('swagger-ui-dist/package.json'));

/** The files of swagger-ui-dist the page loads; nothing else of the package is reachable. */
const SWAGGER_UI_ASSETS: Readonly<Record<string, string>> = {
  'swagger-ui.css': 'text/css; charset=utf-8',
  'index.css': 'text/css; charset=utf-8',
  'swagger-ui-bundle.js': 'text/javascript; charset=utf-8',
  'favicon-32x32.png': 'image/png',
  'favicon-16x16.png': 'image/png',
};

/**
 * The page: no inline script (the initializer is a file of its own), so a Content-Security-Policy
 * needs no 'unsafe-inline' for scripts. Asset paths are relative (`docs/...` from `/api/docs`), so
 * the page works behind a reverse proxy that mounts the service under a path prefix.
 */
const PAGE = `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8" />
    <title>Fantasy team service API</title>
    <link rel="stylesheet" href="docs/swagger-ui.css" />
    <link rel="stylesheet" href="docs/index.css" />
    <link rel="icon" type="image/png" href="docs/favicon-32x32.png" sizes="32x32" />
  </head>
  <body>
    <div id="swagger-ui"></div>
    <script src="docs/swagger-ui-bundle.js"></script>
    <script src="docs/swagger-initializer.js"></script>
  </body>
</html>
`;

/**
 * Starts Swagger UI on the document next to it (`../openapi.json` from this script's own URL).
 * validatorUrl null: Swagger UI would otherwise send the document to an online validator.
 */
const INITIALIZER = `'use strict';
(function () {
  var documentUrl = new URL('../openapi.json', document.currentScript.src).href;
  window.addEventListener('load', function () {
    window.ui = SwaggerUIBundle({
      url: documentUrl,
      dom_id: '#swagger-ui',
      deepLinking: true,
      layout: 'BaseLayout',
      validatorUrl: null,
      docExpansion: 'list',
      defaultModelsExpandDepth: 0,
      displayRequestDuration: true,
      tryItOutEnabled: false,
    });
  });
})();
`;

/**
 * The document with its examples' import job id replaced by `importJobId` (a sandbox's seeded job,
 * see sandboxExampleImportJobId), or as it is when there is none.
 */
export function withExampleImportJobId(
  document: OpenApiDocument,
  importJobId: string | undefined,
): OpenApiDocument {
  if (importJobId === undefined) return document;
  return JSON.parse(
    JSON.stringify(document).replaceAll(EXAMPLE_IDS.importJob, importJobId),
  ) as OpenApiDocument;
}

/**
 * GET /api/openapi.json (the document, no authentication) and GET /api/docs (Swagger UI over it,
 * from local assets). The document is serialised once: it is fixed for the life of the process.
 */
export function registerOpenApiRoutes(routes: RouteTable, document: OpenApiDocument): void {
  const documentJson = JSON.stringify(document);

  routes.add('get', OPENAPI_PATH, (_req, res) => {
    res.type('application/json; charset=utf-8').send(documentJson);
  });

  routes.add('get', DOCS_PATH, (req, res) => {
    // `/api/docs/` would resolve the page's relative asset paths one level too deep.
    if (req.path.endsWith('/')) {
      res.redirect(301, '../docs');
      return;
    }
    res.type('text/html; charset=utf-8').send(PAGE);
  });

  routes.add('get', `${DOCS_PATH}/swagger-initializer.js`, (_req, res) => {
    res.type('text/javascript; charset=utf-8').send(INITIALIZER);
  });

  const asset: RequestHandler = (req, res, next) => {
    const name = String(req.params.asset);
    const contentType = SWAGGER_UI_ASSETS[name];
    if (!contentType) {
      next();
      return;
    }
    res.sendFile(name, { root: SWAGGER_UI_DIR, maxAge: '1h', headers: { 'Content-Type': contentType } });
  };
  routes.add('get', `${DOCS_PATH}/:asset`, asset);
}
