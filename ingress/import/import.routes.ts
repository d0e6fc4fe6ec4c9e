import type { RequestHandler } from 'express';

import type { Config } from '../../shared/config';
import { jsonBody } from '../../shared/http/request-body';
import type { RouteTable } from '../../shared/http/route-table';
import { IMPORTERS } from '../../shared/importers/registry';
import { authenticate } from '../auth/authenticate';
import type { Authentication } from '../auth/passport';
import { authenticatedPrincipal } from '../auth/principal';
import { jsonObjectBody } from '../http/json-body';
import { labelOperation } from '../metrics/http-metrics';
import { importBodyBounds } from './import-body-bounds';
import type { ImportByteLimit } from './import-byte-limit';
import { parseImportRequest } from './import-request';
import { type ImportAnswer, importAnswer, unknownImporterAnswer } from './import-response';
import { submitImport, type SubmitImportServices } from './submit-import';

/** Where imports are submitted. */
export const IMPORT_PATH = '/api/import';

export interface ImportRouteDeps extends SubmitImportServices {
  readonly authentication: Authentication;
  readonly config: Config;
  /** IMPORT_BYTES_PER_ACCOUNT_PER_MINUTE, charged before the body is read (a chunked one settled after). */
  readonly importByteLimit: ImportByteLimit;
}

/**
 * POST /api/import: authenticate (401 with an empty body), charge the account's import bytes
 * (IMPORT_BYTES_PER_ACCOUNT_PER_MINUTE, before the body is read), validate, submit (submitImport: run
 * inline when High on an idle queue, else enqueue; the same requestId from the same account always
 * answers the same job), and answer in the spec's 2.7 shape.
 */
export function registerImportRoutes(routes: RouteTable, deps: ImportRouteDeps): void {
  const handle: RequestHandler = async (req, res) => {
    const principal = authenticatedPrincipal(req);
    const parsed = parseImportRequest(jsonObjectBody(req), deps.config.imports.maxRows, principal.roles);
    let answer: ImportAnswer;
    if (parsed.kind === 'unknown-importer') answer = unknownImporterAnswer(parsed);
    else {
      const { userId, email, roles, securityStamp } = principal;
      const outcome = await submitImport(deps, { userId, email, roles, securityStamp }, parsed.submission);
      answer = importAnswer(outcome, parsed.submission);
    }
    res.status(answer.status).json(answer.body);
  };

  routes.add(
    'post',
    IMPORT_PATH,
    labelOperation(['importerType'], (importerType) => IMPORTERS.has(importerType)),
    authenticate(deps.authentication, 'empty'),
    deps.importByteLimit.charge(
      deps.config.importBodyLimitBytes,
      jsonBody(deps.config.importBodyLimitBytes, importBodyBounds(deps.config.imports.maxRows)),
    ),
    handle,
  );
}
