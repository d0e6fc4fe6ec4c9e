import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

import ts from 'typescript';

import { repositoryDocument } from '../../ingress/contract';
import { documentText } from '../../ingress/openapi/openapi-document';
import { guideWalkThrough, INTEGRATORS_GUIDE as GUIDE } from '../helpers/integrators-guide';
import { PROJECT_ROOT } from '../helpers/processes';

/**
 * What an integrator does with `GET /api/openapi.json`: generate a client with one of the most used
 * TypeScript generators (openapi-typescript and @hey-api/openapi-ts at their default settings,
 * orval with its fetch client), and send the requests of the integrators guide (docs/integrators.md)
 * with it. Each must generate without a warning and tell a ListUsers answer by its `queryType`; and every request body
 * the guide shows must compile against the types of each under `tsc --strict`; the guide's
 * typed-client walk-through must compile against the repository's client, whose generated files
 * must be current.
 */

const CLIENT_ROOT = path.join(PROJECT_ROOT, 'clients', 'typescript');

interface GuideRequest {
  readonly path: string;
  readonly json: string;
}

/** The guide's request bodies: each JSON block under a `<!-- request: POST /path -->` line. */
function guideRequests(): GuideRequest[] {
  const blocks = GUIDE.matchAll(/<!-- request: POST (\S+) -->\s*```json\n([\s\S]*?)```/g);
  return [...blocks].map(([, requestPath = '', json = '']) => ({ path: requestPath, json }));
}

/** hey-api names an operation's request type `<OperationId>Data`. */
function heyApiDataType(requestPath: string): string {
  const operationId = repositoryDocument().paths[requestPath]?.post?.operationId;
  if (!operationId) throw new Error(`docs/integrators.md: ${requestPath} is not a POST of the document`);
  return `${operationId[0]?.toUpperCase()}${operationId.slice(1)}Data`;
}

function run(args: readonly string[]): { status: number | null; output: string; stderr: string } {
  const result = spawnSync(process.execPath, args, {
    cwd: PROJECT_ROOT,
    encoding: 'utf8',
    env: { ...process.env, NO_COLOR: '1' },
  });
  return { status: result.status, output: `${result.stdout}${result.stderr}`, stderr: result.stderr };
}

/** tsc --strict's complaints about `files`, one line each. */
function compile(files: readonly string[]): string[] {
  const program = ts.createProgram(files, {
    strict: true,
    noEmit: true,
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.ESNext,
    moduleResolution: ts.ModuleResolutionKind.Bundler,
    lib: ['lib.es2023.d.ts', 'lib.dom.d.ts', 'lib.dom.iterable.d.ts'],
    types: ['node'],
    typeRoots: [path.join(PROJECT_ROOT, 'node_modules', '@types')],
    skipLibCheck: true,
  });
  return ts.getPreEmitDiagnostics(program).map((diagnostic) => {
    const where = diagnostic.file
      ? `${path.basename(diagnostic.file.fileName)}:${diagnostic.file.getLineAndCharacterOfPosition(diagnostic.start ?? 0).line + 1}`
      : '';
    return `${where} ${ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n')}`;
  });
}

const WARNING = /warn|⚠|❗|deprecat/i;

