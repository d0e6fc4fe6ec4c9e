// The floor of a large JSON POST: a bare Express 5 app whose one route reads the body with
// express.json() (one parse, BODY_LIMIT bytes at most, 16mb by default, as IMPORT_BODY_LIMIT) and
// answers a small JSON. bare-express.cjs with a body limit an import fits in and an answer that does
// not echo the body. Plain JavaScript; listens on PORT (0: any) and HOST, and prints
// {"message":"baseline listening","port":N} once it does.
'use strict';
const express = require('express');

const app = express();
app.disable('x-powered-by');
app.set('etag', false);
app.use(express.json({ limit: process.env.BODY_LIMIT ?? '16mb' }));

app.post('/api/import', (req, res) => {
  res.json({ requestId: req.body.requestId ?? null, status: 'Pending' });
});

const server = app.listen(Number(process.env.PORT ?? 0), process.env.HOST ?? '127.0.0.1', (error) => {
  if (error) throw error;
  process.stdout.write(`${JSON.stringify({ message: 'baseline listening', port: server.address().port })}\n`);
});

process.on('SIGTERM', () => {
  server.close(() => process.exit(0));
  server.closeAllConnections();
});
