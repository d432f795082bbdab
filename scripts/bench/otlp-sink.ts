// A collector stand-in for benchmarks: takes OTLP/HTTP exports on 127.0.0.1 (any path), answers 200, and on
// SIGTERM or SIGINT prints how many exports and bytes it took. `OTEL_EXPORTER_OTLP_ENDPOINT` points at it.
//   node --import tsx scripts/bench/otlp-sink.ts [--port 4318]
import http from 'node:http';
import { parseArgs } from 'node:util';

const { values } = parseArgs({ options: { port: { type: 'string', default: '4318' } } });
let exports = 0;
let bytes = 0;
const server = http.createServer((req, res) => {
  req.on('data', (chunk: Buffer) => (bytes += chunk.length));
  req.on('end', () => {
    exports += 1;
    res.writeHead(200, { 'content-type': req.headers['content-type'] ?? 'application/json' }).end();
  });
});
server.listen(Number(values.port), '127.0.0.1', () =>
  process.stdout.write(`otlp sink on http://127.0.0.1:${values.port}\n`),
);
for (const signal of ['SIGTERM', 'SIGINT'] as const)
  process.on(signal, () => {
    process.stdout.write(`otlp sink: ${exports} exports, ${bytes} bytes\n`);
    process.exit(0);
  });
