import { type OperationContract, PUBLIC } from '../../ingress/openapi/contract-kit';
import { assembleOpenApiDocument } from '../../ingress/openapi/openapi-document';

function probe(path: string, operationId: string, schemaName?: string): OperationContract {
  return {
    path,
    method: 'get',
    operation: ({ component, answers }) => ({
      operationId,
      summary: operationId,
      tags: ['Operations'],
      security: PUBLIC,
      responses: {
        '200': answers.json(
          'Fine.',
          schemaName ? component(schemaName, { type: 'object' }) : { type: 'object' },
        ),
      },
    }),
  };
}

describe('Assembling the OpenAPI document from what the features contribute', () => {
  it('When features contribute operations, then the paths are in the order given and their components sorted by name', () => {
    const document = assembleOpenApiDocument([
      probe('/zeta', 'zeta', 'Zeta'),
      probe('/alpha', 'alpha', 'Alpha'),
    ]);
    expect(Object.keys(document.paths)).toEqual(['/zeta', '/alpha']);
    const names = Object.keys(document.components.schemas);
    expect(names).toEqual([...names].sort((a, b) => a.localeCompare(b)));
    expect(document.components.schemas.Zeta).toEqual({ title: 'Zeta', type: 'object' });
    expect(names).toContain('Problem400');
  });

  it('When two features contribute the same method and path, then assembling fails and names it', () => {
    expect(() => assembleOpenApiDocument([probe('/same', 'one'), probe('/same', 'two')])).toThrow(
      'OpenAPI: two operations for GET /same',
    );
  });

  it('When two features name a component alike, then assembling fails and names it', () => {
    expect(() => assembleOpenApiDocument([probe('/a', 'a', 'Shared'), probe('/b', 'b', 'Shared')])).toThrow(
      'OpenAPI: two schemas are named Shared',
    );
  });
});
