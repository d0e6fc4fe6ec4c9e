import type { JsonValueBounds } from '../../shared/http/request-body';

/**
 * What one import row may hold, in the raw-byte scan's terms: the largest row of any importer
 * with room to spare. The largest is a PlayerSeeding player with all its fields, 20 fantasy
 * positions and a breakdown of 12 rounds: 16 objects and arrays (the row, its stats, the positions,
 * the breakdown and one object a round) and about 113 keys and values. A player with a longer
 * breakdown fits too, in an import of fewer rows (the bounds are for the whole body).
 */
export const IMPORT_ROW_BOUNDS = {
  maxContainers: 16,
  maxItems: 128,
  // A player's ten names and ids, when each is short and unlike any other row's, with room.
  maxDistinctShortStrings: 12,
} as const satisfies JsonValueBounds;

/**
 * Different keys in a whole import body: every importer's fields (under a hundred) and a
 * breakdown's round numbers ("0" to "999"), with room. A body past it holds keys no importer reads.
 */
const IMPORT_DISTINCT_KEYS = 2_048;

/** The envelope around the rows: importerType, requestId, priority, dryRun, the importer's options. */
const ENVELOPE_BOUNDS = {
  maxContainers: 64,
  maxItems: 256,
  maxDistinctShortStrings: 256,
} as const satisfies JsonValueBounds;

/**
 * The bounds of a `POST /api/import` body: IMPORT_MAX_ROWS of the largest row, and the envelope.
 * With the defaults (10,000 rows) a body past them is refused in the scan, before JSON.parse
 * would build it: the largest body they let through costs JSON.parse under 100 ms and 64 MB
 * (bench/RESULTS.md, issue 38), where 16 MB of empty objects took 1.7 s and 500 MB.
 */
export function importBodyBounds(maxRows: number): Required<JsonValueBounds> {
  return {
    maxContainers: maxRows * IMPORT_ROW_BOUNDS.maxContainers + ENVELOPE_BOUNDS.maxContainers,
    maxItems: maxRows * IMPORT_ROW_BOUNDS.maxItems + ENVELOPE_BOUNDS.maxItems,
    maxDistinctKeys: IMPORT_DISTINCT_KEYS,
    maxDistinctShortStrings:
      maxRows * IMPORT_ROW_BOUNDS.maxDistinctShortStrings + ENVELOPE_BOUNDS.maxDistinctShortStrings,
  };
}
