import type { Express } from 'express';
import request from 'supertest';

/**
 * A Bearer token for `email` from the app's POST /api/auth/token (the password grant); throws
 * unless it is answered 200, so a test never goes on with a missing token.
 */
export async function passwordGrantToken(app: Express, email: string, password: string): Promise<string> {
  const res = await request(app)
    .post('/api/auth/token')
    .send({ grant_type: 'password', username: email, password });
  const token = (res.body as { access_token?: unknown }).access_token;
  if (res.status !== 200 || typeof token !== 'string')
    throw new Error(`POST /api/auth/token answered ${res.status}: ${JSON.stringify(res.body)}`);
  return token;
}
