import express from 'express';
import request from 'supertest';

import { repositoryDocument } from '../../../ingress/contract';
import { ResponseContract } from '../../helpers/openapi-contract';

describe('The response contract check', () => {
  /** A stand-in service that answers documented operations wrongly, on purpose. */
  const impostor = express()
    .get('/healthz', (_req, res) => {
      res.json({ status: 'sick' });
    })
    .get('/readyz', (_req, res) => {
      res.status(418).json({ status: 'teapot' });
    })
    .post('/api/import', (_req, res) => {
      res.status(401).json({ error: 'a body where the spec says none' });
    })
    .get('/test/anything', (_req, res) => {
      res.json({ whatever: true });
    });

  it('When a documented operation answers a body off its schema, then the test that received it fails', async () => {
    await expect(request(impostor).get('/healthz')).rejects.toThrow(
      /OpenAPI contract: GET \/healthz 200 application\/json does not match[\s\S]*\/status must be equal to constant/,
    );
  });

  it('When it answers a status the document does not list, or a body where none is documented, then the test fails', async () => {
    await expect(request(impostor).get('/readyz')).rejects.toThrow(
      /answered 418, which the document does not list/,
    );
    await expect(request(impostor).post('/api/import').send({})).rejects.toThrow(
      /has no body in the document/,
    );
  });

  it('When the path is not in the document, then the response is not checked', async () => {
    await request(impostor).get('/test/anything').expect(200);
  });

  it("When a read-model answer has another query's shape, then it violates that query's own schema", () => {
    const contract = new ResponseContract(repositoryDocument());
    const mappedPlayersShape = { queryType: 'GetMappedPlayers', results: [], totalCount: 0 };
    const exchange = {
      method: 'POST',
      path: '/api/readmodel',
      requestBody: { query: { queryType: 'CurrentUser' } },
      status: 200,
      contentType: 'application/json; charset=utf-8',
      body: mappedPlayersShape,
      text: JSON.stringify(mappedPlayersShape),
    };
    const verdict = contract.check(exchange);
    expect(verdict).toMatchObject({ kind: 'violates' });
    expect(JSON.stringify(verdict)).toContain('x-query-types[CurrentUser]');
    // The same listing, named for the query that was asked, is that query's answer.
    const importersShape = { ...mappedPlayersShape, queryType: 'AvailableImporters' };
    expect(
      contract.check({
        ...exchange,
        requestBody: { query: { queryType: 'AvailableImporters' } },
        body: importersShape,
        text: JSON.stringify(importersShape),
      }),
    ).toEqual({ kind: 'conforms' });
  });
});
