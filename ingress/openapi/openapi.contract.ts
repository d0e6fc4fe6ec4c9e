import { type OperationContract, PUBLIC } from './contract-kit';

/** Where the document and its browser are served. */
export const OPENAPI_PATH = '/api/openapi.json';
export const DOCS_PATH = '/api/docs';

/** GET /api/openapi.json. */
export const DOCUMENT_CONTRACT: OperationContract = {
  path: OPENAPI_PATH,
  method: 'get',
  operation: ({ answers }) => ({
    operationId: 'openApiDocument',
    summary: 'This OpenAPI 3.1 document',
    tags: ['Documentation'],
    security: PUBLIC,
    responses: {
      '200': answers.json('The document.', { type: 'object', required: ['openapi', 'info', 'paths'] }),
      ...answers.serverFailure(),
    },
  }),
};

/** GET /api/docs. */
export const DOCS_CONTRACT: OperationContract = {
  path: DOCS_PATH,
  method: 'get',
  operation: ({ answers }) => ({
    operationId: 'apiDocs',
    summary: 'Swagger UI over this document (assets served locally)',
    tags: ['Documentation'],
    security: PUBLIC,
    responses: {
      '200': answers.text('The Swagger UI page.', 'text/html'),
      ...answers.serverFailure(),
    },
  }),
};
