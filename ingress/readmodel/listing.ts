import { closedObject, type JsonSchema } from '../http/json-schema';
import type { QueryAnswer } from './query-definition';

/** The spec's "404 listing" (4.1 rule 2): status 404, no results, totalCount 0. */
export function notFoundListing(extra: Record<string, unknown> = {}): QueryAnswer {
  return { status: 404, body: { results: [], totalCount: 0, ...extra } };
}

const TOTAL_COUNT: JsonSchema = { type: 'integer', minimum: 0 };

/** The JSON Schema of the spec's standard answer: `results` of `item`, `totalCount`, and `extra`. */
export function listingSchema(
  title: string,
  item: JsonSchema,
  extra: Readonly<Record<string, JsonSchema>> = {},
): JsonSchema {
  return closedObject({ results: { type: 'array', items: item }, totalCount: TOTAL_COUNT, ...extra }, [], {
    title,
  });
}

/** The JSON Schema of notFoundListing()'s body (the route adds `queryType`). */
export const NOT_FOUND_LISTING_SCHEMA: JsonSchema = closedObject(
  {
    // `items` although there are none: generators skip an array schema without it.
    results: { type: 'array', items: { type: 'object' }, maxItems: 0 },
    totalCount: { const: 0 },
  },
  [],
  {
    title: 'NotFoundListing',
    description: "The spec's 404 listing (4.1 rule 2): the item is missing or not the caller's.",
  },
);
