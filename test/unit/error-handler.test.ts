import express from 'express';
import { MaxRetriesPerRequestError } from 'ioredis/built/errors';
import request from 'supertest';

import { AppendOutcomeUnknownError } from '../../shared/event-store/errors';
import { errorHandler, TEMPORARILY_UNAVAILABLE_DETAIL } from '../../shared/http/error-handler';
import { createLogger } from '../../shared/logger';

const logger = createLogger({ level: 'error', processRole: 'test', silent: true });

/** An app whose one route fails with `error`, answered by the service's error handler. */
function failingWith(error: Error) {
  const app = express();
  app.post('/fails', () => {
    throw error;
  });
  app.use(errorHandler(logger));
  return app;
}

/**
 * An append whose answer Redis took with it is an outage, whatever ioredis called the loss. A use
 * case that has its own words for it (a command: "may have taken effect") answers before this
 * handler; one that has none (an inline import) reaches it, and must get the outage's 503.
 */
describe('The error handler', () => {
  it.each([
    ['the request connection gave up re-sending', new MaxRetriesPerRequestError(1)],
    ['the answer timed out', Object.assign(new Error('Command timed out'), { name: 'Error' })],
    ['no replica confirmed it', new Error('WAIT returned 0 replicas')],
  ])(
    'When an append whose outcome is unknown (%s) reaches it, then it answers the 503 problem with Retry-After, not a 500',
    async (_case, cause) => {
      const res = await request(failingWith(new AppendOutcomeUnknownError('some-team', cause))).post(
        '/fails',
      );

      expect(res.status).toBe(503);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(res.headers['retry-after']).toBe('1');
      expect(res.body).toMatchObject({
        status: 503,
        title: 'Service Unavailable',
        detail: TEMPORARILY_UNAVAILABLE_DETAIL,
      });
    },
  );

  it('When an error it does not know reaches it, then it still answers the bare 500 problem', async () => {
    const res = await request(failingWith(new TypeError('a bug'))).post('/fails');

    expect(res.status).toBe(500);
    expect(res.body).toMatchObject({
      status: 500,
      title: 'An error occurred while processing your request.',
    });
  });
});
