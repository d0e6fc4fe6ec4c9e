/**
 * docs/integrators.md writes a read-model query as `Name {its query's members} + {the body's members
 * beside query}`. Each such line is held to the query's request schema in docs/openapi.json
 * (`<Name>Query`), so that a reader never puts `take` inside `query` because the guide did.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';

import { INTEGRATORS_GUIDE } from '../helpers/integrators-guide';

const ROOT = path.resolve(__dirname, '../..');

interface ObjectSchema {
  readonly properties?: Record<string, ObjectSchema>;
}
const schemas = (
  JSON.parse(readFileSync(path.join(ROOT, 'docs', 'openapi.json'), 'utf8')) as {
    components: { schemas: Record<string, ObjectSchema> };
  }
).components.schemas;

/** A `{a, b?, c | d}` list's member names. */
const members = (list: string | undefined): string[] =>
  (list ?? '')
    .split(/[,|]/)
    .map((member) => member.trim().replace(/\?$/, ''))
    .filter((member) => member !== '');

/** Every `Name {...}` or `Name {...} + {...}` of the guide whose Name is a read-model query. */
function queryLines(): { line: string; name: string; query: string[]; envelope: string[] | undefined }[] {
  const unwrapped = INTEGRATORS_GUIDE.replace(/\s*\n\s*/g, ' ');
  return [...unwrapped.matchAll(/`(\w+) \{([^}`]*)\}(?: \+ \{([^}`]*)\})?`/g)]
    .filter(([, name]) => schemas[`${name}Query`] !== undefined)
    .map(([line, name = '', query, envelope]) => ({
      line,
      name,
      query: members(query),
      envelope: envelope === undefined ? undefined : members(envelope),
    }));
}

describe("The integrators guide's query lines", () => {
  it('When the guide writes a query with its members, then the query members are in query and the rest beside it, as the OpenAPI document has them', () => {
    const lines = queryLines();
    expect(lines.map((line) => line.name)).toEqual(
      expect.arrayContaining(['GetUser', 'ListUsers', 'ListWebhookSubscriptions', 'GetWebhookDeliveries']),
    );
    for (const { line, name, query, envelope } of lines) {
      const schema = schemas[`${name}Query`]!;
      const inQuery = Object.keys(schema.properties?.query?.properties ?? {}).filter(
        (key) => key !== 'queryType',
      );
      const beside = Object.keys(schema.properties ?? {}).filter((key) => key !== 'query');
      expect({ line, query: query.filter((member) => !inQuery.includes(member)) }).toEqual({
        line,
        query: [],
      });
      // Every member beside query is written, after the `+`.
      expect({ line, envelope: [...(envelope ?? [])].sort() }).toEqual({
        line,
        envelope: [...beside].sort(),
      });
    }
  });
});