describe('Clients generated from the OpenAPI document', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'fts-generators-'));
    writeFileSync(path.join(dir, 'openapi.json'), documentText(repositoryDocument()));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('When openapi-typescript, @hey-api/openapi-ts and orval generate from the document, then none warns', () => {
    const openapiTypescript = run([
      path.join(PROJECT_ROOT, 'node_modules/openapi-typescript/bin/cli.js'),
      path.join(dir, 'openapi.json'),
      '-o',
      path.join(dir, 'openapi-typescript.ts'),
    ]);
    expect(openapiTypescript).toMatchObject({ status: 0, stderr: '' });
    expect(openapiTypescript.output).not.toMatch(WARNING);

    const heyApi = run([
      path.join(PROJECT_ROOT, 'node_modules/@hey-api/openapi-ts/bin/run.js'),
      '-i',
      path.join(dir, 'openapi.json'),
      '-o',
      path.join(dir, 'hey-api'),
    ]);
    expect(heyApi).toMatchObject({ status: 0, stderr: '' });
    expect(heyApi.output).not.toMatch(WARNING);

    // The fetch client: the default (axios) imports a package the service does not use.
    const orval = run([
      path.join(PROJECT_ROOT, 'node_modules/orval/dist/bin/orval.mjs'),
      '--input',
      path.join(dir, 'openapi.json'),
      '--output',
      path.join(dir, 'orval', 'api.ts'),
      '--client',
      'fetch',
    ]);
    expect(orval).toMatchObject({ status: 0, stderr: '' });
    expect(orval.output).not.toMatch(WARNING);
  });

  it("When a read-model answer is narrowed by its queryType, then each generator types a ListUsers answer as ListUsers's", () => {
    const source = [
      "import type { components, paths } from './openapi-typescript';",
      "import type { ListUsersResult as HeyApiListUsers, ReadModelResponses } from './hey-api/types.gen';",
      "import type { ListUsersResult as OrvalListUsers, readModelResponse200 } from './orval/api';",
      '',
      '/** Each assignable to the other (a union narrowed to nothing is `never`, which fails). */',
      'type Alike<A, B> = [A] extends [never] ? false : [A] extends [B] ? ([B] extends [A] ? true : false) : false;',
      "type ListUsersOf<Answer> = Extract<Answer, { queryType: 'ListUsers' }>;",
      '',
      "type OpenapiTypescript200 = paths['/api/readmodel']['post']['responses'][200]['content']['application/json'];",
      "export const openapiTypescript: Alike<ListUsersOf<OpenapiTypescript200>, components['schemas']['ListUsersResult']> = true;",
      'export const heyApi: Alike<ListUsersOf<ReadModelResponses[200]>, HeyApiListUsers> = true;',
      "export const orval: Alike<ListUsersOf<readModelResponse200['data']>, OrvalListUsers> = true;",
      '',
    ].join('\n');
    const file = path.join(dir, 'list-users-answer.ts');
    writeFileSync(file, source);

    expect(compile([file])).toEqual([]);
  });

  it("When the integrators guide's request bodies are typed with each generator's types, then they compile under tsc --strict", () => {
    const requests = guideRequests();
    expect(requests.map((request) => request.path)).toEqual(
      expect.arrayContaining(['/api/auth/token', '/api/import', '/api/command', '/api/readmodel']),
    );
    const dataTypes = [...new Set(requests.map((request) => heyApiDataType(request.path)))];
    const source = [
      "import type { paths } from './openapi-typescript';",
      `import type { ${dataTypes.join(', ')} } from './hey-api/types.gen';`,
      '',
      '/** The JSON request body openapi-typescript generates for a POST. */',
      "type Body<P extends keyof paths> = paths[P]['post'] extends { requestBody?: { content: { 'application/json': infer B } } } ? B : never;",
      '',
      ...requests.flatMap((request, i) => [
        `export const openapiTypescript${i}: Body<'${request.path}'> = ${request.json.trim()};`,
        `export const heyApi${i}: ${heyApiDataType(request.path)}['body'] = ${request.json.trim()};`,
      ]),
      '',
    ].join('\n');
    const file = path.join(dir, 'guide-requests.ts');
    writeFileSync(file, source);

    expect(compile([file])).toEqual([]);
  });

  it("When a query's answer type is looked up in ReadModelQueryTypes, then both generators give that query's own answer", () => {
    const pairing = repositoryDocument().components.schemas.ReadModelQueryTypes as {
      properties: Record<string, { properties: { answer: { $ref: string } } }>;
    };
    const answers = Object.entries(pairing.properties).map(([queryType, entry]) => ({
      queryType,
      answer: entry.properties.answer.$ref.split('/').pop() ?? '',
    }));
    const source = [
      "import type { components } from './openapi-typescript';",
      `import type { ReadModelQueryTypes, ${answers.map(({ answer }) => answer).join(', ')} } from './hey-api/types.gen';`,
      '',
      'type Same<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;',
      "type Paired = components['schemas']['ReadModelQueryTypes'];",
      ...answers.flatMap(({ queryType, answer }) => [
        `export const openapiTypescript${queryType}: Same<Paired['${queryType}']['answer'], components['schemas']['${answer}']> = true;`,
        `export const heyApi${queryType}: Same<ReadModelQueryTypes['${queryType}']['answer'], ${answer}> = true;`,
      ]),
      '',
    ].join('\n');
    const file = path.join(dir, 'query-answers.ts');
    writeFileSync(file, source);

    expect(answers.length).toBeGreaterThanOrEqual(10);
    expect(compile([file])).toEqual([]);
  });

  it("When the integrators guide's typed-client walk-through is compiled against clients/typescript, then tsc --strict accepts it", () => {
    const file = path.join(dir, 'guide-walk-through.ts');
    const clientEntry = path.join(CLIENT_ROOT, 'src', 'index');
    writeFileSync(
      file,
      guideWalkThrough().replace("'@fantasy-team-service/client'", JSON.stringify(clientEntry)),
    );

    expect(compile([file])).toEqual([]);
  });

  it('When the client is generated from the committed document again, then its committed files are the same', () => {
    // A child process: openapi-typescript loads ES modules that jest's CommonJS runtime cannot.
    const check = run(['--import', 'tsx', path.join(CLIENT_ROOT, 'scripts', 'generate.ts'), '--check']);
    expect(check).toMatchObject({ status: 0, output: '' });
  });
});
