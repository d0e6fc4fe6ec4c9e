import Joi from 'joi';

import { validationError } from '../../shared/errors';
import {
  IMPORT_PRIORITIES,
  importDataSchema,
  type Importer,
  type ImportPriority,
} from '../../shared/importers/importer';
import { IMPORTERS } from '../../shared/importers/registry';
import { hasAnyRole } from '../../shared/roles';
import { guid, GUID_FORMAT_MESSAGE, isGuid, text, validate } from '../../shared/validation';
import type { ImportSubmission } from './submit-import';

/** Every import's envelope; `importData` is the importer's own schema. */
export const importEnvelopeSchema = Joi.object({
  // Checked before the envelope, to answer the spec's own message (section 7, rule 1).
  requestId: guid().required().description('A fresh GUID per import; resending it answers the same job.'),
  importerType: text({ max: 100 }).required(),
  priority: Joi.string()
    .valid(...IMPORT_PRIORITIES)
    .default('Normal')
    .description('Normal is queued; High runs inline when the queue is idle, else it is queued too.'),
  importData: Joi.object().required(),
  dryRun: Joi.boolean()
    .strict()
    .default(false)
    .description('Checks everything and changes nothing; the answer says what a real run would do.'),
});

/**
 * The whole request body of one importer: the envelope with its importerType fixed and the
 * importer's schema (for `maxRows`) as `importData`, as the OpenAPI document shows it. The route
 * validates the same parts one after the other, to answer an unknown importer in the spec's shape.
 */
export function importRequestSchema(importer: Importer, maxRows: number): Joi.ObjectSchema {
  return importEnvelopeSchema.keys({
    importerType: Joi.string().valid(importer.importerType).required(),
    importData: importDataSchema(importer, maxRows).required(),
  });
}

interface Envelope {
  readonly importerType: string;
  readonly priority: ImportPriority;
  readonly importData: Record<string, unknown>;
  readonly dryRun: boolean;
}

/** A body that is an import, or one naming no importer (answered in the spec's import shape). */
export type ParsedImportRequest =
  | { readonly kind: 'submission'; readonly submission: ImportSubmission }
  | {
      readonly kind: 'unknown-importer';
      readonly requestId: string;
      readonly importerType: string;
      readonly priority: ImportPriority;
    };

/**
 * Validates an import body in the spec's order: the requestId (a GUID, lower-cased), the envelope,
 * the importer, its data (at most `maxRows` rows). Anything else invalid throws the 400 problem.
 *
 * The data of a submitter without the importer's roles is not validated: the import is accepted
 * and fails while processing, at its first row (spec 5 rule 4), so checking its rows is wasted
 * work. It is refused from the data as received (Importer.refuseWithoutRole); such a caller learns
 * nothing of the row schema either.
 */
export function parseImportRequest(
  body: Record<string, unknown>,
  maxRows: number,
  submitterRoles: readonly string[],
): ParsedImportRequest {
  if (!isGuid(body.requestId)) throw validationError({ RequestId: [GUID_FORMAT_MESSAGE] });
  const requestId = body.requestId.toLowerCase();
  const { importerType, priority, importData, dryRun } = validate(importEnvelopeSchema, body) as Envelope;
  const importer = IMPORTERS.get(importerType);
  if (!importer) return { kind: 'unknown-importer', requestId, importerType, priority };
  const data: unknown = hasAnyRole(submitterRoles, importer.requiredRoles)
    ? validate(importDataSchema(importer, maxRows), importData)
    : importData;
  return { kind: 'submission', submission: { requestId, importer, priority, importData: data, dryRun } };
}
