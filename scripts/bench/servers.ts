// Servers for benchmarks, each in its own process: the service's web, and a bare Express handler that parses
// the same JSON body (and answers a GET of one order with a small JSON body), as the baseline.
import express from 'express';

const port = Number(process.env.PORT ?? 0);
const app = express();
app.post('/v1/orders', express.json({ limit: '1mb' }), (req, res) => {
  res.json({
    orderId: 0,
    listings: (req.body as { listings?: unknown[] } | undefined)?.listings?.length ?? 0,
  });
});
app.get('/v1/orders/:orderId', (req, res) => {
  res.json({ orderId: Number(req.params.orderId) });
});
const server = app.listen(port, '127.0.0.1', () => {
  const address = server.address();
  process.stdout.write(`bare listening ${typeof address === 'object' ? address?.port : port}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
