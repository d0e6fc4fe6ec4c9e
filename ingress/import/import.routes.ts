import type { RequestHandler } from 'express';
import Joi from 'joi';

import type { CoreServices } from '../../shared/composition';
import type { Config } from '../../shared/config';
import { validationError } from '../../shared/errors';
import {
  IMPORT_PRIORITIES,
  importDataSchema,
  type Importer,
  type ImportPriority,
} from '../../shared/importers/importer';
import { processImport } from '../../shared/importers/import-processor';
import { importJobIdFor, type ImportJobData, type ImportQueue } from '../../shared/importers/import-queue';
import type { ImportRecord, ImportResults } from '../../shared/importers/import-results';
import type { Logger } from '../../shared/logger';
import { IMPORTERS } from '../../shared/importers/registry';
import { GUID_FORMAT_MESSAGE, guid, isGuid, validate } from '../../shared/validation';
import { authenticate } from '../auth/authenticate';
import type { Authentication } from '../auth/passport';
import type { RouteTable } from '../http/route-table';
import { EMPTY_GUID, responseFromRecord, unknownImporterMessage } from './import-response';
import { authenticatedPrincipal } from '../auth/principal';
import { jsonObjectBody } from '../http/json-body';
import type { Metrics } from '../../shared/metrics/metrics';
import { labelOperation } from '../metrics/http-metrics';

/** Long enough for any inline import; released as soon as it ends. */
const INLINE_CLAIM_TTL_MS = 10 * 60 * 1000;

/** Every import's envelope; `importData` is the importer's own schema. */
const envelopeSchema = Joi.object({
  // Checked before the envelope, to answer the spec's own message (section 7, rule 1).
  requestId: guid().required().description('A fresh GUID per import; resending it answers the same job.'),
  importerType: Joi.string().max(100).required(),
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
  return envelopeSchema.keys({
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

export interface ImportRouteDeps {
  readonly logger: Logger;
  readonly authentication: Authentication;
  readonly services: CoreServices;
  readonly importQueue: ImportQueue;
  readonly importResults: ImportResults;
  readonly config: Config;
  readonly metrics: Metrics;
}

/**
 * POST /api/import: authenticate (401 with an empty body), validate, then run inline (High on an
 * idle queue), or enqueue. The same requestId always answers the same job.
 */
export function registerImportRoutes(routes: RouteTable, deps: ImportRouteDeps): void {
  const { services, importQueue, importResults, config, logger } = deps;

  const handle: RequestHandler = async (req, res) => {
    const principal = authenticatedPrincipal(req);
    const body = jsonObjectBody(req);

    // 1. Validate: requestId, the envelope, the importer, its data.
    if (!isGuid(body.requestId)) throw validationError({ RequestId: [GUID_FORMAT_MESSAGE] });
    const requestId = body.requestId.toLowerCase();
    const envelope = validate(envelopeSchema, body) as Envelope;
    const importer = IMPORTERS.get(envelope.importerType);
    if (!importer) {
      const message = unknownImporterMessage(envelope.importerType);
      res.status(400).json({
        requestId,
        importJobId: EMPTY_GUID,
        status: 'Failed',
        priority: envelope.priority,
        importerType: envelope.importerType,
        message,
        processedSynchronously: false,
        errorMessage: message,
        errorCode: 'UNKNOWN_IMPORTER_TYPE',
      });
      return;
    }
    const importData = validate(
      importDataSchema(importer, config.imports.maxRows),
      { importData: envelope.importData }.importData,
    );
    const importJobId = importJobIdFor(requestId);

    // 2. A dry run checks everything and changes nothing.
    if (envelope.dryRun) {
      const actor = { userId: principal.userId, email: principal.email, roles: principal.roles };
      const outcome = await importer.run(
        importData,
        { actor, importJobId, requestId, dryRun: true, concurrency: 1, onProgress: () => undefined },
        services,
      );
      res.json({
        requestId,
        importJobId,
        priority: envelope.priority,
        importerType: importer.importerType,
        processedSynchronously: true,
        ...outcome,
      });
      return;
    }

    // 3. One record per requestId: a resent request answers the job it already made.
    const job: ImportJobData = {
      importJobId,
      requestId,
      importerType: importer.importerType,
      priority: envelope.priority,
      submitterUserId: principal.userId,
      importData,
    };
    let release = envelope.priority === 'High' ? await importQueue.claimInline(INLINE_CLAIM_TTL_MS) : null;
    try {
      const message = release
        ? 'Import is being processed synchronously'
        : `Import job queued with ${envelope.priority} priority${envelope.priority === 'High' ? ' (the import queue is busy)' : ''}`;
      const { record, created } = await importResults.createPending(
        { ...job, message, processedSynchronously: release !== null, total: importer.rowCount(importData) },
        new Date(),
      );
      if (!created) {
        // A Pending record may have no job behind it: an inline run whose ingress died, or a queued
        // one whose enqueue failed with Redis (and the record's discard with it). Queue it again;
        // BullMQ ignores an add whose job id it holds, so a job already queued or running stays one.
        if (
          record.status === 'Pending' &&
          (!record.processedSynchronously || !(await importQueue.inlineRunning()))
        ) {
          await importQueue.enqueue(job);
        }
        res.json(responseFromRecord(record));
        return;
      }
      // 4. Inline on an idle queue; otherwise the workers take it.
      if (release) {
        let finished: ImportRecord;
        try {
          finished = await processImport(job, services, importResults, config, {
            onFinished: (record) => deps.metrics.recordImport('inline', record),
          });
        } catch (error) {
          // Failed part-way (Redis went away): the record stays Pending and nobody would finish it,
          // nor free the inline claim, until a resend after the claim lapsed. The workers take it
          // over as soon as Redis allows; the caller gets this error (a 503) meanwhile.
          const handOver = release;
          release = null;
          void importQueue.handOver(job, handOver).then((handedOver) =>
            handedOver
              ? logger.info('inline import handed to the workers', { importJobId })
              : logger.warn('inline import not handed to the workers; a resend will queue it', {
                  importJobId,
                }),
          );
          throw error;
        }
        res.json(responseFromRecord(finished));
        return;
      }
      try {
        await importQueue.enqueue(job);
      } catch (error) {
        await importResults.discard(importJobId).catch(() => undefined); // so a resend can try again
        throw error;
      }
      res.json(responseFromRecord(record));
    } finally {
      await release?.();
    }
  };

  routes.add(
    'post',
    '/api/import',
    labelOperation(['importerType'], (importerType) => IMPORTERS.has(importerType)),
    authenticate(deps.authentication, 'empty'),
    handle,
  );
}
