import request from 'supertest';

import { BULL_BOARD_PATH } from '../../../ingress/admin/bull-board';
import { repositoryDocument } from '../../../ingress/contract';
import { DOCS_PATH, OPENAPI_PATH } from '../../../ingress/openapi/openapi.contract';
import { withExampleImportJobId } from '../../../ingress/openapi/openapi.routes';
import { EXAMPLE_IDS } from '../../../ingress/openapi/spec-examples';
import type { RouteTable } from '../../../shared/http/route-table';
import { createTestApp, type TestApp } from '../../helpers/app-fixture';

describe('The OpenAPI document and Swagger UI, served', () => {
  let subject: TestApp;
  let routes: RouteTable | undefined;

  beforeAll(async () => {
    // No METRICS_TOKEN: /metrics is still a route (answering 404 with the reason), as documented.
    subject = await createTestApp({}, { extraRoutes: (table) => (routes = table) });
  });
  afterAll(() => subject.close());

  it('When GET /api/openapi.json is asked without credentials, then it answers the generated document (a sandbox naming its own seeded import job)', async () => {
    const res = await request(subject.app).get(OPENAPI_PATH).expect(200);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    const { sandboxImportJobId } = subject.services;
    expect(res.body).toEqual(
      JSON.parse(JSON.stringify(withExampleImportJobId(repositoryDocument(), sandboxImportJobId))),
    );
    // Only the import job's id differs from the committed document, and only on a sandbox start.
    if (sandboxImportJobId !== undefined)
      expect(JSON.stringify(res.body)).not.toContain(EXAMPLE_IDS.importJob);
  });

  it('When GET /api/docs is asked, then Swagger UI loads from local assets with no inline script', async () => {
    const page = await request(subject.app).get(DOCS_PATH).expect(200);
    expect(page.headers['content-type']).toMatch(/^text\/html/);
    const scripts = [...page.text.matchAll(/<script([^>]*)>([^<]*)<\/script>/g)];
    expect(scripts.map(([, attributes]) => attributes)).toEqual([
      ' src="docs/swagger-ui-bundle.js"',
      ' src="docs/swagger-initializer.js"',
    ]);
    expect(scripts.every(([, , body]) => body === '')).toBe(true);
    expect(page.text).not.toMatch(/https?:\/\//);

    const bundle = await request(subject.app).get(`${DOCS_PATH}/swagger-ui-bundle.js`).expect(200);
    expect(bundle.headers['content-type']).toMatch(/^text\/javascript/);
    await request(subject.app)
      .get(`${DOCS_PATH}/swagger-ui.css`)
      .expect('Content-Type', /text\/css/)
      .expect(200);
    const initializer = await request(subject.app).get(`${DOCS_PATH}/swagger-initializer.js`).expect(200);
    expect(initializer.text).toContain("new URL('../openapi.json', document.currentScript.src)");
    expect(initializer.text).toContain('validatorUrl: null');
  });

  it('When a file of swagger-ui-dist that the page does not load is asked, then 404; /api/docs/ redirects to /api/docs', async () => {
    await request(subject.app).get(`${DOCS_PATH}/package.json`).expect(404);
    await request(subject.app).get(`${DOCS_PATH}/../../package.json`).expect(404);
    const slash = await request(subject.app).get(`${DOCS_PATH}/`).expect(301);
    expect(slash.headers.location).toBe('../docs');
  });

  it('When the route table is compared with the document, then every route is documented and every path is served', () => {
    const document = repositoryDocument();
    const served = new Map(routes?.registered() ?? []);
    expect(served.size).toBeGreaterThan(5);
    const undocumented: string[] = [];
    for (const [path, methods] of served) {
      if (path.startsWith(`${DOCS_PATH}/`)) continue; // the page's own assets, not API operations
      for (const method of methods) {
        if (method === 'HEAD') continue;
        if (!document.paths[path]?.[method.toLowerCase() as 'get' | 'post'])
          undocumented.push(`${method} ${path}`);
      }
    }
    expect(undocumented).toEqual([]);
    const documentedButNotServed = Object.keys(document.paths).filter(
      (path) => !served.has(path) && path !== BULL_BOARD_PATH,
    );
    expect(documentedButNotServed).toEqual([]);
  });
});
