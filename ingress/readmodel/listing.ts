import type { QueryAnswer } from './query-definition';

/** The spec's "404 listing" (4.1 rule 2): status 404, no results, totalCount 0. */
export function notFoundListing(extra: Record<string, unknown> = {}): QueryAnswer {
  return { status: 404, body: { results: [], totalCount: 0, ...extra } };
}
