import type { Server } from 'node:http';
import type { Config } from './config.js';
import { closeDeps, createDeps } from './container.js';
import { createApp } from './http/app.js';
import type { Logger } from './logger.js';
import { runProcess } from './process.js';

/** Starts one web process; resolves with a function that stops it cleanly. */
export async function startWeb(
  config: Config,
  logger: Logger,
): Promise<{ server: Server; stop: () => Promise<void> }> {
  const deps = createDeps(config, logger, { withOutcomes: true });
  const app = createApp(deps);
  const server = app.listen(config.PORT);
  await new Promise<void>((resolve, reject) => server.once('listening', resolve).once('error', reject));
  const address = server.address();
  logger.info({ port: typeof address === 'object' ? address?.port : config.PORT }, 'web listening');
  return {
    server,
    async stop() {
      // Stop taking requests, let those in flight finish, then close the connections.
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await closeDeps(deps);
    },
  };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  runProcess('web', (config, logger) => startWeb(config, logger));
}
