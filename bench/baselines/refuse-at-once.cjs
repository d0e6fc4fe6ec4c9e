// The floor of the hostile-bodies bench: a bare Node http server that answers GET /healthz with a
// small JSON and every other request with an empty 401 and `Connection: close` as soon as its head
// is in, reading no body. What it shows under the hostile load is what the flood of connections
// costs Node and the machine before the service adds anything. Listens on PORT (0: any) and HOST.
'use strict';
const http = require('node:http');

const server = http.createServer((req, res) => {
  if (req.method === 'GET' && req.url === '/healthz') {
    res.setHeader('Content-Type', 'application/json; charset=utf-8');
    res.end('{"status":"ok"}');
    return;
  }
  res.statusCode = 401;
  res.setHeader('Connection', 'close');
  res.end();
});

server.listen(Number(process.env.PORT ?? 0), process.env.HOST ?? '127.0.0.1', () => {
  process.stdout.write(`${JSON.stringify({ message: 'baseline listening', port: server.address().port })}\n`);
});

process.on('SIGTERM', () => {
  server.close(() => process.exit(0));
  server.closeAllConnections();
});
