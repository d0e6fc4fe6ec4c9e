// The caps-cost baseline: a bare node http server that holds every response open (as an idle
// event stream is held), and answers GET /heap with its heap in use after a GC.
const http = require('node:http');

const held = [];
http
  .createServer((req, res) => {
    if (req.url === '/heap') {
      globalThis.gc?.();
      res.end(String(process.memoryUsage().heapUsed));
      return;
    }
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write(': open\n\n');
    held.push(res);
  })
  .listen(Number(process.env.PORT), process.env.HOST, () => console.log('baseline ready'));
