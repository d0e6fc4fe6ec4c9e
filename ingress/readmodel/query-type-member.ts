import type { JsonSchema } from '../http/json-schema';
import type { QueryAnswer } from './query-definition';

/**
 * Every read-model answer (its 200 and the 404 listing) opens with `queryType`, the query it
 * answers: what a generated client reads to tell one answer shape from another without knowing
 * the request (the 200's `discriminator`). Queries answer without it; the route adds it here, so
 * no query can forget it, and the contract declares it with {@link withQueryTypeMember}.
 */
export function withQueryType(queryType: string, answer: QueryAnswer): QueryAnswer {
  const opening = `{"queryType":${JSON.stringify(queryType)}`;
  if ('body' in answer) {
    // The route's queryType wins over any member of that name a query's body might carry.
    const { queryType: _theQuerys, ...members } = answer.body as Record<string, unknown>;
    return { ...answer, body: { queryType, ...members } };
  }
  if ('json' in answer) return { ...answer, json: joined(opening, answer.json) };
  return { ...answer, jsonPieces: openedWith(opening, answer.jsonPieces) };
}

/** `{"queryType":"X"` then the object's text after its `{` (the text must open a member or close). */
function joined(opening: string, objectText: string): string {
  const rest = objectText.startsWith('{') ? objectText.slice(1).trimStart() : '';
  if (rest.startsWith('"')) return `${opening},${rest}`;
  if (rest.startsWith('}')) return `${opening}${rest}`;
  throw new Error('A read-model answer must open as a JSON object: `{"member"` or `{}`.');
}

/** The pieces with the first one opened by `queryType`; the first piece is still awaited first. */
async function* openedWith(opening: string, pieces: AsyncIterable<string>): AsyncIterable<string> {
  let first = true;
  for await (const piece of pieces) {
    yield first ? joined(opening, piece) : piece;
    first = false;
  }
}

/**
 * The schema of a query's answer with the `queryType` member the route adds: required, first,
 * and fixed to `queryTypes` (one for a 200 answer, which makes it the discriminator's value;
 * those of the queries that may answer it for the shared 404 listing).
 */
export function withQueryTypeMember(schema: JsonSchema, queryTypes: readonly string[]): JsonSchema {
  const [only, ...others] = queryTypes;
  const member: JsonSchema = {
    type: 'string',
    ...(only !== undefined && others.length === 0 ? { const: only } : { enum: [...queryTypes] }),
    description: 'The query this answers (`query.queryType` of the request).',
  };
  const properties = (schema.properties ?? {}) as Record<string, JsonSchema>;
  const required = (schema.required ?? []) as string[];
  return {
    ...schema,
    properties: { queryType: member, ...properties },
    required: ['queryType', ...required],
  };
}
