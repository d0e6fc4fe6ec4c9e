/**
 * README's Getting started names Swagger UI's examples as a reader finds them in its drop-down (the
 * example's summary), each followed by its key in backquotes: "Spec 4.5: link ..." (`LinkFantasyTeam`).
 * Every such pair is held to docs/openapi.json, so a renamed example fails here before a reader looks
 * for it in vain.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '../..');
const README = readFileSync(path.join(ROOT, 'README.md'), 'utf8');

interface Example {
  readonly summary?: string;
}
const document = JSON.parse(readFileSync(path.join(ROOT, 'docs', 'openapi.json'), 'utf8')) as {
  paths: Record<
    string,
    { post?: { requestBody?: { content: Record<string, { examples?: Record<string, Example> }> } } }
  >;
};

/** Every request example of the document, by key: its summary. */
const summaries = new Map<string, string>(
  Object.values(document.paths).flatMap((item) =>
    Object.entries(item.post?.requestBody?.content['application/json']?.examples ?? {}).map(
      ([key, example]): [string, string] => [key, example.summary ?? key],
    ),
  ),
);

/** "Title" (`Key`) pairs of Getting started, the title unwrapped. */
function namedExamples(): { title: string; key: string }[] {
  const start = README.indexOf('## Getting started');
  const section = README.slice(start, README.indexOf('\n## ', start + 1)).replace(/\s*\n\s*/g, ' ');
  return [...section.matchAll(/"([^"]+)" \(`(\w+)`\)/g)].map(([, title = '', key = '']) => ({ title, key }));
}

describe("README's Swagger UI steps", () => {
  it('When README names an example by its title and key, then docs/openapi.json has that example under that key, with that summary', () => {
    const named = namedExamples();
    expect(named.length).toBeGreaterThanOrEqual(4);
    for (const { title, key } of named)
      expect({ key, summary: summaries.get(key) }).toEqual({ key, summary: title });
  });

  it('When README names an example by its title alone ("Spec 4.1"), then exactly one summary starts with it', () => {
    const start = README.indexOf('## Getting started');
    const section = README.slice(start, README.indexOf('\n## ', start + 1));
    const shortNames = [...section.matchAll(/"(Spec \d+\.\d+)"/g)].map(([, name = '']) => name);
    expect(shortNames.length).toBeGreaterThan(0);
    for (const name of shortNames)
      expect([...summaries.values()].filter((summary) => summary.startsWith(`${name}:`))).toHaveLength(1);
  });
});
