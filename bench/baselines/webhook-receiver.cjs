// A webhook receiver for bench/webhooks.bench.ts, in a process of its own (as a real receiver is),
// so the bench's load generator does not slow its answers. Answers 204 to every POST and notes,
// per path, each payload's append-to-receipt time (receipt minus the payload's timestamp).
// Talks to the bench over IPC: {type: 'reset'}, {type: 'report'} -> the figures.
'use strict';
const http = require('node:http');

let latencies = new Map();
let total = 0;
let firstAt = 0;
let lastAt = 0;

const server = http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (chunk) => chunks.push(chunk));
  req.on('end', () => {
    const now = Date.now();
    const payload = JSON.parse(Buffer.concat(chunks).toString());
    const path = req.url || '/';
    if (!latencies.has(path)) latencies.set(path, []);
    latencies.get(path).push(now - Date.parse(payload.timestamp));
    total += 1;
    if (firstAt === 0) firstAt = now;
    lastAt = now;
    res.statusCode = 204;
    res.end();
  });
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => process.send({ type: 'listening', port: server.address().port }));

process.on('message', (message) => {
  if (message.type === 'reset') {
    latencies = new Map();
    total = 0;
    firstAt = 0;
    lastAt = 0;
    process.send({ type: 'reset' });
  } else if (message.type === 'report') {
    process.send({ type: 'report', latencies: [...latencies.values()].flat(), total, firstAt, lastAt });
  }
});
process.on('disconnect', () => process.exit(0));
