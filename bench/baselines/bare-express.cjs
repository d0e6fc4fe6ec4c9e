// The baseline every workload is compared with: a bare Express 5 app whose one route parses a small
// JSON POST with express.json() and answers JSON. Plain JavaScript, so it runs under plain node just
// as the compiled service does. It mirrors the service's two app settings (no X-Powered-By, no ETag)
// so the comparison measures only what the service adds. Listens on PORT (0: any) and HOST, and
// prints {"message":"baseline listening","port":N} once it does.
'use strict';
const express = require('express');

const app = express();
app.disable('x-powered-by');
app.set('etag', false);
app.use(express.json());

app.post('/api/readmodel', (req, res) => {
  res.json({ data: [{ echo: req.body }], totalCount: 1, skip: 0 });
});

const server = app.listen(Number(process.env.PORT ?? 0), process.env.HOST ?? '127.0.0.1', (error) => {
  if (error) throw error;
  process.stdout.write(`${JSON.stringify({ message: 'baseline listening', port: server.address().port })}\n`);
});

process.on('SIGTERM', () => {
  server.close(() => process.exit(0));
  server.closeAllConnections();
});
