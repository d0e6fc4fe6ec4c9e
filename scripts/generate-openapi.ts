import { writeFileSync } from 'node:fs';
import path from 'node:path';

import { repositoryDocument } from '../ingress/contract';
import { COMMITTED_DOCUMENT_PATH, documentText } from '../ingress/openapi/openapi-document';

/**
 * `npm run openapi`: writes the OpenAPI document generated from the joi schemas and registries
 * to docs/openapi.json. Commit the result; a test fails while the committed file differs.
 */
const target = path.resolve(__dirname, '..', COMMITTED_DOCUMENT_PATH);
writeFileSync(target, documentText(repositoryDocument()));
process.stdout.write(`wrote ${path.relative(process.cwd(), target)}\n`);
