// ref-read (issue 22): the least a CurrentUser read by Bearer must do on this stack, and nothing
// else. Express 5 with express.json(), the service's two app settings (no X-Powered-By, no ETag),
// and one POST route that verifies the request's HS256 JWT with jsonwebtoken against a KeyObject
// made once (the service's issuer and audience checked, as it checks them) and answers the token's
// caller as a CurrentUser-like JSON. No token cache, no account lookup, no rate limit, no request
// id, no metrics, no log: what the service does beyond this is what the bench compares.
// Plain JavaScript, so it runs under plain node as the compiled service does. Listens on PORT and
// HOST; JWT_SECRET, JWT_ISSUER and JWT_AUDIENCE as the service reads them. Prints
// {"message":"baseline listening","port":N} once it listens.
'use strict';
const { createSecretKey } = require('node:crypto');
const express = require('express');
const jwt = require('jsonwebtoken');

const secret = createSecretKey(Buffer.from(process.env.JWT_SECRET ?? '', 'utf8'));
const verifyOptions = {
  algorithms: ['HS256'],
  issuer: process.env.JWT_ISSUER ?? 'fantasy-team-service',
  audience: process.env.JWT_AUDIENCE ?? 'fantasy-team-api',
};

/** The token's claims, or undefined for a request without a good one. */
function claimsOf(req) {
  const header = req.headers.authorization;
  if (header === undefined || !header.startsWith('Bearer ')) return undefined;
  try {
    return jwt.verify(header.slice(7), secret, verifyOptions);
  } catch {
    return undefined;
  }
}

const app = express();
app.disable('x-powered-by');
app.set('etag', false);
app.use(express.json());

app.post('/api/readmodel', (req, res) => {
  const claims = claimsOf(req);
  if (!claims) {
    res.status(401).json({ status: 401 });
    return;
  }
  res.json({
    data: [
      {
        name: claims.email,
        email: claims.email,
        roles: claims.roles,
        claims: { nameidentifier: claims.sub, role: claims.roles.join(', ') },
        authenticationType: 'Bearer',
        requestTime: new Date().toISOString(),
        effectiveRoles: claims.roles,
      },
    ].slice(req.body.skip ?? 0, (req.body.skip ?? 0) + (req.body.take ?? 10)),
    totalCount: 1,
    skip: req.body.skip ?? 0,
  });
});

const server = app.listen(Number(process.env.PORT ?? 0), process.env.HOST ?? '127.0.0.1', (error) => {
  if (error) throw error;
  process.stdout.write(`${JSON.stringify({ message: 'baseline listening', port: server.address().port })}\n`);
});

process.on('SIGTERM', () => {
  server.close(() => process.exit(0));
  server.closeAllConnections();
});
